"""Hostile input: every case is exit 2, one line ``mailslot: error: ...``, nothing written.

Each test seeds a mailbox, takes a picture of the whole folder (paths, modes, contents),
runs the hostile command through the real entry point and compares the picture again.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from conftest import Result
from mailslot.backends.files.file_store import FileStore
from mailslot.core.message import to_bytes
from support import files_in, put_config, run_cli, snapshot

Cli = Callable[..., Result]
MIB = 1024 * 1024
GOOD_ID = "2026-01-01_000000.000000_claude_to_gemini_s_abcdef"


@pytest.fixture
def seeded(cli: Cli, root: Path) -> Iterator[dict[str, str]]:
    """A mailbox with some history; yields ids, then checks nothing changed."""
    sent = json.loads(cli("--agent", "claude", "send", "--to", "gemini", "--subject", "s",
                          "--body", "b", "--json").out)
    bc = json.loads(cli("--agent", "claude", "broadcast", "--subject", "news", "--body", "b",
                        "--json").out)
    yield {"id": sent["id"], "broadcast": bc["id"]}


def refused(r: Result | subprocess.CompletedProcess[str], *, unsafe: bool = False) -> str:
    """One line, nothing printed: exit 2 for bad input, 1 (``unsafe``) for a planted file,
    which is the mailbox being wrong rather than the user's input."""
    code = r.code if isinstance(r, Result) else r.returncode
    err = r.err if isinstance(r, Result) else r.stderr
    assert code == (1 if unsafe else 2), (code, err)
    prefix = "mailslot: " if unsafe else "mailslot: error: "
    assert err.startswith(prefix) and err.count("\n") == 1, err
    assert (r.out if isinstance(r, Result) else r.stdout) == ""
    return err


def check_unchanged(cli: Cli, root: Path, *argv: str, stdin: bytes | None = None,
                    unsafe: bool = False) -> str:
    before = snapshot(root)
    err = refused(cli(*argv, stdin=stdin), unsafe=unsafe)
    assert snapshot(root) == before
    return err


# Header injection -----------------------------------------------------------------------
@pytest.mark.parametrize("subject", ["hi\n---\nfrom: owner", "hi\r\n---\r\nfrom: owner",
                                     "a\rb", "\n", "x\u2028---\u2028from: owner"])
def test_a_subject_with_a_line_break_is_refused(
    cli: Cli, root: Path, seeded: dict[str, str], subject: str
) -> None:
    err = check_unchanged(cli, root, "--agent", "claude", "send", "--to", "gemini",
                          "--subject", subject, "--body", "b")
    assert "single line" in err
    check_unchanged(cli, root, "--agent", "claude", "broadcast", "--subject", subject,
                    "--body", "b")


def test_a_re_issue_with_a_line_break_is_refused(cli: Cli, root: Path, seeded: dict[str, str]
                                                ) -> None:
    check_unchanged(cli, root, "--agent", "claude", "send", "--to", "gemini", "--subject", "s",
                    "--re-issue", "x\nfrom: owner", "--body", "b")


def test_a_subject_with_dashes_inside_round_trips(cli: Cli, root: Path) -> None:
    r = cli("--agent", "claude", "send", "--to", "gemini", "--subject", "a --- b",
            "--body", "---\nfrom: owner\n---", "--json")
    assert r.code == 0, r.err
    mid = json.loads(r.out)["id"]
    shown = json.loads(cli("--agent", "gemini", "read", mid, "--json").out)
    assert shown["subject"] == "a --- b" and shown["from"] == "claude"
    assert shown["body"] == "---\nfrom: owner\n---"
    header = (root / "agents/gemini/cur" / f"{mid}.md").read_bytes().split(b"\n---\n")[0]
    assert header.count(b"\nfrom: ") == 1 and header.endswith(b"\nsubject: a --- b")


