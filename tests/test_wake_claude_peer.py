"""``claude-peer``: the notice handed to a live Claude Code session through its own door.

The session is a fake (:mod:`claude_session`): a real child process named ``claude``
holding the session's socket, its registry record and key file, and a thread of this
process serving the socket as Claude Code 2.1.332 was seen to. The real program is driven
in tests/hosts/test_claude_peer.py.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from claude_session import SESSION, TOKEN, FakeSession, Trap, proc_start
from conftest import Result
from hookkit import sender
from mailslot import FileStore
from mailslot.hosts.claude import door as claude_door
from mailslot.wake.line_socket import DoorError
from support import wait_for
from wake_helpers import configure, events

Cli = Callable[..., Result]
ONE_TRY = {"attempts": 1, "backoff_seconds": 0}


@pytest.fixture(autouse=True)
def quick_receipts(monkeypatch: pytest.MonkeyPatch) -> None:
    """A taken notice gets no answer: waiting the real window for one is only slow."""
    monkeypatch.setattr(claude_door, "RECEIPT_SECONDS", 0.5)


@pytest.fixture
def session(tmp_path: Path) -> Iterator[FakeSession]:
    fake = FakeSession(Path(os.environ["HOME"]), tmp_path / "cc-socks")
    yield fake
    fake.close()


def peer_agent(root: Path) -> None:
    configure(root, {"claude": {"wake_on_mail": True, "wake_method": "claude-peer",
                                "wake_retry": ONE_TRY}})
    FileStore(root).set_latest_session("claude", "claude", SESSION)


def outcome(root: Path) -> dict[str, Any]:
    return next(e for e in events(root) if e["event"] in ("wake_ok", "wake_failed"))


def notices(root: Path, to: str = "gemini") -> list[str]:
    box = sender(root, to)
    return [box.read(n.message.id).message.body for n in box.inbox()
            if n.message.sender == "mailslot"]


def test_accepted_notice_is_one_authenticated_line_bound_to_the_session(
        root: Path, cli: Cli, session: FakeSession) -> None:
    peer_agent(root)
    sent = sender(root, "gemini").send("claude", "secret subject", "SECRET-BODY")
    start = time.monotonic()
    assert cli("watch", "--once").code == 0
    assert time.monotonic() - start < 5
    auth, message = session.lines
    assert auth == {"type": "auth", "token": TOKEN}
    assert message["type"] == "user" and message["session_id"] == SESSION
    assert message["priority"] == "next" and message["msgV"] == 1
    assert message["from"].startswith(f"uds:{Path(session.path).parent}/mailslot-")
    text = message["message"]["content"]
    assert f"gemini sent message {sent.id}" in text and "mcp__mailslot__read_messages" in text
    assert "SendMessage" in text and "mcp__mailslot__reply" in text  # which tool answers
    assert "SECRET" not in text and "secret" not in text and "from-mode" not in text
    done = outcome(root)
    assert done["event"] == "wake_ok" and "handed to session" in done["said"]
    # the session was told: its waiter (the fallback) does not tell it again
    assert sent.id in FileStore(root).shown("claude", SESSION)
    assert notices(root) == []
    assert not list(Path(session.path).parent.glob("mailslot-*"))  # our socket is gone


def test_held_notice_is_told_to_the_sender(root: Path, cli: Cli,
                                           session: FakeSession) -> None:
    peer_agent(root)
    session.answer = "held"
    sent = sender(root, "gemini").send("claude", "hello", "x")
    assert cli("watch", "--once").code == 0
    assert outcome(root)["event"] == "wake_ok" and "held" in outcome(root)["said"]
    [body] = notices(root)
    assert "holding it for its person's approval" in body and "claude" in body
    assert sent.id in FileStore(root).shown("claude", SESSION)  # no waiter goes round it


@pytest.mark.parametrize(("decision", "event", "words"), [
    ("denied", "wake_failed", "declined"), ("delivered", "wake_ok", "let the held"),
    ("expired", "wake_failed", "expired unanswered")])
def test_the_persons_later_decision_on_a_held_notice_reaches_the_sender(
        root: Path, cli: Cli, session: FakeSession, decision: str, event: str,
        words: str) -> None:
    """Claude Code answers a held message again when its person decides (long after the
    send): the watcher that handed it over listens on, and the sender hears it."""
    peer_agent(root)
    session.answer = "held"
    sent = sender(root, "gemini").send("claude", "hello", "x")
    assert cli("watch", "--once").code == 0
    [held] = notices(root)
    assert "holding it" in held
    [frame] = [line for line in session.lines if line.get("type") == "user"]
    assert Path(frame["from"].removeprefix("uds:")).exists()  # still listening
    session.answer = decision
    session.reply(frame)
    wait_for(lambda: len(notices(root)) == 2, what="the later decision's notice")
    later = [e for e in events(root) if e["event"] in ("wake_ok", "wake_failed")][-1]
    assert (later["event"], later["id"], later["later"]) == (event, sent.id, True)
    assert words in (later.get("said") or later.get("reason"))
    assert [n for n in notices(root) if words in n and "claude" in n]
    wait_for(lambda: not Path(frame["from"].removeprefix("uds:")).exists(),
             what="the listener closed once decided")
    shown = cli("--agent", "gemini", "status", sent.id)
    assert words in shown.out, shown.out  # the sender's ladder says it


def test_refused_notice_falls_back_to_a_live_waiter_and_tells_the_sender(
        root: Path, cli: Cli, session: FakeSession) -> None:
    peer_agent(root)
    session.answer = "refused"
    FileStore(root).set_waiter("claude", SESSION, os.getpid())
    sent = sender(root, "gemini").send("claude", "hello", "x")
    assert cli("watch", "--once").code == 0
    done = outcome(root)
    assert done["event"] == "wake_ok" and "refuses" in done["said"] and "waiter" in done["said"]
    [body] = notices(root)
    assert "refuses cross-session messages" in body and "waiter wakes it" in body
    assert sent.id not in FileStore(root).shown("claude", SESSION)  # the waiter's to tell


def test_refused_notice_without_a_waiter_fails_and_the_sender_hears(
        root: Path, cli: Cli, session: FakeSession) -> None:
    peer_agent(root)
    session.answer = "refused"
    sender(root, "gemini").send("claude", "hello", "x")
    assert cli("watch", "--once").code == 0
    done = outcome(root)
    assert done["event"] == "wake_failed" and "no waiter" in done["reason"]
    assert any("refuses cross-session messages" in b for b in notices(root))


@pytest.mark.parametrize("answer, said", [
    ("not json at all", "not JSON"),
    ('{"type":"control","action":"peer_message_status","status":"lost"}', "shape"),
    ("denied", "does not expect"),
])
def test_a_reply_of_an_unknown_shape_fails_loudly(root: Path, cli: Cli, session: FakeSession,
                                                  answer: str, said: str) -> None:
    peer_agent(root)
    session.answer = answer
    FileStore(root).set_waiter("claude", SESSION, os.getpid())  # even with a fallback
    sender(root, "gemini").send("claude", "hello", "x")
    assert cli("watch", "--once").code == 0
    done = outcome(root)
    assert done["event"] == "wake_failed" and said in done["reason"], done


def test_a_changed_protocol_number_fails_loudly(root: Path, cli: Cli,
                                                session: FakeSession) -> None:
    peer_agent(root)
    session.write(peerProtocol=2)
    FileStore(root).set_waiter("claude", SESSION, os.getpid())
    sender(root, "gemini").send("claude", "hello", "x")
    assert cli("watch", "--once").code == 0
    done = outcome(root)
    assert done["event"] == "wake_failed" and "peerProtocol 2" in done["reason"]
    assert session.lines == []  # nothing sent to a door that speaks another protocol


@pytest.mark.parametrize("breakage, said", [
    ("socket gone", "No such file"),
    ("stale pid", "not running"),
    ("record writable by others", "no live record"),
    ("socket mode", "mode 666"),
    ("old version", "older than 2.1.224"),
    ("another session", "no live record"),
    ("no socket", "no messaging socket"),
])
def test_no_usable_door_falls_back_to_the_waiter(root: Path, cli: Cli, session: FakeSession,
                                                 breakage: str, said: str) -> None:
    peer_agent(root)
    if breakage == "socket gone":
        session.server.close()
        os.unlink(session.path)
    elif breakage == "stale pid":
        session.write(procStart="1")
    elif breakage == "record writable by others":
        session.record_path.chmod(0o666)
    elif breakage == "socket mode":
        os.chmod(session.path, 0o666)
    elif breakage == "old version":
        session.write(version="2.1.223")
    elif breakage == "another session":
        session.write(sessionId="another-one")
    elif breakage == "no socket":
        session.write(messagingSocketPath=None)
    with pytest.raises(DoorError, match=said):
        claude_door.find_door(SESSION, os.environ)
    FileStore(root).set_waiter("claude", SESSION, os.getpid())
    sender(root, "gemini").send("claude", "hello", "x")
    assert cli("watch", "--once").code == 0
    done = outcome(root)
    assert done["event"] == "wake_ok" and said in done["said"] and "waiter" in done["said"]
    assert session.lines == []


def test_a_link_in_place_of_the_record_is_not_followed(tmp_path: Path,
                                                       session: FakeSession) -> None:
    record = session.record_path
    elsewhere = tmp_path / "planted.json"
    elsewhere.write_text(record.read_text())
    record.unlink()
    record.symlink_to(elsewhere)
    with pytest.raises(DoorError, match="no live record"):
        claude_door.find_door(SESSION, os.environ)


def forge(path: Path, record: dict[str, Any], **changes: Any) -> None:
    path.write_text(json.dumps({**record, **changes}))
    path.chmod(0o644)


def test_a_planted_record_beside_the_real_one_is_not_used(
        root: Path, cli: Cli, session: FakeSession, tmp_path: Path) -> None:
    """A ``0.json`` (or any other name) naming the live session's pid, start and id,
    with a socket of the forger's: the notice goes to the session's own socket."""
    trap = Trap(tmp_path / "trap" / "cc-socks" / f"{session.pid}.sock")
    for name in ("0.json", "1.json", f"{os.getpid()}.json"):
        forge(session.folder / name, session.record, messagingSocketPath=trap.path)
    assert claude_door.find_door(SESSION, os.environ).socket == session.path
    peer_agent(root)
    sender(root, "gemini").send("claude", "hello", "x")
    assert cli("watch", "--once").code == 0
    assert outcome(root)["event"] == "wake_ok"
    assert [x["type"] for x in session.lines] == ["auth", "user"]
    assert trap.lines == []


@pytest.mark.parametrize("forgery, said", [
    ("another name", "not the pid of its own name"),
    ("another live process", "is not Claude Code"),
    ("written before its process", "started after"),
    ("socket elsewhere", "is not where Claude Code keeps"),
    ("a cc-socks socket it does not hold", "does not listen on"),
    ("a socket folder others may write to", "mode 777: others may write"),
    ("symlinked record", "no live record"),
])
def test_a_forged_record_never_gets_the_notice(root: Path, cli: Cli, session: FakeSession,
                                               tmp_path: Path, forgery: str,
                                               said: str) -> None:
    me = os.getpid()  # a live process of this user, not Claude Code
    trap = Trap(tmp_path / "trap" / "cc-socks" / f"{session.pid}.sock")
    real = session.record_path
    if forgery == "another name":
        real.unlink()
        forge(session.folder / f"{me}.json", session.record, messagingSocketPath=trap.path)
    elif forgery == "another live process":
        real.unlink()
        trap = Trap(tmp_path / "trap2" / "cc-socks" / f"{me}.sock")
        forge(session.folder / f"{me}.json", session.record, pid=me,
              procStart=proc_start(me), messagingSocketPath=trap.path)
    elif forgery == "written before its process":
        year_ago = time.time() - 365 * 86400
        os.utime(real, (year_ago, year_ago))
    elif forgery == "socket elsewhere":
        trap = Trap(tmp_path / "elsewhere" / f"{session.pid}.sock")
        session.write(messagingSocketPath=trap.path)
    elif forgery == "a cc-socks socket it does not hold":
        session.write(messagingSocketPath=trap.path)
    elif forgery == "a socket folder others may write to":
        Path(session.path).parent.chmod(0o777)
    elif forgery == "symlinked record":
        planted = tmp_path / "planted.json"
        forge(planted, session.record, messagingSocketPath=trap.path)
        real.unlink()
        real.symlink_to(planted)
    with pytest.raises(DoorError, match=said):
        claude_door.find_door(SESSION, os.environ)
    peer_agent(root)
    sender(root, "gemini").send("claude", "hello", "x")
    assert cli("watch", "--once").code == 0
    done = outcome(root)
    assert done["event"] == "wake_failed" and said in done["reason"], done
    assert trap.lines == [] and session.lines == []


@pytest.mark.parametrize("argv, version, claude_code", [
    (["claude"], "2.1.332", True),  # the npm or native install, run by its name
    (["/home/u/.local/share/claude/versions/2.1.332"], "2.1.332", True),  # native
    (["node", "{pkg}"], "2.1.332", True),  # node running the package's script
    (["python3"], "2.1.332", False),
    (["python3.12"], "python3.12", False),  # a version that is no version number
    (["node", "{other}"], "2.1.332", False),
])
def test_a_process_is_claude_code_by_its_command_line(
        tmp_path: Path, argv: list[str], version: str, claude_code: bool) -> None:
    script = tmp_path / "node_modules" / "@anthropic-ai" / "claude-code" / "cli.js"
    other = tmp_path / "other.js"
    for path in (script, other):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("import sys\nsys.stdin.read()\n")
    argv = [a.format(pkg=script, other=other) for a in argv]
    child = subprocess.Popen(argv if len(argv) > 1 else [*argv, "-c", "import sys; "
                                                          "sys.stdin.read()"],
                             executable=sys.executable, stdin=subprocess.PIPE)
    try:
        wait_for(lambda: (Path(f"/proc/{child.pid}/cmdline").read_bytes().split(b"\0")[0]
                          == argv[0].encode()), what="the child's command line")
        assert claude_door._is_claude(child.pid, version) is claude_code
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(30)


def test_without_a_key_file_no_auth_line_is_sent(session: FakeSession) -> None:
    for key in session.folder.glob("*.key"):
        key.unlink()
    door = claude_door.find_door(SESSION, os.environ)
    assert door.token is None
    assert door.knock("[mailslot] hello", 5) is None
    [message] = session.lines
    assert message["type"] == "user"


def test_a_door_that_takes_nothing_times_out_in_one_line(tmp_path: Path) -> None:
    from mailslot.wake.line_socket import send_lines

    quiet = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path = str(tmp_path / "q.sock")
    quiet.bind(path)
    with pytest.raises(DoorError, match="cannot write"):  # bound, not listening
        send_lines(path, [{"type": "user"}], 1)
    quiet.close()


def test_no_session_recorded_falls_back(root: Path, cli: Cli) -> None:
    configure(root, {"claude": {"wake_on_mail": True, "wake_method": "claude-peer",
                                "wake_retry": ONE_TRY}})
    sender(root, "gemini").send("claude", "hello", "x")
    assert cli("watch", "--once").code == 0
    done = outcome(root)
    assert done["event"] == "wake_failed" and "no Claude Code session" in done["reason"]


def test_doctor_says_which_path_the_agent_uses(root: Path, cli: Cli,
                                               session: FakeSession, bin_dir: Path) -> None:
    from test_wake_choice import fake_program

    fake_program(bin_dir, "claude", "2.1.332 (Claude Code)")
    peer_agent(root)
    FileStore(root).set_waiter("claude", SESSION, os.getpid())
    r = cli("doctor", "--wake", "claude", "--host", "claude")
    assert r.code == 0, r.err
    assert f"claude-peer (configured) ← chosen: Claude Code 2.1.332 (≥ 2.1.224); session " \
           f"{SESSION} has Claude Code's door (pid {session.pid}, 2.1.332)" in r.out
    session.write(peerProtocol=2)
    r = cli("doctor", "--wake", "claude", "--host", "claude")
    assert "has no door now" in r.out and "peerProtocol 2" in r.out and "waiter wakes it" in r.out


def test_doctor_says_the_door_or_the_waiter_and_why(root: Path, cli: Cli,
                                                    session: FakeSession) -> None:
    peer_agent(root)
    shown = cli("doctor").out
    assert (f"wake path: claude (claude-peer): door: Claude Code's own cross-session socket "
            f"of session {SESSION} (pid {session.pid}, Claude Code 2.1.332, idle)") in shown
    session.write(peerProtocol=2)
    shown = cli("doctor").out
    assert ("wake path: claude (claude-peer): waiter: Claude Code's door refused loudly "
            "(session " in shown and "speaks peerProtocol 2, not 1" in shown), shown
    session.write(messagingSocketPath=None)
    shown = cli("doctor").out
    assert (f"wake path: claude (claude-peer): waiter: session {SESSION} has no door now "
            "(session " in shown and "has no messaging socket" in shown), shown
    assert "its session's waiter would wake it, but none runs now" in shown, shown
