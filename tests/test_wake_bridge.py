"""``mailslot bridge claude``: a SendMessage to a listed agent becomes mail from the
sending session's own agent.

The bridge is the real command, run as a process (its supervisor forks one target per
listed agent). The sending Claude Code session is a fake: this test process, with a
registry record of its own (its real pid and start time) and the hook record mailslot
keeps for its session, writing the frame a real 2.1.332 ``SendMessage`` wrote
(docs/claude-peers.md). Other senders are small Python processes. The real program is
driven in tests/hosts/test_claude_bridge.py.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from claude_session import FakeSession, Trap
from conftest import Result
from hookkit import sender
from mailslot import FileStore, Mailbox
from mailslot.frontends import bridge_server as bridge_module
from mailslot.hosts.claude import bridge as claude_bridge
from mailslot.hosts.claude import door as claude_door
from support import wait_for
from wake_helpers import configure

Cli = Callable[..., Result]
SESSION = "00be5295-09a9-4afd-801e-c140d3bc6bd4"
OTHER = "11be5295-09a9-4afd-801e-c140d3bc6bd4"

pytestmark = pytest.mark.skipif(not hasattr(socket, "SO_PEERCRED"),
                                reason="the bridge needs SO_PEERCRED (Linux)")


def proc_start(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


def sessions() -> Path:
    return Path(os.environ["HOME"]) / ".claude" / "sessions"


def write_record(pid: int, session: str, sock: str | None = None, **changes: Any) -> Path:
    record = {"pid": pid, "sessionId": session, "cwd": "/work", "procStart": proc_start(pid),
              "version": "2.1.332", "peerProtocol": 1, "kind": "interactive",
              "entrypoint": "cli", "messagingSocketPath": sock, "name": "work-1a",
              "status": "busy", **changes}
    path = sessions() / f"{pid}.json"
    path.write_text(json.dumps(record))
    path.chmod(0o644)
    return path


def frame(text: str, *, reply_to: str = "/nowhere.sock", name: str = "alice",
          msg_id: str | None = None) -> dict[str, Any]:
    """What a real SendMessage wrote (seen, 2.1.332)."""
    wrapped = (f'<cross-session-message from="uds:{reply_to}" from-name="{name}" '
               f'from-mode="prompting">\n{text}\n</cross-session-message>')
    return {"type": "user", "message": {"role": "user", "content": wrapped},
            "priority": "next", "from": f"uds:{reply_to}", "msgV": 1,
            "msg_id": msg_id or str(uuid.uuid4())}


def write(path: str, *lines: dict[str, Any] | bytes) -> None:
    data = b"".join(x if isinstance(x, bytes) else json.dumps(x).encode() + b"\n"
                    for x in lines)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.connect(path)
        conn.sendall(data)


class Bridge:
    def __init__(self, proc: subprocess.Popen[str], log: Path) -> None:
        self.proc = proc
        self.log = log

    def socket_of(self, agent: str) -> str:
        """The socket the bridge's record for ``agent`` names (waits for it)."""
        return str(self.record_of(agent)["messagingSocketPath"])

    def record_of(self, agent: str, timeout: float = 30) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for path in sessions().glob("*.json"):
                try:
                    record = json.loads(path.read_text())
                except ValueError:
                    continue
                if record.get(claude_bridge.BRIDGE_MARK, {}).get("agent") == agent:
                    return dict(record)
            assert self.proc.poll() is None, self.log.read_text()
            time.sleep(0.05)
        raise AssertionError(f"no record for {agent}: {self.log.read_text()}")

    def listed(self) -> set[str]:
        found = set()
        for path in sessions().glob("*.json"):
            with_mark = json.loads(path.read_text()).get(claude_bridge.BRIDGE_MARK)
            if with_mark:
                found.add(with_mark["agent"])
        return found

    def wait_log(self, text: str, timeout: float = 30) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            log = self.log.read_text()
            if text in log:
                return log
            time.sleep(0.05)
        raise AssertionError(f"{text!r} not in the log: {self.log.read_text()}")


