"""API keys at rest: encrypted with Fernet, the key kept apart from the database.

A key a player pastes (OpenRouter, OpenAI…) is a credential that spends their money; a
copy of the database (a backup, a bug report) must not hand it out. So the database holds
only a Fernet token (AES-128-CBC + HMAC-SHA256, from `cryptography`), and the key that opens
it lives in a file of its own in the data folder (`secret.key`, created readable by its
owner only), or in `$TALEKEEPER_SECRET_KEY` where several app processes on several
machines share one PostgreSQL database. Keys are written and replaced, never read back by
any page or API: `reveal` is called only to put the key in a request's header.
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

from talekeeper.errors import Invalid

SECRET_KEY_ENV = "TALEKEEPER_SECRET_KEY"
KEY_FILE = "secret.key"


class SecretUnreadable(Invalid):
    """A stored key could not be decrypted (the key file was replaced or lost)."""

    def __init__(self) -> None:
        super().__init__(
            "A stored API key can no longer be read: the data folder's secret.key (or "
            f"${SECRET_KEY_ENV}) is not the one it was saved with. Enter the key again."
        )


class KeyBox:
    """Encrypts and decrypts API keys with this installation's secret."""

    def __init__(self, data_dir: Path) -> None:
        self._path = Path(data_dir) / KEY_FILE
        self._fernet: Fernet | None = None

    def _cipher(self) -> Fernet:
        if self._fernet is None:
            self._fernet = Fernet(self._secret())
        return self._fernet

    def _secret(self) -> bytes:
        given = os.environ.get(SECRET_KEY_ENV, "").strip()
        if given:
            return given.encode()
        try:
            return self._path.read_bytes().strip()
        except FileNotFoundError:
            pass
        self._path.parent.mkdir(parents=True, exist_ok=True)
        secret = Fernet.generate_key()
        try:  # created with its final permissions: never readable by others, even briefly
            fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it first: use theirs
            return self._path.read_bytes().strip()
        with os.fdopen(fd, "wb") as handle:
            handle.write(secret)
        return secret

    def seal(self, plain: str) -> str:
        """The key as stored: a Fernet token (text)."""
        return self._cipher().encrypt(plain.encode()).decode("ascii")

    def reveal(self, token: str) -> str:
        """The key itself, for a request's Authorization header only."""
        try:
            return self._cipher().decrypt(token.encode("ascii")).decode()
        except (InvalidToken, ValueError) as exc:
            raise SecretUnreadable() from exc
