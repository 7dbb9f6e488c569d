"""Open what a player uploads: PNG cards, CHARX zips, JSON and YAML text.

Everything here is hostile until proven otherwise: sizes are capped before parsing,
zip members are read into memory (never extracted to disk) with a cap on their size and
compression ratio, names that climb out of the archive are refused, and base64 that is
not base64 is refused with that reason.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import re
import zipfile
from typing import Any

from talekeeper.errors import Invalid
from talekeeper.service import json_depth

from .png import PngError, text_chunks

MAX_FILE_BYTES = 32 * 1024 * 1024
MAX_JSON_BYTES = 8 * 1024 * 1024
MAX_ZIP_MEMBERS = 2000
MAX_ZIP_TOTAL = 256 * 1024 * 1024
MAX_ZIP_RATIO = 200


class Refused(Invalid):
    """The file cannot be imported; the message is for the player."""


_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(text: str) -> str | None:
    """The first lone surrogate in `text` (JSON's `\\udXXX` escape of half a character,
    which no UTF-8 text can hold), written as its escape; None when the text is whole."""
    found = _SURROGATE.search(text)
    return f"\\u{ord(found.group()):04x}" if found else None


def normalise_text(value: Any, what: str = "The file") -> Any:
    """CRLF and lone CR to LF, everywhere in a parsed document; Refused for a string (or
    key) holding a lone surrogate, which could be neither stored nor shown."""
    if isinstance(value, str):
        bad = lone_surrogate(value)
        if bad:
            raise Refused(
                f"{what} holds text that is not valid Unicode (the escape {bad}, half of a character); talekeeper cannot read it."
            )
        return value.replace("\r\n", "\n").replace("\r", "\n") if "\r" in value else value
    if isinstance(value, list):
        return [normalise_text(v, what) for v in value]
    if isinstance(value, dict):
        return {normalise_text(k, what): normalise_text(v, what) for k, v in value.items()}
    return value


def parse_json(raw: bytes | str, what: str = "The file") -> Any:
    if len(raw) > MAX_JSON_BYTES:
        raise Refused(
            f"{what} is too large to be a card or lorebook ({len(raw):,} bytes; at most {MAX_JSON_BYTES:,})."
        )
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise Refused(
                f"{what} is not UTF-8 text (byte {exc.start:,} cannot be decoded); talekeeper cannot read it."
            ) from None
    try:  # the same measure and words as the web's body guard (half characters: below)
        json_depth.DepthScanner(whole_characters=False).feed(raw, final=True)
    except json_depth.TooDeep as exc:
        raise Refused(str(exc).replace(" Nothing was changed.", "")) from None
    try:
        return normalise_text(json_depth.loads(raw), what)
    except json.JSONDecodeError as exc:
        raise Refused(
            f"{what} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); it may be truncated."
        ) from None


def card_from_png(data: bytes) -> tuple[Any, str]:
    """The card JSON inside a PNG and which chunk it came from (`ccv3` preferred)."""
    try:
        chunks = text_chunks(data)
    except PngError as exc:
        raise Refused(f"This PNG cannot be read: {exc}.") from None
    for keyword in ("ccv3", "chara"):
        if keyword in chunks:
            try:
                decoded = base64.b64decode(chunks[keyword].strip(), validate=True)
            except (binascii.Error, ValueError):
                raise Refused(
                    f"The card inside this PNG (its '{keyword}' chunk) is not valid base64."
                ) from None
            return parse_json(decoded, f"The card inside this PNG ('{keyword}' chunk)"), keyword
    raise Refused(
        "This PNG holds no character card (no 'chara' or 'ccv3' text chunk): it is just an image."
    )


def _safe_name(name: str) -> bool:
    parts = name.replace("\\", "/").split("/")
    return (
        not name.startswith(("/", "\\")) and ".." not in parts and not re.match(r"^[A-Za-z]:", name)
    )


def card_from_charx(data: bytes) -> tuple[Any, list[str]]:
    """`card.json` from a CHARX zip, and the names of the other members (not used)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise Refused(f"This CHARX (zip) file is damaged: {exc}.") from None
    if len(members) > MAX_ZIP_MEMBERS:
        raise Refused(f"This CHARX holds {len(members):,} files; at most {MAX_ZIP_MEMBERS:,}.")
    total = 0
    for member in members:
        if not _safe_name(member.filename):
            raise Refused(
                f"This CHARX has a file named {member.filename[:80]!r} that points outside the archive; refused."
            )
        total += member.file_size
        if (
            total > MAX_ZIP_TOTAL
            or member.file_size > MAX_ZIP_RATIO * max(member.compress_size, 1) + 1024 * 1024
        ):
            raise Refused("This CHARX unpacks to far more than it holds (a zip bomb?); refused.")
    card = next((m for m in members if m.filename == "card.json"), None)
    if card is None:
        raise Refused("This zip is not a CHARX: it has no card.json at its top level.")
    if card.file_size > MAX_JSON_BYTES:
        raise Refused("The card.json in this CHARX is too large.")
    try:
        with archive.open(card) as stream:
            raw = stream.read(MAX_JSON_BYTES + 1)
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as exc:
        raise Refused(f"The card.json in this CHARX cannot be read: {exc}.") from None
    if len(raw) > MAX_JSON_BYTES:
        raise Refused(
            "The card.json in this CHARX is larger than it claims (a zip bomb?); refused."
        )
    others = [m.filename for m in members if m.filename != "card.json" and not m.is_dir()]
    return parse_json(raw, "The card.json in this CHARX"), others


_YAML_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_ -]*):(?:\s+(.*))?$")


def parse_simple_yaml(text: str) -> dict[str, str] | None:
    """Top-level `key: value` and `key: |` / `|-` block scalars (text-generation-webui's
    character files); None when the text is not that simple shape."""
    result: dict[str, str] = {}
    lines = text.replace("\r\n", "\n").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip() or line.lstrip().startswith("#"):
            i += 1
            continue
        match = _YAML_KEY.match(line)
        if not match:
            return None
        key, value = match.group(1).strip(), (match.group(2) or "").strip()
        i += 1
        if value in ("|", "|-", "|+", ">", ">-"):
            block: list[str] = []
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith((" ", "\t"))):
                block.append(lines[i])
                i += 1
            indent = min((len(b) - len(b.lstrip()) for b in block if b.strip()), default=0)
            joined = "\n".join(b[indent:] for b in block)
            result[key] = joined.rstrip("\n") if value.endswith("-") else joined.rstrip("\n") + "\n"
        else:
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            result[key] = value
    return result or None
