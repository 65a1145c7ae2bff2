"""Credential files: random, private, outside checkouts, never shown."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from mailslot.access.credentials import (
    Credential,
    default_path,
    hash_secret,
    new_secret,
    read_credential,
    secret_matches,
    write_credential,
)
from mailslot.core.errors import InvalidInput


def test_secret_has_256_bits_and_is_fresh() -> None:
    secrets = {new_secret() for _ in range(50)}
    assert len(secrets) == 50
    assert all(len(s) >= 43 for s in secrets)  # 32 bytes, base64url


def test_hash_matches_only_its_secret() -> None:
    secret = new_secret()
    stored = hash_secret(secret)
    assert secret not in stored and stored.startswith("sha256:")
    assert secret_matches(stored, secret)
    assert not secret_matches(stored, secret + "x")
    assert not secret_matches("garbage", secret)


def test_default_path_follows_xdg(tmp_path: Path) -> None:
    assert default_path("claude", {"XDG_CONFIG_HOME": str(tmp_path)}) == str(
        tmp_path / "mailslot" / "credentials" / "claude.json")
    assert default_path("claude", {}).endswith(".config/mailslot/credentials/claude.json")


def test_written_file_is_private_and_round_trips(tmp_path: Path) -> None:
    cred = Credential("reviewer", new_secret(), "/mailbox", 3, parent_generation=2)
    path = Path(write_credential(cred, str(tmp_path / "creds" / "reviewer.json")))
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    data = json.loads(path.read_text())
    assert data == {"agent": "reviewer", "secret": cred.secret, "store": "/mailbox",
                    "generation": 3, "parent_generation": 2}
    again = read_credential(str(path))
    assert (again.agent, again.secret, again.store, again.generation,
            again.parent_generation) == ("reviewer", cred.secret, "/mailbox", 3, 2)
    assert cred.secret not in repr(again)


def test_refused_inside_a_git_worktree(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    cred = Credential("claude", new_secret(), "/mailbox", 1)
    with pytest.raises(InvalidInput, match="inside the git checkout"):
        write_credential(cred, str(repo / "sub" / "claude.json"))
    assert not (repo / "sub").exists()


def test_a_file_others_can_read_is_refused_without_quoting_it(tmp_path: Path) -> None:
    cred = Credential("claude", new_secret(), "/mailbox", 1)
    path = write_credential(cred, str(tmp_path / "c.json"))
    os.chmod(path, 0o644)
    with pytest.raises(InvalidInput, match="open to other users") as caught:
        read_credential(path)
    assert cred.secret not in str(caught.value)


@pytest.mark.parametrize("content", [b"", b"{", b'{"agent": "claude"}', b"[1]",
                                     b'{"agent": "claude", "secret": 1, "store": "/m", '
                                     b'"generation": 1}'])
def test_a_malformed_file_is_refused_without_quoting_it(tmp_path: Path, content: bytes
                                                        ) -> None:
    path = tmp_path / "c.json"
    path.write_bytes(content)
    path.chmod(0o600)
    with pytest.raises(InvalidInput, match="not a mailslot credential file") as caught:
        read_credential(str(path))
    assert "secret" not in str(caught.value)


def test_a_link_is_not_followed(tmp_path: Path) -> None:
    cred = Credential("claude", new_secret(), "/mailbox", 1)
    real = write_credential(cred, str(tmp_path / "real.json"))
    (tmp_path / "link.json").symlink_to(real)
    with pytest.raises(InvalidInput, match="cannot read"):
        read_credential(str(tmp_path / "link.json"))