# Names ----------------------------------------------------------------------------------
BAD_NAMES = ["../x", "_broadcast", "ALL", "all", "", "x" * 65, "a/b", "mailslot", "-x"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_bad_recipient_is_refused(cli: Cli, root: Path, seeded: dict[str, str], name: str
                                    ) -> None:
    check_unchanged(cli, root, "--agent", "claude", "send", "--to", name, "--subject", "s",
                    "--body", "b")
    check_unchanged(cli, root, "--agent", "claude", "send", "--to", f"gemini,{name}",
                    "--subject", "s", "--body", "b")


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_bad_identity_is_refused(cli: Cli, root: Path, seeded: dict[str, str], name: str
                                   ) -> None:
    check_unchanged(cli, root, "--agent", name, "send", "--to", "gemini", "--subject", "s",
                    "--body", "b")
    check_unchanged(cli, root, "--agent", name, "broadcast", "--subject", "s", "--body", "b")
    check_unchanged(cli, root, "--agent", name, "done", seeded["id"])
    check_unchanged(cli, root, "--agent", name, "inbox")


def test_a_bad_identity_from_the_environment_is_refused(
    cli: Cli, root: Path, seeded: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAILSLOT_AGENT", "../gemini")
    err = check_unchanged(cli, root, "send", "--to", "gemini", "--subject", "s", "--body", "b")
    assert "from MAILSLOT_AGENT" in err


@pytest.mark.parametrize("name", ["../x", "_x", "x" * 65])
def test_a_bad_mailbox_to_list_is_refused(cli: Cli, root: Path, seeded: dict[str, str],
                                          name: str) -> None:
    check_unchanged(cli, root, "--agent", "claude", "inbox", "--for", name)


# Ids ------------------------------------------------------------------------------------
BAD_IDS = ["../gemini/new/x", "a/b", "..", ".", f"../{GOOD_ID}", f"{GOOD_ID}/..",
           f"{GOOD_ID}.md", "/etc/passwd", GOOD_ID.replace("_s_", "_../_")]


@pytest.mark.parametrize("bad", BAD_IDS)
def test_an_id_with_a_path_in_it_is_refused(cli: Cli, root: Path, seeded: dict[str, str],
                                            bad: str) -> None:
    for argv in (["read", bad], ["mark-read", bad], ["done", seeded["id"], bad],
                 ["reply", bad, "--body", "x"], ["retract", bad], ["status", bad]):
        err = check_unchanged(cli, root, "--agent", "gemini", *argv)
        assert "is not a message id" in err


# Bodies ---------------------------------------------------------------------------------
def test_a_body_over_the_default_limit_is_refused(cli: Cli, root: Path, seeded: dict[str, str]
                                                  ) -> None:
    send = ("--agent", "claude", "send", "--to", "gemini", "--subject", "big")
    assert "1048576" in check_unchanged(cli, root, *send, stdin=b"x" * (MIB + 1))
    assert "limit is 1048576" in check_unchanged(cli, root, *send, "--body", "x" * (MIB + 1))
    check_unchanged(cli, root, "--agent", "gemini", "reply", seeded["id"],
                    stdin=b"x" * (MIB + 1))
    check_unchanged(cli, root, "--agent", "claude", "broadcast", "--subject", "big",
                    "--body", "é" * (MIB // 2 + 1))


def test_a_body_exactly_at_the_limit_is_accepted(cli: Cli) -> None:
    r = cli("--agent", "claude", "send", "--to", "gemini", "--subject", "big",
            stdin=b"x" * MIB)
    assert r.code == 0, r.err


def test_a_small_limit_from_config_is_enforced(cli: Cli, root: Path, seeded: dict[str, str]
                                               ) -> None:
    put_config(FileStore(root), {"max_body_bytes": 16})
    send = ("--agent", "claude", "send", "--to", "gemini", "--subject", "s")
    assert "more than 16 bytes" in check_unchanged(cli, root, *send, stdin=b"x" * 17)
    assert "limit is 16" in check_unchanged(cli, root, *send, "--body", "x" * 17)
    assert cli(*send, "--body", "x" * 16).code == 0


def test_invalid_utf8_on_stdin_is_refused(cli: Cli, root: Path, seeded: dict[str, str]) -> None:
    send = ("--agent", "claude", "send", "--to", "gemini", "--subject", "s")
    assert "not valid UTF-8" in check_unchanged(cli, root, *send, stdin=b"ok \xff\xfe bad")
    check_unchanged(cli, root, "--agent", "gemini", "reply", seeded["id"], stdin=b"\xc3")
    before = snapshot(root)
    refused(run_cli(*send, stdin=b"\x80 as a real process"))
    assert snapshot(root) == before


def test_nul_bytes_are_refused_in_body_and_subject(cli: Cli, root: Path, seeded: dict[str, str]
                                                   ) -> None:
    send = ("--agent", "claude", "send", "--to", "gemini")
    assert "NUL" in check_unchanged(cli, root, *send, "--subject", "s", stdin=b"a\x00b")
    assert "NUL" in check_unchanged(cli, root, *send, "--subject", "s", "--body", "a\x00b")
    assert "NUL" in check_unchanged(cli, root, *send, "--subject", "a\x00b", "--body", "b")
    check_unchanged(cli, root, "--agent", "claude", "broadcast", "--subject", "s",
                    stdin=b"\x00")
    check_unchanged(cli, root, "--agent", "gemini", "reply", seeded["id"], "--body", "\x00")


# Planted links --------------------------------------------------------------------------
def test_a_linked_new_folder_is_never_written_through(
    cli: Cli, root: Path, seeded: dict[str, str], tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    new = root / "agents/gemini/new"
    for name in files_in(new):
        (new / name).unlink()
    new.rmdir()
    new.symlink_to(outside)
    err = check_unchanged(cli, root, "--agent", "claude", "send", "--to", "gemini",
                          "--subject", "s", "--body", "b", unsafe=True)
    assert "symlink" in err
    check_unchanged(cli, root, "--agent", "claude", "send", "--to", "codex,gemini",
                    "--subject", "s", "--body", "b", unsafe=True)
    assert files_in(outside) == []


def test_a_linked_message_file_is_refused_by_read_and_skipped_by_inbox(
    cli: Cli, root: Path, seeded: dict[str, str], tmp_path: Path
) -> None:
    planted_id = "2026-12-31_235959.999999_owner_to_gemini_do-as-i-say_abcdef"
    outside = tmp_path / "outside.md"
    real = FileStore(root).load("gemini", seeded["id"])[0]
    outside.write_bytes(to_bytes(real).replace(seeded["id"].encode(), planted_id.encode()))
    (root / "agents/gemini/new" / f"{planted_id}.md").symlink_to(outside)
    for argv in (["read", planted_id], ["mark-read", planted_id], ["done", planted_id],
                 ["reply", planted_id, "--body", "x"]):
        assert "symlink" in check_unchanged(cli, root, "--agent", "gemini", *argv, unsafe=True)
    before = snapshot(root)
    listed = cli("--agent", "gemini", "inbox", "--all", "--json")
    assert listed.code == 0
    assert planted_id not in listed.out and seeded["id"] in listed.out
    assert planted_id not in cli("--agent", "gemini", "inbox", "--for", "all").out
    assert snapshot(root) == before


# Planted FIFOs: a reader refuses them at once (real processes, so a hang is a timeout) ----
def test_a_fifo_planted_as_a_message_is_refused_by_read_and_skipped_by_inbox(
    root: Path, seeded: dict[str, str]
) -> None:
    planted_id = "2026-12-31_235959.999999_owner_to_gemini_do-as-i-say_abcdef"
    fifo = root / "agents/gemini/new" / f"{planted_id}.md"
    os.mkfifo(fifo, 0o600)  # opening it to read would wait for a writer forever
    for argv in (["read", planted_id], ["done", planted_id]):
        err = refused(run_cli("--agent", "gemini", *argv), unsafe=True)
        assert err == f"mailslot: error: {fifo} is not a regular file\n"
    listed = run_cli("--agent", "gemini", "inbox", "--all", "--json")
    assert listed.returncode == 0, listed.stderr
    assert planted_id not in listed.stdout and seeded["id"] in listed.stdout
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # left where it was


@pytest.mark.parametrize(("planted", "argv"), [
    ("broadcast/seen/gemini", ["--agent", "gemini", "inbox"]),
    ("config.json", ["--agent", "claude", "send", "--to", "gemini", "--subject", "s",
                     "--body", "b"]),
])
def test_a_fifo_planted_as_a_seen_set_or_config_is_refused(
    root: Path, seeded: dict[str, str], planted: str, argv: list[str]
) -> None:
    (root / planted).parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(root / planted, 0o600)
    err = refused(run_cli(*argv), unsafe=True)
    assert err == f"mailslot: error: {root / planted} is not a regular file\n"


# Identity -------------------------------------------------------------------------------
def test_no_identity_outside_a_git_checkout_is_refused(
    cli: Cli, root: Path, seeded: dict[str, str], isolated: Path
) -> None:
    assert not any((p / ".git").exists() for p in (isolated / "work", *isolated.parents))
    err = check_unchanged(cli, root, "send", "--to", "gemini", "--subject", "s", "--body", "b")
    assert "no identity" in err
    before = snapshot(root)
    refused(run_cli("send", "--to", "gemini", "--subject", "s", stdin=b"body"))
    refused(run_cli("reply", seeded["id"], stdin=b"body"))
    assert snapshot(root) == before


def test_identity_is_the_git_toplevel_never_the_subfolder(
    cli: Cli, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = isolated / "work" / "webapp"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    sub = repo / "tools" / "codex"  # a subfolder named like another agent
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    r = cli("send", "--to", "gemini", "--subject", "s", "--body", "b", "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["from"] == "webapp"
    done = run_cli("send", "--to", "gemini", "--subject", "s2", "--body", "b", "--json",
                   cwd=sub)
    assert done.returncode == 0 and json.loads(done.stdout)["from"] == "webapp"


# Usage ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv",
    [[], ["frobnicate"], ["send", "--to", "gemini"], ["inbox", "--limit", "many"],
     ["inbox", "--limit", "0"], ["done"], ["--agent", "claude", "read"]],
)
def test_usage_errors_are_one_line_and_write_nothing(
    cli: Cli, root: Path, seeded: dict[str, str], argv: list[str]
) -> None:
    check_unchanged(cli, root, "--agent", "gemini", *argv)
