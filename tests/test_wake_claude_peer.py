"""``claude-peer``: the notice handed to a live Claude Code session through its own door.

The session is a fake here: a registry record of this test process (its real pid and
start time, so the liveness check is the real one) and a Unix socket served by a thread
that speaks what Claude Code 2.1.332 was seen to speak (docs/claude-peers.md): it takes
JSON lines, answers nothing when it accepts, and sends a ``peer_message_status`` line to
the ``from`` socket when it holds or refuses. The real program is driven in
tests/hosts/test_claude_peer.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import Result
from hookkit import sender
from mailslot import FileStore
from mailslot.hosts import claude
from mailslot.wake.line_socket import DoorError
from support import wait_for
from wake_helpers import accepted_lines, configure, events

Cli = Callable[..., Result]
SESSION = "00be5295-09a9-4afd-801e-c140d3bc6bd4"
TOKEN = "0123456789abcdef0123456789abcdef"  # any 32 hex digits
ONE_TRY = {"attempts": 1, "backoff_seconds": 0}


def proc_start(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


class FakeSession:
    """One live session's registry record, key file and socket; ``answer`` decides what
    it does with a message: ``None`` (take it), a status to send back, or raw text."""

    def __init__(self, home: Path, socket_dir: Path) -> None:
        self.folder = home / ".claude" / "sessions"
        self.folder.mkdir(parents=True, mode=0o700)
        socket_dir.mkdir(mode=0o700)
        self.path = str(socket_dir / f"{os.getpid()}.sock")
        self.answer: str | None = None
        self.lines: list[dict[str, Any]] = []
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        os.chmod(self.path, 0o600)
        self.server.listen(4)
        self.record = {"pid": os.getpid(), "sessionId": SESSION, "cwd": "/work",
                       "procStart": proc_start(os.getpid()), "version": "2.1.332",
                       "peerProtocol": 1, "peerFeatures": ["notify_idle"],
                       "kind": "interactive", "entrypoint": "cli",
                       "messagingSocketPath": self.path, "name": "work-1a", "status": "idle"}
        self.write()
        digest = hashlib.sha256(os.path.realpath(self.path).encode()).hexdigest()
        key = self.folder / f"{os.getpid()}.{digest}.key"
        key.write_text(json.dumps({"peerToken": TOKEN}))
        key.chmod(0o600)
        threading.Thread(target=self.serve, daemon=True).start()

    def write(self, **changes: Any) -> None:
        path = self.folder / f"{os.getpid()}.json"
        path.write_text(json.dumps({**self.record, **changes}))
        path.chmod(0o644)  # as Claude Code writes it

    def serve(self) -> None:
        for lines in accepted_lines(self.server):
            self.lines += lines
            message = self.lines[-1]
            if self.answer is not None and message.get("type") == "user":
                self.reply(message)

    def reply(self, message: dict[str, Any]) -> None:
        assert self.answer is not None
        if self.answer in ("held", "refused", "dropped", "denied", "delivered", "expired"):
            status = ({"status": "expired", "status_detail": "refused"}
                      if self.answer == "refused" else {"status": self.answer})
            line = json.dumps({"type": "control", "action": "peer_message_status", **status,
                               "reason": "…", "from": f"uds:{self.path}",
                               "orig_msg_id": message["msg_id"], "msgV": 1,
                               "msg_id": "71fea8a4-2116-4a9f-baad-1da471d87faa"})
        else:
            line = self.answer
        to = message["from"].removeprefix("uds:")
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as out:
            out.connect(to)
            out.sendall(line.encode() + b"\n")

    def close(self) -> None:
        self.server.close()


@pytest.fixture(autouse=True)
def quick_receipts(monkeypatch: pytest.MonkeyPatch) -> None:
    """A taken notice gets no answer: waiting the real window for one is only slow."""
    monkeypatch.setattr(claude, "RECEIPT_SECONDS", 0.5)


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
        session.close()
        os.unlink(session.path)
    elif breakage == "stale pid":
        session.write(procStart="1")
    elif breakage == "record writable by others":
        (session.folder / f"{os.getpid()}.json").chmod(0o666)
    elif breakage == "socket mode":
        os.chmod(session.path, 0o666)
    elif breakage == "old version":
        session.write(version="2.1.223")
    elif breakage == "another session":
        session.write(sessionId="another-one")
    elif breakage == "no socket":
        session.write(messagingSocketPath=None)
    with pytest.raises(DoorError, match=said):
        claude.find_door(SESSION, os.environ)
    FileStore(root).set_waiter("claude", SESSION, os.getpid())
    sender(root, "gemini").send("claude", "hello", "x")
    assert cli("watch", "--once").code == 0
    done = outcome(root)
    assert done["event"] == "wake_ok" and said in done["said"] and "waiter" in done["said"]
    assert session.lines == []


def test_a_link_in_place_of_the_record_is_not_followed(tmp_path: Path,
                                                       session: FakeSession) -> None:
    record = session.folder / f"{os.getpid()}.json"
    elsewhere = tmp_path / "planted.json"
    elsewhere.write_text(record.read_text())
    record.unlink()
    record.symlink_to(elsewhere)
    with pytest.raises(DoorError, match="no live record"):
        claude.find_door(SESSION, os.environ)


def test_without_a_key_file_no_auth_line_is_sent(session: FakeSession) -> None:
    for key in session.folder.glob("*.key"):
        key.unlink()
    door = claude.find_door(SESSION, os.environ)
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
           f"{SESSION} has Claude Code's door (pid {os.getpid()}, 2.1.332)" in r.out
    session.write(peerProtocol=2)
    r = cli("doctor", "--wake", "claude", "--host", "claude")
    assert "has no door now" in r.out and "peerProtocol 2" in r.out and "waiter wakes it" in r.out


def test_doctor_says_the_door_or_the_waiter_and_why(root: Path, cli: Cli,
                                                    session: FakeSession) -> None:
    peer_agent(root)
    shown = cli("doctor").out
    assert (f"wake path: claude (claude-peer): door: Claude Code's own cross-session socket "
            f"of session {SESSION} (pid {os.getpid()}, Claude Code 2.1.332, idle)") in shown
    session.write(peerProtocol=2)
    shown = cli("doctor").out
    assert ("wake path: claude (claude-peer): waiter: Claude Code's door refused loudly "
            "(session " in shown and "speaks peerProtocol 2, not 1" in shown), shown
    session.write(messagingSocketPath=None)
    shown = cli("doctor").out
    assert (f"wake path: claude (claude-peer): waiter: session {SESSION} has no door now "
            "(session " in shown and "has no messaging socket" in shown), shown
    assert "its session's waiter would wake it, but none runs now" in shown, shown
