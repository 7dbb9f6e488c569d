"""Entry point of the embedded model's child process: llama-cpp-python's own server.

Run by `embedded_server` as `python -P <this file> --model … --port …` (a file path, so
the talekeeper package is not imported into the child; `-P` so this folder, whose
`openai.py` would shadow the real package, is not put on sys.path). It adds one thing
to `python -m llama_cpp.server`: it exits when talekeeper does, even if talekeeper was
killed without a chance to clean up, by watching its stdin pipe for end-of-file.
"""

import os
import runpy
import sys
import threading


def _exit_when_parent_goes() -> None:
    sys.stdin.buffer.read()  # returns only at EOF: the parent closed the pipe or died
    os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=_exit_when_parent_goes, daemon=True).start()
    sys.argv = ["llama_cpp.server", *sys.argv[1:]]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