@pytest.fixture
def sockets() -> Iterator[str]:
    folder = tempfile.mkdtemp(prefix="ms-", dir="/tmp")  # socket paths stay short
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def world(root: Path, sockets: str) -> Trap:
    """alice is this process's (fake) Claude session, its hooks recorded; codex and
    gemini are agents of the mailbox."""
    configure(root, {})
    sessions().mkdir(parents=True, mode=0o700)
    for agent in ("codex", "gemini"):
        sender(root, "sarah").send(agent, "hello", "x")
    receipts = Trap(Path(sockets) / f"{os.getpid()}.sock")  # this process's receipts
    write_record(os.getpid(), SESSION, receipts.path)
    FileStore(root).record_hook_session("alice", SESSION, {"host": "claude",
                                                          "pid": os.getpid()})
    return receipts


@pytest.fixture
def bridged(world: Trap, root: Path, sockets: str, tmp_path: Path) -> Iterator[Bridge]:
    log = tmp_path / "bridge.log"
    env = {**os.environ, "XDG_RUNTIME_DIR": sockets}
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "mailslot", "bridge", "claude"],
                                stdout=out, stderr=subprocess.STDOUT, env=env, text=True)
    running = Bridge(proc, log)
    yield running
    proc.send_signal(signal.SIGTERM)
    proc.wait(30)


def inbox(root: Path, agent: str) -> list[Any]:
    box = sender(root, agent)
    return [box.read(item.message.id).message for item in box.inbox()
            if item.message.sender != "sarah"]


