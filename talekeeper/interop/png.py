"""PNG text chunks, read and written without an image library.

Character cards hide their JSON in a `tEXt` chunk (keyword `chara` or `ccv3`, value
base64 of UTF-8 JSON), before or after the image data, so a reader walks every chunk to
IEND. Every chunk's length and CRC is checked; anything malformed is refused with the
reason. Writing builds a small plain image (cards need a picture; talekeeper has none).
"""

from __future__ import annotations

import struct
import zlib

SIGNATURE = b"\x89PNG\r\n\x1a\n"
MAX_CHUNKS = 10_000
MAX_TEXT = 16 * 1024 * 1024


class PngError(ValueError):
    """The file is not a readable PNG; the message says why."""


def text_chunks(data: bytes) -> dict[str, str]:
    """Keyword → text of every tEXt (and uncompressed iTXt) chunk, the last one winning."""
    if not data.startswith(SIGNATURE):
        raise PngError("not a PNG file (its signature is missing)")
    found: dict[str, str] = {}
    offset = len(SIGNATURE)
    for _ in range(MAX_CHUNKS):
        if offset + 8 > len(data):
            raise PngError("the PNG is truncated (it ends before its IEND chunk)")
        length, kind = struct.unpack(">I4s", data[offset : offset + 8])
        end = offset + 8 + length + 4
        if length > 0x7FFFFFFF or end > len(data):
            raise PngError(
                f"the PNG is truncated or damaged (a {kind.decode('latin-1')!r} chunk runs past the end)"
            )
        body = data[offset + 8 : offset + 8 + length]
        (crc,) = struct.unpack(">I", data[end - 4 : end])
        if zlib.crc32(kind + body) != crc:
            raise PngError(
                f"the PNG is damaged (a {kind.decode('latin-1')!r} chunk fails its checksum)"
            )
        if kind == b"tEXt" and length <= MAX_TEXT:
            keyword, _, value = body.partition(b"\x00")
            found[keyword.decode("latin-1")] = value.decode("latin-1")
        elif kind == b"iTXt" and length <= MAX_TEXT:
            keyword, _, rest = body.partition(b"\x00")
            if len(rest) >= 2 and rest[0] == 0:  # uncompressed only
                _lang, _, rest = rest[2:].partition(b"\x00")
                _translated, _, value = rest.partition(b"\x00")
                found[keyword.decode("latin-1")] = value.decode("utf-8", "replace")
        elif kind == b"IEND":
            return found
        offset = end
    raise PngError("the PNG has too many chunks")


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def plain_image(
    width: int = 64, height: int = 64, rgb: tuple[int, int, int] = (58, 74, 99)
) -> bytes:
    """A solid-colour RGB PNG."""
    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        SIGNATURE
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(row * height, 9))
        + _chunk(b"IEND", b"")
    )


def with_text(png: bytes, texts: dict[str, str]) -> bytes:
    """`png` with tEXt chunks added just before IEND (latin-1 text; cards use base64)."""
    if not png.startswith(SIGNATURE) or not png.endswith(_chunk(b"IEND", b"")):
        raise PngError("not a PNG ending in IEND")
    extra = b"".join(
        _chunk(b"tEXt", key.encode("latin-1") + b"\x00" + value.encode("latin-1"))
        for key, value in texts.items()
    )
    return png[: -len(_chunk(b"IEND", b""))] + extra + _chunk(b"IEND", b"")
