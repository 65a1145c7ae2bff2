"""Encrypted backups (age format, through pyrage): round trips with a recipient key and a
passphrase, a wrong key and a changed bundle refused with nothing written, and the
``age`` reference tool reading what mailslot wrote and the other way round."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyrage
import pytest

from mailslot import Mailbox

Box = Callable[[str | None], Mailbox]
AGE = shutil.which("age")


def keypair(folder: Path, name: str = "key") -> tuple[Path, str]:
    identity = pyrage.x25519.Identity.generate()
    path = folder / f"{name}.txt"
    path.write_text(f"# created: for a test\n# public key: {identity.to_public()}\n"
                    f"{identity}\n")
    path.chmod(0o600)
    return path, str(identity.to_public())


def mail(box: Box) -> str:
    message = box("claude").send(["gemini"], "Keys", "secret plans")
    box("sarah").broadcast("Freeze", "no deploys")
    return message.id


def test_a_bundle_for_a_recipient_restores_only_with_its_identity(
        cli: Callable[..., Any], box: Box, tmp_path: Path) -> None:
    message_id = mail(box)
    key, recipient = keypair(tmp_path)
    other, _ = keypair(tmp_path, "other")
    bundle = tmp_path / "mail.tar.gz.age"
    made = cli("backup", str(bundle), "--encrypt", "--recipient", recipient)
    assert made.code == 0, made.err
    assert stat.S_IMODE(bundle.stat().st_mode) == 0o600
    data = bundle.read_bytes()
    assert data.startswith(b"age-encryption.org/v1") and b"secret plans" not in data
    target = tmp_path / "restored"
    plain = cli("restore", str(bundle), "--into", str(target))
    assert plain.code == 2 and "--identity" in plain.err and not target.exists()
    wrong = cli("restore", str(bundle), "--into", str(target), "--identity", str(other))
    assert wrong.code == 1 and "cannot decrypt" in wrong.err and not target.exists()
    done = cli("restore", str(bundle), "--into", str(target), "--identity", str(key))
    assert done.code == 0, done.err
    assert (target / "agents" / "gemini" / "new" / f"{message_id}.md").is_file()
    assert str(key) not in "".join(p.read_text(errors="replace")
                                   for p in target.rglob("*") if p.is_file())


def test_a_changed_bundle_is_refused_and_nothing_is_written(
        cli: Callable[..., Any], box: Box, tmp_path: Path) -> None:
    mail(box)
    key, recipient = keypair(tmp_path)
    bundle = tmp_path / "mail.tar.gz.age"
    assert cli("backup", str(bundle), "--recipient", recipient).code == 0
    data = bytearray(bundle.read_bytes())
    data[-40] ^= 1  # one bit in the last chunk
    bundle.write_bytes(bytes(data))
    target = tmp_path / "restored"
    refused = cli("restore", str(bundle), "--into", str(target), "--identity", str(key))
    assert refused.code == 1 and "refused" in refused.err and not target.exists()


def test_a_passphrase_bundle_round_trips(cli: Callable[..., Any], box: Box, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    message_id = mail(box)
    bundle = tmp_path / "mail.tar.gz.age"
    monkeypatch.setenv("MAILSLOT_PASSPHRASE", "correct horse battery staple")
    assert cli("backup", str(bundle), "--encrypt", "--passphrase").code == 0
    target = tmp_path / "restored"
    monkeypatch.setenv("MAILSLOT_PASSPHRASE", "wrong horse")
    wrong = cli("restore", str(bundle), "--into", str(target), "--passphrase")
    assert wrong.code == 1 and "passphrase" in wrong.err and not target.exists()
    monkeypatch.setenv("MAILSLOT_PASSPHRASE", "correct horse battery staple")
    assert cli("restore", str(bundle), "--into", str(target), "--passphrase").code == 0
    assert (target / "agents" / "gemini" / "new" / f"{message_id}.md").is_file()


@pytest.mark.parametrize("argv", [["backup", "BUNDLE", "--encrypt", "--passphrase"],
                                  ["restore", "BUNDLE", "--into", "OUT", "--passphrase"]])
def test_without_a_terminal_the_passphrase_prompt_is_one_line(
        argv: list[str], cli: Callable[..., Any], box: Box, tmp_path: Path) -> None:
    mail(box)
    bundle = tmp_path / "mail.tar.gz.age"
    if argv[0] == "restore":
        _, recipient = keypair(tmp_path)
        assert cli("backup", str(bundle), "--recipient", recipient).code == 0
    words = [{"BUNDLE": str(bundle), "OUT": str(tmp_path / "out")}.get(w, w) for w in argv]
    # a session of its own: no controlling terminal for getpass to fall back from
    env = {k: v for k, v in os.environ.items() if k != "MAILSLOT_PASSPHRASE"}
    ran = subprocess.run([sys.executable, "-m", "mailslot", *words], capture_output=True,
                         text=True, stdin=subprocess.DEVNULL, start_new_session=True,
                         env=env, timeout=120, check=False)
    assert (ran.returncode, ran.stdout) == (2, "")
    assert ran.stderr == ("mailslot: error: no terminal to ask for the passphrase: set "
                          "MAILSLOT_PASSPHRASE\n")
    assert not (tmp_path / "out").exists()


def test_encryption_options_are_checked(cli: Callable[..., Any], box: Box,
                                        tmp_path: Path) -> None:
    mail(box)
    bundle = tmp_path / "x.age"
    alone = cli("backup", str(bundle), "--encrypt")
    assert alone.code == 2 and "--recipient" in alone.err and not bundle.exists()
    bad = cli("backup", str(bundle), "--recipient", "age1nonsense")
    assert bad.code == 2 and "not an age recipient" in bad.err and not bundle.exists()


def test_without_pyrage_a_clear_line(cli: Callable[..., Any], box: Box, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    mail(box)
    monkeypatch.setitem(sys.modules, "pyrage", None)  # as if not installed
    _, recipient = keypair(tmp_path)
    result = cli("backup", str(tmp_path / "x.age"), "--recipient", recipient)
    assert result.code == 2
    assert result.err == ("mailslot: error: encryption needs pyrage: "
                          "pip install 'mailslot[encrypt]'\n")


@pytest.mark.skipif(AGE is None, reason="the age tool is not installed (apt-get install age)")
def test_the_age_tool_reads_our_bundles_and_we_read_its(
        cli: Callable[..., Any], box: Box, tmp_path: Path) -> None:
    message_id = mail(box)
    key, recipient = keypair(tmp_path)
    bundle = tmp_path / "mail.tar.gz.age"
    assert cli("backup", str(bundle), "--recipient", recipient).code == 0
    plain = tmp_path / "plain.tar.gz"
    subprocess.run([str(AGE), "-d", "-i", str(key), "-o", str(plain), str(bundle)],
                   check=True, timeout=60)
    listing = subprocess.run(["tar", "tzf", str(plain)], check=True, capture_output=True,
                             text=True, timeout=60).stdout
    assert f"agents/gemini/new/{message_id}.md" in listing.split()
    theirs = tmp_path / "theirs.tar.gz.age"
    subprocess.run([str(AGE), "-r", recipient, "-o", str(theirs), str(plain)], check=True,
                   timeout=60)
    target = tmp_path / "restored"
    done = cli("restore", str(theirs), "--into", str(target), "--identity", str(key))
    assert done.code == 0, done.err
    assert (target / "agents" / "gemini" / "new" / f"{message_id}.md").is_file()