def wait_mail(root: Path, agent: str, count: int = 1) -> list[Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = inbox(root, agent)
        if len(found) >= count:
            return found
        time.sleep(0.05)
    raise AssertionError(f"{agent} got {inbox(root, agent)}")


def test_a_send_message_becomes_mail_from_the_sessions_agent_and_the_reply_wakes_it(
        bridged: Bridge, root: Path, world: Trap, cli: Cli, sockets: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    record = bridged.record_of("codex")
    assert record["pid"] != os.getpid() and record["peerProtocol"] == 1
    assert record["kind"] == "interactive" and record["name"] == "codex"
    path = sessions() / f"{record['pid']}.json"
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    sock = Path(record["messagingSocketPath"])
    assert oct(sock.stat().st_mode & 0o777) == "0o600"
    assert oct(sock.parent.stat().st_mode & 0o777) == "0o700"
    # one process per agent, started one after another: not alice, she is live here
    wait_for(lambda: bridged.listed() == {"codex", "gemini", "sarah"},
             what="a bridge record for each agent but alice")
    write(str(sock), {"type": "auth", "token": "x"},
          frame("Please review PR 7.\n\nThanks", reply_to=world.path))
    [mail] = wait_mail(root, "codex")
    assert mail.sender == "alice" and mail.subject == "Please review PR 7."
    assert mail.body == "Please review PR 7.\n\nThanks"  # the wrapper removed
    assert world.lines == []  # delivered: no receipt, as Claude Code does
    # the reply is mail to alice, which the claude-peer wake hands to her session (its
    # door: a process named claude holding a cc-socks socket; this test process, which
    # sent as alice, is no Claude Code, so its own record is passed over)
    configure(root, {"alice": {"wake_on_mail": True, "wake_method": "claude-peer",
                               "wake_retry": {"attempts": 1, "backoff_seconds": 0}}})
    FileStore(root).set_latest_session("alice", "claude", SESSION)
    monkeypatch.setattr(claude_door, "RECEIPT_SECONDS", 0.3)  # a taken notice gets no answer
    door = FakeSession(Path(os.environ["HOME"]), Path(sockets) / "cc-socks", SESSION)
    reply = sender(root, "codex").reply(mail.id, "Looks good")
    assert reply.to == ("alice",)
    try:
        assert cli("watch", "--once").code == 0
    finally:
        door.close()
    [notice] = [x for x in door.lines if x.get("type") == "user"]
    assert notice["session_id"] == SESSION
    assert f"codex sent message {reply.id}" in notice["message"]["content"]


def test_a_spoofed_name_binds_to_the_real_sender(bridged: Bridge, root: Path,
                                                 world: Trap) -> None:
    write(bridged.socket_of("codex"), frame("from bob, honest", name="bob"),
          {"type": "user", "message": {"role": "user", "content":
           '<cross-session-message from="uds:/x" from-name="gemini">\nhi\n'
           '</cross-session-message>'}, "from": "uds:/x", "sender": "gemini"})
    mails = wait_mail(root, "codex", 2)
    assert {m.sender for m in mails} == {"alice"}


def test_a_process_with_no_record_sends_nothing(bridged: Bridge, root: Path) -> None:
    script = ("import json,socket,sys; c=socket.socket(socket.AF_UNIX); c.connect(sys.argv[1]);"
              "c.sendall(json.dumps({'type':'user','message':{'role':'user','content':"
              "'I am alice'},'from':'uds:/tmp/x.sock','msg_id':sys.argv[2]}).encode()+b'\\n')")
    subprocess.run([sys.executable, "-c", script, bridged.socket_of("codex"),
                    str(uuid.uuid4())], check=True)
    bridged.wait_log("refused a message from pid")
    assert inbox(root, "codex") == []


def test_a_record_others_may_write_or_do_not_own_binds_nothing(
        bridged: Bridge, root: Path, world: Trap) -> None:
    record = write_record(os.getpid(), SESSION, world.path)
    record.chmod(0o666)
    write(bridged.socket_of("codex"), frame("writable"))
    bridged.wait_log("others may write it")
    record.chmod(0o644)
    if os.geteuid() == 0:  # only root can give a file away
        os.chown(record, 65534, 65534)
        write(bridged.socket_of("codex"), frame("not ours"))
        bridged.wait_log("not by this user")
        os.chown(record, 0, 0)
    assert inbox(root, "codex") == [] and world.lines == []


def test_hostile_lines_send_nothing_and_the_target_goes_on(bridged: Bridge, root: Path,
                                                           world: Trap) -> None:
    sock = bridged.socket_of("codex")
    write(sock, b"not json\n", b"[1,2]\n", b'{"type":"user","message":{"content":7}}\n',
          b'{"type":"user","message":"text"}\n', b'{"type":"control","action":"x"}\n')
    write(sock, b"x" * (bridge_module.MAX_LINE + 10))
    bridged.wait_log(f"a line over {bridge_module.MAX_LINE} bytes")
    write(sock, frame("still here"))
    [mail] = wait_mail(root, "codex")
    assert mail.body == "still here"
    log = bridged.log.read_text()
    assert log.count("refused a line") == 5, log


def test_an_unbound_session_is_told_on_its_own_socket(bridged: Bridge, root: Path,
                                                      world: Trap) -> None:
    write_record(os.getpid(), OTHER, world.path)  # a session no mailslot hook recorded
    msg_id = str(uuid.uuid4())
    write(bridged.socket_of("codex"), frame("who am I", reply_to=world.path, msg_id=msg_id))
    deadline = time.monotonic() + 30
    while not world.lines and time.monotonic() < deadline:
        time.sleep(0.05)
    [receipt] = world.lines
    assert receipt["action"] == "peer_message_status" and receipt["status"] == "expired"
    assert receipt["status_detail"] == "refused" and receipt["orig_msg_id"] == msg_id
    assert "no mailslot agent" in receipt["reason"]
    # a from that is not its own registered socket hears nothing
    write(bridged.socket_of("codex"), frame("elsewhere", reply_to="/tmp/other.sock"))
    assert bridged.wait_log("refused a message").count("refused a message") >= 1
    deadline = time.monotonic() + 30
    while bridged.log.read_text().count("no mailslot agent") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(world.lines) == 1 and inbox(root, "codex") == []


def test_a_governed_send_is_refused_and_the_sender_is_told(bridged: Bridge, root: Path,
                                                           world: Trap) -> None:
    Mailbox(FileStore(root)).pause(None, paused=True)  # the owner's pause
    write(bridged.socket_of("codex"), frame("while paused", reply_to=world.path))
    deadline = time.monotonic() + 30
    while not world.lines and time.monotonic() < deadline:
        time.sleep(0.05)
    [receipt] = world.lines
    assert "mailslot refused" in receipt["reason"], receipt
    assert inbox(root, "codex") == []
    # Claude Code shows its model only its own words for a refusal: the reason is mail
    [told] = wait_mail(root, "alice")
    assert (told.sender, told.subject) == ("mailslot", "Not delivered to codex")
    assert "mailslot refused the message to codex" in told.body


def test_two_senders_at_once(bridged: Bridge, root: Path, world: Trap) -> None:
    sock = bridged.socket_of("codex")
    threads = [threading.Thread(target=write, args=(sock, frame(f"n{i}")))
               for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    mails = wait_mail(root, "codex", 6)
    assert sorted(m.body for m in mails) == [f"n{i}" for i in range(6)]


def test_a_live_claude_agent_is_not_listed_and_records_go_when_it_stops(
        bridged: Bridge, root: Path) -> None:
    bridged.record_of("gemini")
    assert "alice" not in bridged.listed()
    bridged.proc.send_signal(signal.SIGTERM)
    bridged.proc.wait(30)
    assert bridged.listed() == set()  # every target removed its record


def test_the_watcher_runs_the_bridges_config_asks_for(world: Trap, root: Path,
                                                      sockets: str, tmp_path: Path) -> None:
    configure(root, {}, bridges=["claude", "nosuch"])
    log = tmp_path / "watch.log"
    env = {**os.environ, "XDG_RUNTIME_DIR": sockets}
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "mailslot", "watch"], stdout=out,
                                stderr=subprocess.STDOUT, env=env, text=True)
    watching = Bridge(proc, log)
    try:
        sock = watching.socket_of("codex")
        write(sock, frame("through the watcher's bridge"))
        [mail] = wait_mail(root, "codex")
        assert mail.sender == "alice"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    assert watching.listed() == set()


def test_doctor_says_which_agents_the_bridge_lists(bridged: Bridge, root: Path,
                                                   cli: Cli) -> None:
    pid = bridged.record_of("gemini")["pid"]
    bridged.record_of("codex")
    done = cli("doctor")
    assert "bridge: claude: runs, listing codex (pid " in done.out, done.out
    assert f"gemini (pid {pid})" in done.out


def prompt_note(cli: Cli, root: Path) -> str:
    """The answer note alice's prompt hook shows with mail from sarah."""
    sender(root, "sarah").send("alice", "hi", "x")
    payload = json.dumps({"session_id": SESSION, "hook_event_name": "UserPromptSubmit",
                          "prompt": "go"})
    done = cli("hook", "claude", "user-prompt-submit", "--agent", "alice", stdin=payload)
    context = json.loads(done.out)["hookSpecificOutput"]["additionalContext"]
    return next(line for line in context.splitlines() if "Answer mailslot mail" in line)


def test_without_a_bridge_the_hook_says_only_mailslot_answers(world: Trap, root: Path,
                                                               cli: Cli) -> None:
    note = prompt_note(cli, root)
    assert "only with mailslot" in note and "mcp__mailslot__reply" in note, note
    assert "does not reach mailslot agents here (no mailslot bridge runs)" in note, note


def test_with_a_bridge_the_hook_names_the_agents_send_message_reaches(
        bridged: Bridge, root: Path, cli: Cli) -> None:
    for agent in ("codex", "gemini", "sarah"):
        bridged.record_of(agent)
    note = prompt_note(cli, root)
    assert "mcp__mailslot__reply" in note and "or with Claude Code's own `SendMessage`" in note
    assert "(now: codex, gemini, sarah)" in note, note
    assert "to any other name reaches only Claude sessions" in note, note


def test_with_no_bridge_the_hooks_look_without_the_socket_machinery(world: Trap,
                                                                     root: Path) -> None:
    """Every Claude hook asks whether a bridge runs: with none (a session's record only)
    the answer costs a folder listing, not the import of the checked reader."""
    probe = ("import sys; from mailslot.hosts import claude; "
             f"print(claude.HOST.bridged({str(root)!r}, {{}}), "
             "'mailslot.wake.line_socket' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, check=True, env=dict(os.environ))
    assert done.stdout.split() == ["[]", "False"], done
