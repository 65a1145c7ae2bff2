"""Every CLI command through the real entry point."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Result
from mailslot.frontends.cli.command import declared
from support import fail_os

Cli = Callable[..., Result]


def send(cli: Cli, sender: str, to: str, subject: str = "hello", body: str = "hi") -> str:
    r = cli("--agent", sender, "send", "--to", to, "--subject", subject, "--body", body, "--json")
    assert r.code == 0, r.err
    return str(json.loads(r.out)["id"])


def test_send_inbox_read_reply_round_trip(cli: Cli) -> None:
    mid = send(cli, "claude", "gemini", "Initial handshake", "Hello there")
    listed = json.loads(cli("--agent", "gemini", "inbox", "--json").out)
    assert [m["id"] for m in listed] == [mid]
    assert listed[0]["state"] == "unread" and "body" not in listed[0]

    shown = cli("--agent", "gemini", "read", mid)
    assert shown.code == 0 and "Hello there" in shown.out and "state:    read" in shown.out

    r = cli("--agent", "gemini", "reply", mid, "--body", "Thanks", "--json")
    reply = json.loads(r.out)
    assert reply["to"] == ["claude"] and reply["in_reply_to"] == mid and reply["thread"] == mid
    assert reply["subject"] == "Re: Initial handshake"

    status = json.loads(cli("status", mid, "--json").out)
    assert status["recipients"][0]["state"] == "done"
    assert status["replies"] == [reply["id"]]


def test_reply_reads_body_from_stdin(cli: Cli) -> None:
    mid = send(cli, "claude", "gemini")
    r = cli("--agent", "gemini", "reply", mid, "--json", stdin="from stdin\n")
    assert r.code == 0
    assert json.loads(r.out)["body"] == "from stdin\n"


def test_mark_read_and_done(cli: Cli) -> None:
    a, b = send(cli, "claude", "gemini", "one"), send(cli, "claude", "gemini", "two")
    assert cli("--agent", "gemini", "mark-read", a).code == 0
    listed = json.loads(cli("--agent", "gemini", "inbox", "--json").out)
    states = {m["id"]: m["state"] for m in listed}
    assert states == {a: "read", b: "unread"}
    assert cli("--agent", "gemini", "done", a, b).code == 0
    assert json.loads(cli("--agent", "gemini", "inbox", "--json").out) == []
    everything = json.loads(cli("--agent", "gemini", "inbox", "--all", "--json").out)
    assert {m["state"] for m in everything} == {"done"}


def test_done_unknown_id_exits_1(cli: Cli) -> None:
    assert cli("init").code == 0
    r = cli("--agent", "gemini", "done", "2026-01-01_000000.000000_x_to_gemini_s_abcdef")
    assert r.code == 1 and r.err.startswith("mailslot: error: no message")


def test_inbox_newest_first_and_limit(cli: Cli) -> None:
    ids = [send(cli, "claude", "gemini", f"m{i}") for i in range(5)]
    page = json.loads(cli("--agent", "gemini", "inbox", "--limit", "3", "--json").out)
    assert [m["id"] for m in page] == ids[::-1][:3]


def test_broadcast_and_retract(cli: Cli) -> None:
    r = cli("--agent", "claude", "broadcast", "--subject", "freeze", "--body", "x", "--json")
    bid = json.loads(r.out)["id"]
    assert [m["id"] for m in json.loads(cli("--agent", "gemini", "inbox", "--json").out)] == [bid]
    assert json.loads(cli("--agent", "claude", "inbox", "--json").out) == []
    assert cli("--agent", "gemini", "retract", bid).code == 1  # not the sender
    assert cli("--agent", "claude", "retract", bid).code == 0
    assert json.loads(cli("--agent", "codex", "inbox", "--json").out) == []


def test_who_lists_agents_with_unread_counts(cli: Cli, root: Path) -> None:
    send(cli, "claude", "gemini")
    send(cli, "claude", "gemini")
    agents = {a["name"]: a for a in json.loads(cli("who", "--json").out)}
    assert agents["gemini"]["unread"] == 2
    assert agents["claude"]["unread"] == 0 and "messages" in agents["claude"]["known_from"]


def test_doctor_reports_and_fixes(cli: Cli, root: Path) -> None:
    send(cli, "claude", "gemini")
    assert cli("doctor").code == 0
    (root / "agents").chmod(0o755)
    r = cli("doctor")
    assert r.code == 1 and "open to other users" in r.out
    assert cli("doctor", "--fix").code == 0
    assert cli("doctor").code == 0


# Every command's output and exit code ---------------------------------------------------
def test_send_prints_the_new_message_and_takes_several_recipients(cli: Cli) -> None:
    r = cli("--agent", "claude", "send", "--to", "gemini,codex", "--to", "sarah",
            "--subject", "Plan", "--body", "b", "--re-issue", "ISSUE-4", "--expect-reply",
            "--wake", "--json")
    data = json.loads(r.out)
    assert data["to"] == ["gemini", "codex", "sarah"] and data["from"] == "claude"
    assert data["re_issue"] == "ISSUE-4" and data["expect_reply"] is True
    assert data["delivery"] == "wake" and data["body"] == "b"
    assert set(data) >= {"id", "date", "subject", "in_reply_to", "thread"}
    text = cli("--agent", "claude", "send", "--to", "gemini", "--subject", "s", "--body", "b")
    assert text.code == 0 and text.out.startswith("sent ") and text.out.endswith(" to gemini\n")


def test_global_options_go_before_or_after_the_command(cli: Cli, isolated: Path) -> None:
    other = isolated / "other-box"
    r = cli("send", "--agent", "claude", "--dir", str(other), "--to", "gemini",
            "--subject", "s", "--body", "b", "--json")
    assert r.code == 0, r.err
    mid = json.loads(r.out)["id"]
    assert (other / "agents/gemini/new" / f"{mid}.md").is_file()
    assert json.loads(cli("--dir", str(other), "--agent", "gemini", "inbox", "--json").out)
    assert cli("init").code == 0
    assert json.loads(cli("--agent", "gemini", "inbox", "--json").out) == []


def test_inbox_text_view(cli: Cli) -> None:
    assert cli("init").code == 0
    assert cli("--agent", "gemini", "inbox").out == "no messages\n"
    a = send(cli, "claude", "gemini", "first")
    send(cli, "claude", "gemini", "second")
    cli("--agent", "gemini", "mark-read", a)
    lines = cli("--agent", "gemini", "inbox").out.splitlines()
    assert lines[0].startswith("* ") and lines[0].endswith("claude: second")
    assert lines[1].startswith("· " + a.rsplit("_", 1)[1]) and lines[1].endswith("claude: first")
    assert lines[2] == "* unread   · read, not done   ✓ done"
    assert "\x1b" not in "".join(lines)  # no colour off a terminal
    cli("--agent", "claude", "broadcast", "--subject", "news", "--body", "b")
    assert "claude (broadcast): news" in cli("--agent", "gemini", "inbox").out
    assert cli("--agent", "codex", "inbox", "--for", "gemini").out.count(" claude") == 3


def test_inbox_unread_and_for_all(cli: Cli) -> None:
    a = send(cli, "claude", "gemini")
    b = send(cli, "claude", "codex")
    cli("--agent", "gemini", "mark-read", a)
    assert json.loads(cli("--agent", "gemini", "inbox", "--unread", "--json").out) == []
    everyone = json.loads(cli("inbox", "--for", "all", "--json").out)
    assert {(m["id"], m["mailbox"]) for m in everyone} == {(a, "gemini"), (b, "codex")}
    text = cli("inbox", "--for", "all").out
    assert "claude → codex: hello" in text and "claude → gemini: hello" in text


def test_no_command_shows_the_help(cli: Cli) -> None:
    r = cli()
    assert r.code == 2 and "usage: mailslot" in r.out and "send" in r.out


def test_read_shows_everything_and_peek_leaves_it_unread(cli: Cli, root: Path) -> None:
    mid = send(cli, "claude", "gemini", "Subject line", "Body\nsecond line")
    peek = cli("--agent", "gemini", "read", mid, "--peek")
    assert "state:    unread" in peek.out
    assert f"file:     {root / 'agents/gemini/new' / mid}.md" in peek.out
    shown = cli("--agent", "gemini", "read", mid)
    assert shown.out.endswith("\n\nBody\nsecond line\n") and "subject:  Subject line" in shown.out
    data = json.loads(cli("--agent", "gemini", "read", mid, "--json").out)
    assert data["state"] == "read" and data["body"] == "Body\nsecond line"


def test_mark_read_done_and_retract_print_one_line_each(cli: Cli) -> None:
    a, b = send(cli, "claude", "gemini"), send(cli, "claude", "gemini")
    assert cli("--agent", "gemini", "mark-read", a).out == f"read: {a}\n"
    assert cli("--agent", "gemini", "done", a, b).out == f"done: {a}\ndone: {b}\n"
    bc = json.loads(cli("--agent", "claude", "broadcast", "--subject", "s", "--body", "b",
                        "--json").out)["id"]
    assert cli("--agent", "claude", "retract", bc).out == f"retracted: {bc}\n"


def test_operations_that_fail_exit_1_with_one_line(cli: Cli) -> None:
    mid = send(cli, "claude", "gemini")
    missing = "2026-01-01_000000.000000_x_to_gemini_s_abcdef"
    for argv in (["read", missing], ["mark-read", missing], ["reply", missing, "--body", "x"],
                 ["retract", mid], ["status", missing]):
        r = cli("--agent", "gemini", *argv)
        assert r.code == 1 and r.out == "" and r.err.count("\n") == 1, argv
        assert r.err.startswith("mailslot: error: ")  # one shape for exit 1 and 2
    bc = json.loads(cli("--agent", "claude", "broadcast", "--subject", "s", "--body", "b",
                        "--json").out)["id"]
    refused = cli("--agent", "gemini", "retract", bc)
    assert refused.code == 1 and "only its sender" in refused.err


def test_status_as_an_agent_is_of_its_own_mail_only(cli: Cli) -> None:
    mid = send(cli, "claude", "gemini")
    for agent in ("claude", "gemini"):
        assert cli("--agent", agent, "status", mid).code == 0
    refused = cli("--agent", "codex", "status", mid)
    assert refused.code == 1 and refused.err == f"mailslot: error: no message {mid} for codex\n"


def test_status_and_who_need_no_identity(cli: Cli) -> None:
    mid = send(cli, "claude", "gemini")
    text = cli("status", mid)
    assert text.code == 0 and text.out.splitlines()[1] == "  from claude: hello"
    assert "gemini" in text.out and "unread" in text.out
    header, first = cli("who").out.splitlines()[:2]
    assert header.split() == ["AGENT", "UNREAD", "SERVER", "INSTANCES", "SUBAGENT", "OF", "WAKE",
                              "NOTIFY", "KNOWN", "FROM"]
    assert first.startswith("claude")
    assert cli("init", "elsewhere").code == 0
    assert cli("--dir", "elsewhere", "who").out == "no agents known yet\n"


def test_doctor_fix_removes_stale_staging_files_and_leaves_anything_else(
    cli: Cli, root: Path, tmp_path: Path
) -> None:
    send(cli, "claude", "gemini")
    tmp, outside = root / "tmp", tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("not mailslot's")
    (tmp / "crashed").write_text("half a message")
    (tmp / "crashed").chmod(0o600)
    (tmp / "folder").mkdir(mode=0o700)
    (tmp / "link").symlink_to(outside)
    os.mkfifo(tmp / "fifo", 0o600)
    old = time.time() - 37 * 3600
    for name in ("crashed", "folder", "link", "fifo"):
        os.utime(tmp / name, (old, old), follow_symlinks=False)
    r = cli("doctor", "--fix")
    assert (r.code, r.err) == (1, "")
    assert "fixed: removed 1 staging file(s) older than 36 hours" in r.out.splitlines()
    assert sorted(line for line in r.out.splitlines() if line.startswith("problem:")) == [
        f"problem: {tmp / 'fifo'} is not a staging file; mailslot leaves it alone "
        "(remove it if nothing needs it)",
        f"problem: {tmp / 'folder'} is not a staging file; mailslot leaves it alone "
        "(remove it if nothing needs it)",
        f"problem: {tmp / 'link'} is a symlink; mailslot never follows it (remove it)",
    ]
    assert sorted(os.listdir(tmp)) == ["fifo", "folder", "link"]
    assert os.listdir(outside) == ["keep"]


def test_doctor_reports_a_linked_staging_folder_and_touches_nothing_behind_it(
    cli: Cli, root: Path, tmp_path: Path
) -> None:
    send(cli, "claude", "gemini")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "old").write_text("not mailslot's")
    os.utime(outside / "old", (0, 0))
    (root / "tmp").rmdir()
    (root / "tmp").symlink_to(outside)
    r = cli("doctor", "--fix")
    assert (r.code, r.err) == (1, "")
    assert f"problem: {root / 'tmp'} is a symlink; mailslot never follows it (remove it)" in r.out
    assert os.listdir(outside) == ["old"]


def test_doctor_json(cli: Cli, root: Path) -> None:
    send(cli, "claude", "gemini")
    data = json.loads(cli("doctor", "--json").out)
    assert data == {"location": str(root), "problems": [], "fixed": [], "deep": False,
                    "watcher": {"running": False, "wanted": False, "on_demand": True,
                                "how": None, "pid": None, "host": None, "started": None,
                                "log": None}, "bridges": [], "wake_paths": []}


def test_broadcast_and_reply_bodies_from_stdin(cli: Cli) -> None:
    r = cli("--agent", "claude", "broadcast", "--subject", "s", "--json", stdin="all of you\n")
    assert json.loads(r.out)["body"] == "all of you\n"
    assert json.loads(r.out)["to"] == ["all"]


def test_no_body_at_a_terminal_is_refused_without_waiting(root: Path) -> None:
    main_fd, term_fd = os.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "mailslot", "--agent", "claude", "send", "--to", "gemini",
             "--subject", "s"], stdin=term_fd, capture_output=True, text=True, timeout=60,
            check=False,
        )
    finally:
        os.close(main_fd)
        os.close(term_fd)
    assert proc.returncode == 2 and "no body" in proc.stderr
    assert not root.exists()


def test_help_for_every_command(cli: Cli) -> None:
    for name in sorted(c.name for c in declared()):
        r = cli(name, "--help")
        assert r.code == 0 and r.out.startswith(f"usage: mailslot {name}"), name
    top = subprocess.run([sys.executable, "-m", "mailslot", "--help"], capture_output=True,
                         text=True, timeout=60, check=False)
    assert top.returncode == 0 and "A local mailbox for AI coding agents." in top.stdout


def test_a_mailbox_path_that_is_a_file_is_one_clear_line(cli: Cli, root: Path) -> None:
    root.write_text("not a folder")
    some_id = "2026-01-01_000000.000000_claude_to_gemini_s_abcdef"
    for argv in (["inbox"], ["who"], ["doctor"], ["status", some_id], ["read", some_id],
                 ["send", "--to", "codex", "--subject", "s", "--body", "b"]):
        r = cli("--agent", "gemini", *argv)
        assert r.code == 1, argv
        assert len(r.err.splitlines()) <= 1 and "Traceback" not in r.err + r.out, argv
    assert root.read_text() == "not a folder"


# Attacks: one line, never a traceback ------------------------------------------
def one_line_failure(r: Result) -> str:
    assert r.code == 1, (r.code, r.err)
    assert r.err.startswith("mailslot: ") and r.err.count("\n") == 1, r.err
    assert "Traceback" not in r.err
    return r.err


def test_a_message_or_folder_mailslot_may_not_read_is_one_line(
        cli: Cli, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mid = send(cli, "claude", "gemini")
    with monkeypatch.context() as m:
        fail_os(m, "open", f"{mid}.md", errno.EACCES)  # chmod 000 on the message
        err = one_line_failure(cli("--agent", "gemini", "read", mid))
        assert "permission denied" in err and f"{mid}.md" in err
    with monkeypatch.context() as m:
        fail_os(m, "scandir", "/agents/gemini/new", errno.EACCES)  # chmod 000 on new/
        assert "permission denied" in one_line_failure(cli("--agent", "gemini", "inbox"))


def test_doctor_fix_on_a_folder_it_may_not_change_is_one_line(
        cli: Cli, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    send(cli, "claude", "gemini")
    (root / "agents").chmod(0o755)
    fail_os(monkeypatch, "chmod", "/agents", errno.EPERM)  # a folder another user owns
    assert "permission denied" in one_line_failure(cli("doctor", "--fix"))


def test_a_mailbox_another_user_owns_or_may_write_is_refused(cli: Cli, root: Path) -> None:
    send(cli, "claude", "gemini")
    root.chmod(0o777)  # a shared MAILSLOT_DIR: anyone could plant mail "from" anyone
    err = one_line_failure(cli("--agent", "gemini", "inbox"))
    assert "can be written by other users (mode 777)" in err and f"chmod 700 {root}" in err
    one_line_failure(cli("--agent", "mallory", "send", "--to", "gemini", "--subject", "s",
                         "--body", "b"))
    root.chmod(0o700)
    (root / "agents" / "gemini").chmod(0o770)
    one_line_failure(cli("--agent", "gemini", "inbox"))
    (root / "agents" / "gemini").chmod(0o700)
    if os.geteuid() == 0:  # only root can give the folder away
        os.chown(root, 65534, 65534)
        assert "belongs to another user" in one_line_failure(cli("--agent", "gemini", "inbox"))


def test_done_reports_each_id(cli: Cli) -> None:
    a = send(cli, "claude", "gemini")
    unknown = "2026-01-01_000000.000000_x_to_gemini_s_abcdef"
    r = cli("--agent", "gemini", "done", a, unknown)
    assert r.code == 1
    assert r.out == f"done: {a}\n"
    assert r.err == f"mailslot: no message {unknown} for gemini\n"


def test_inbox_says_how_many_unreadable_files_it_skipped(cli: Cli, root: Path) -> None:
    a = send(cli, "claude", "gemini")
    bad = root / "agents/gemini/new" / "2026-01-01_000000.000000_x_to_gemini_s_abcdef.md"
    bad.write_bytes(b"")
    bad.chmod(0o600)
    r = cli("--agent", "gemini", "inbox", "--json")
    assert r.code == 0 and [m["id"] for m in json.loads(r.out)] == [a]
    assert r.err == "mailslot: 1 unreadable message file(s) skipped; mailslot doctor names them\n"


def test_bidi_and_zero_width_characters_are_shown_not_obeyed(cli: Cli, root: Path) -> None:
    body = "run \u202egnp.exe\u202c now\u200b!"
    mid = send(cli, "claude", "gemini", "see \u202eevil", body)
    shown = cli("--agent", "gemini", "read", mid)
    assert "\u202e" not in shown.out and "\u200b" not in shown.out
    assert "run <U+202E>gnp.exe<U+202C> now<U+200B>!" in shown.out
    assert "see <U+202E>evil" in cli("--agent", "gemini", "inbox").out
    stored = next((root / "agents/gemini").rglob(f"{mid}.md")).read_text()
    assert body in stored  # the message keeps its bytes
    assert json.loads(cli("--agent", "gemini", "read", mid, "--json").out)["body"] == body


def test_done_all_finishes_everything_the_inbox_lists(cli: Cli) -> None:
    first, second = send(cli, "claude", "gemini"), send(cli, "codex", "gemini")
    assert cli("--agent", "gemini", "read", first).code == 0
    cast = cli("--agent", "claude", "broadcast", "--subject", "s", "--body", "b")
    assert cast.code == 0
    done = cli("--agent", "gemini", "done", "--all", "--json")
    assert done.code == 0, done.err
    assert {i["id"] for i in json.loads(done.out) if i["mailbox"] != "all"} == {first, second}
    assert json.loads(cli("--agent", "gemini", "inbox", "--json").out) == []
    again = cli("--agent", "gemini", "done", "--all")
    assert again.code == 0 and again.out == "nothing to mark done\n"


def test_done_needs_ids_or_all_not_both(cli: Cli) -> None:
    mid = send(cli, "claude", "gemini")
    for argv in (["done"], ["done", "--all", mid]):
        r = cli("--agent", "gemini", *argv)
        assert r.code == 2 and r.err.count("\n") == 1, argv
        assert "--all" in r.err
    assert json.loads(cli("--agent", "gemini", "inbox", "--json").out)[0]["id"] == mid


def test_reply_with_a_subject_of_its_own(cli: Cli) -> None:
    mid = send(cli, "claude", "gemini", "Schema change")
    r = cli("--agent", "gemini", "reply", mid, "--subject", "Migration plan", "--body", "b",
            "--json")
    assert r.code == 0 and json.loads(r.out)["subject"] == "Migration plan"
    assert json.loads(r.out)["in_reply_to"] == mid
    mid = send(cli, "claude", "gemini", "Another")
    r = cli("--agent", "gemini", "reply", mid, "--body", "b", "--json")
    assert json.loads(r.out)["subject"] == "Re: Another"
    r = cli("--agent", "gemini", "reply", mid, "--subject", "two\nlines", "--body", "b")
    assert r.code == 2 and "single line" in r.err
