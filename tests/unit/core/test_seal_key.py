"""Issue 58: one seal key per user, wherever the process was started from (docs/contract/09-workspace-files.md)."""

from __future__ import annotations

import os
import pwd
import secrets
from pathlib import Path

import pytest

from graph.core import seal
from graph.core.environment import Environment


def _private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")
    path.chmod(0o600)


def test_the_key_lives_in_the_accounts_home_whatever_home_and_xdg_say() -> None:
    account = Path(pwd.getpwuid(os.getuid()).pw_dir)
    sandboxed = Environment({"HOME": "/var/app/home", "XDG_DATA_HOME": "/var/app/data"})
    assert sandboxed.seal_key == account / ".local" / "share" / "flowbaby" / "seal.key"
    assert sandboxed.legacy_seal_key == Path("/var/app/data/flowbaby/seal.key")
    assert Environment({"FLOWBABY_SEAL_KEY": "/keys/mine"}).seal_key == Path("/keys/mine")


def test_a_seal_made_with_the_environments_old_key_still_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sandboxed client sealed with a key of its own under its XDG folder before: from that environment
    the seal still verifies; a new seal is made with the user's key; a seal under no key of the user's fails."""
    users, sandbox = tmp_path / "user.key", tmp_path / "sandbox" / "flowbaby" / "seal.key"
    _private(users, secrets.token_hex(32))
    _private(sandbox, old := secrets.token_hex(32))
    monkeypatch.setenv("FLOWBABY_SEAL_KEY", str(users))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "sandbox"))
    folder, stored = tmp_path / "ws", tmp_path / "ws" / "api_token"
    _private(stored, "token")
    (tmp_path / "ws" / "api_token.seal").write_text(seal.seal_of("t", folder, b"token", old.encode()) + "\n")
    assert seal.is_sealed(stored, "t", folder, b"token")
    seal.write_seal(stored, "t", folder, b"token")
    assert seal.seal_path(stored).read_text().strip() == seal.seal_of(
        "t", folder, b"token", users.read_text().strip().encode()
    )
    (tmp_path / "ws" / "api_token.seal").write_text(seal.seal_of("t", folder, b"token", b"x" * 64) + "\n")
    assert not seal.is_sealed(stored, "t", folder, b"token")
    monkeypatch.delenv("XDG_DATA_HOME")  # another environment: the sandbox's key is not seen
    (tmp_path / "ws" / "api_token.seal").write_text(seal.seal_of("t", folder, b"token", old.encode()) + "\n")
    assert not seal.is_sealed(stored, "t", folder, b"token")


def test_a_missing_key_takes_the_old_places_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = tmp_path / "data" / "flowbaby" / "seal.key"
    _private(old, key := secrets.token_hex(32))
    monkeypatch.setenv("FLOWBABY_SEAL_KEY", str(tmp_path / "new" / "seal.key"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    made = seal.seal_of("t", tmp_path, b"x")
    assert (tmp_path / "new" / "seal.key").read_text().strip() == key
    assert made == seal.seal_of("t", tmp_path, b"x", key.encode())
    assert ((tmp_path / "new" / "seal.key").stat().st_mode & 0o777) == 0o600
