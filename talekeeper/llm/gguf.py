"""Read a GGUF file's header without loading the model.

The embedded model must refuse a wrong file with a clear message before it starts a
child process, and needs to know whether the model carries a chat template (instruct
models do; base models such as Gemma 3 270M do not, and must be prompted in completion
mode). Both are in the header; reading it takes milliseconds and no llama.cpp.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, BinaryIO

from talekeeper.llm.errors import EmbeddedModelError

MAGIC = b"GGUF"
# GGUF value types: fixed-size scalars by struct format; 8 = string, 9 = array.
_SCALARS = {
    0: "B",
    1: "b",
    2: "H",
    3: "h",
    4: "I",
    5: "i",
    6: "f",
    7: "?",
    10: "Q",
    11: "q",
    12: "d",
}
_STRING, _ARRAY = 8, 9


def _read(f: BinaryIO, fmt: str) -> Any:
    size = struct.calcsize("<" + fmt)
    data = f.read(size)
    if len(data) != size:
        raise EOFError("truncated GGUF header")
    return struct.unpack("<" + fmt, data)[0]


def _string(f: BinaryIO) -> str:
    length = _read(f, "Q")
    data = f.read(length)
    if len(data) != length:
        raise EOFError("truncated GGUF string")
    return data.decode("utf-8", errors="replace")


def _value(f: BinaryIO, kind: int) -> Any:
    if kind in _SCALARS:
        return _read(f, _SCALARS[kind])
    if kind == _STRING:
        return _string(f)
    if kind == _ARRAY:
        item_kind, count = _read(f, "I"), _read(f, "Q")
        if item_kind in _SCALARS:  # skip without decoding
            f.seek(struct.calcsize("<" + _SCALARS[item_kind]) * count, 1)
        else:
            for _ in range(count):
                _value(f, item_kind)
        return f"<array of {count}>"
    raise ValueError(f"unknown GGUF value type {kind}")


def read_metadata(path: str | Path) -> dict[str, Any]:
    """The header's key/values (arrays summarised). Raises `EmbeddedModelError` if not GGUF."""
    path = Path(path)
    if not path.is_file():
        raise EmbeddedModelError(
            f"The model file {path} does not exist. Choose an existing .gguf file in the "
            "model settings, or leave the path empty to use the model packaged with talekeeper."
        )
    try:
        with path.open("rb") as f:
            if f.read(4) != MAGIC:
                raise EmbeddedModelError(
                    f"{path} is not a GGUF model file (llama.cpp needs .gguf; convert or "
                    "download the model in GGUF format)."
                )
            version = _read(f, "I")
            if version < 2:
                raise EmbeddedModelError(f"{path} uses GGUF version {version}, which is too old.")
            _tensor_count, kv_count = _read(f, "Q"), _read(f, "Q")
            metadata: dict[str, Any] = {"gguf.version": version}
            for _ in range(kv_count):
                key = _string(f)
                metadata[key] = _value(f, _read(f, "I"))
            return metadata
    except (EOFError, ValueError, struct.error, OSError) as exc:
        raise EmbeddedModelError(f"{path} is not a readable GGUF model file ({exc}).") from exc
