"""How long hostile files take to be refused (the issue asks: a few seconds at most).

Builds 5 MB hostile files — noise, a PNG with bad base64, a zip bomb, a JSON bomb, a huge
field, a gzip bomb posing as an adventure bundle — and times each refusal. Speed is
reported, never asserted (tests check that each is refused and writes nothing).

    .venv/bin/python benchmarks/hostile_imports.py
"""

from __future__ import annotations

import io
import json
import sys
import tempfile
import time
import zipfile
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from talekeeper.interop import bundles  # noqa: E402
from talekeeper.interop.containers import Refused  # noqa: E402
from talekeeper.interop.detect import convert  # noqa: E402
from talekeeper.service.app import Talekeeper  # noqa: E402
from tests.test_interop_cards import make_png, v2_card  # noqa: E402

MB = 1024 * 1024


def zip_bomb() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("card.json", json.dumps(v2_card()))
        archive.writestr("assets/bomb.bin", b"\x00" * (1000 * MB))
    return buffer.getvalue()


def gzip_bomb() -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"0" * MB
    return b"".join(compressor.compress(block) for _ in range(5000)) + compressor.flush()


def main() -> int:
    files = {
        "5 MB of noise": bytes((i * 7919) % 251 for i in range(5 * MB)),
        "PNG with 5 MB of bad base64": make_png([("chara", "!" * (5 * MB))]),
        "zip bomb (1 GB inside)": zip_bomb(),
        "JSON bomb (2.5 M brackets)": b"[" * (5 * MB // 2) + b"]" * (5 * MB // 2),
        "card with a 5 MB field": json.dumps(v2_card(description="x" * (5 * MB))).encode(),
    }
    print(f"{'file':<32} {'size MB':>8} {'refused in s':>13}")
    for name, raw in files.items():
        started = time.perf_counter()
        try:
            convert(raw, name)
            outcome = "IMPORTED?!"
        except Refused:
            outcome = f"{time.perf_counter() - started:.2f}"
        print(f"{name:<32} {len(raw) / MB:>8.2f} {outcome:>13}")
    with tempfile.TemporaryDirectory() as folder:
        tk = Talekeeper(Path(folder))
        raw = gzip_bomb()
        started = time.perf_counter()
        try:
            bundles.import_file(tk, lambda: io.BytesIO(raw), len(raw))
            outcome = "IMPORTED?!"
        except bundles.BundleInvalid:
            outcome = f"{time.perf_counter() - started:.2f}"
        print(f"{'bundle gzip bomb (5 GB inside)':<32} {len(raw) / MB:>8.2f} {outcome:>13}")
        tk.db.dispose()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
