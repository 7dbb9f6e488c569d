"""Whole-adventure export and import (the bundle format is in `talekeeper.interop`).

Export streams: the web route and the CLI write the compressed lines as they are read.
Import reads its file once, checking and writing each record; the CLI passes a path, the
web route spools the upload to a temporary file.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from sqlalchemy.exc import SQLAlchemyError

from talekeeper.errors import TalekeeperError
from talekeeper.interop import bundle_export, bundle_import
from talekeeper.interop.bundle_format import SUFFIX
from talekeeper.interop.bundle_import import BundleInvalid
from talekeeper.service.app import Talekeeper
from talekeeper.service.unit_of_work import get_adventure

__all__ = [
    "BundleInvalid",
    "ImportResult",
    "export_stream",
    "export_to",
    "filename_for",
    "import_file",
]

Progress = Callable[[int, int], None]
log = logging.getLogger(__name__)


@dataclass
class ImportResult:
    adventure_id: int
    title: str
    turns: int
    nodes: int
    notes: list[str] = field(default_factory=list)


def filename_for(title: str, adventure_id: int) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", title).strip("-").lower()[:60] or "adventure"
    return f"{slug}-{adventure_id}{SUFFIX}"


def export_stream(
    tk: Talekeeper, adventure_id: int, progress: Progress | None = None
) -> Iterator[bytes]:
    """The bundle as gzip chunks. Raises AdventureNotFound before the first chunk."""
    session_cm = tk.db.session()
    session = session_cm.__enter__()
    try:
        adventure = get_adventure(session, adventure_id)
    except BaseException:
        session_cm.__exit__(None, None, None)
        raise

    def chunks() -> Iterator[bytes]:
        try:
            yield from bundle_export.gzip_chunks(bundle_export.lines(session, adventure, progress))
        finally:
            session_cm.__exit__(None, None, None)

    return chunks()


def export_download(tk: Talekeeper, adventure_id: int) -> tuple[str, Iterator[bytes]]:
    """A file name and the chunks, for a download. Raises AdventureNotFound first."""
    chunks = export_stream(tk, adventure_id)
    with tk.db.session() as session:
        title = get_adventure(session, adventure_id).title
    return filename_for(title, adventure_id), chunks


def export_to(
    tk: Talekeeper, adventure_id: int, path: Path, progress: Progress | None = None
) -> int:
    """Write the bundle to `path` (via a temporary file, so a failure leaves no half file)."""
    partial = path.with_name(path.name + ".partial")
    size = 0
    try:
        with partial.open("wb") as out:
            for chunk in export_stream(tk, adventure_id, progress):
                out.write(chunk)
                size += len(chunk)
        partial.replace(path)
    finally:
        partial.unlink(missing_ok=True)
    return size


def import_file(
    tk: Talekeeper,
    open_stream: Callable[[], AbstractContextManager[IO[bytes]]],
    size: int,
    progress: Progress | None = None,
) -> ImportResult:
    """Check the bundle and write it as a new adventure, in one pass and one transaction.
    Raises BundleInvalid (and nothing was written).

    The check must refuse what it cannot read with BundleInvalid; anything else it raises
    (but the store's own errors, which have their answers) is a bug in talekeeper, logged
    and answered as a refusal with its reason, never a server error. Nothing was written."""
    with tk.db.session() as session:
        try:
            adventure, checked = bundle_import.load(session, open_stream, size, progress)
        except (TalekeeperError, SQLAlchemyError):
            raise
        except Exception as exc:
            log.exception("importing a bundle of %d bytes failed unexpectedly", size)
            reason = f"{type(exc).__name__}: {str(exc)[:200]}".rstrip(": ")
            raise BundleInvalid(
                "(file)",
                f"talekeeper could not read it ({reason}; talekeeper's fault, not the file's, and logged)",
            ) from None
        return ImportResult(
            adventure.id,
            adventure.title,
            adventure.turn_count,
            checked.header.counts.nodes,
            checked.notes,
        )


def import_path(tk: Talekeeper, path: Path, progress: Progress | None = None) -> ImportResult:
    return import_file(tk, lambda: path.open("rb"), path.stat().st_size, progress)
