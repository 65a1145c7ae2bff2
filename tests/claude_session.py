"""A fake live Claude Code session, as claude-peer checks one (docs/claude-peers.md).

Its process is a real child whose command line is ``claude …`` (Python started under
that name) and which holds the session's listening socket, so the start-time, command
line and socket checks are the real ones; the socket is served by a thread of the test
process, speaking what Claude Code 2.1.332 was seen to speak: it takes JSON lines,
answers nothing when it accepts, and sends a ``peer_message_status`` line to the
``from`` socket when it holds or refuses. The real program is driven in
tests/hosts/test_claude_peer.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from wake_helpers import accepted_lines

SESSION = "00be5295-09a9-4afd-801e-c140d3bc6bd4"
TOKEN = "0123456789abcdef0123456789abcdef"  # any 32 hex digits
_HOLDER = ("import socket, sys\n"
           "channel = socket.socket(fileno=int(sys.argv[1]))\n"
           "kept = socket.recv_fds(channel, 1, 1)[1]\n"
           "print('holding', flush=True)\n"
           "sys.stdin.read()\n")
"""The session's process: it takes the listening socket's descriptor and keeps it
until the test closes its stdin."""


def proc_start(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]


def holding_process(program: str = "claude") -> tuple[subprocess.Popen[str], socket.socket]:
    """A child named ``program`` in its command line, and our end of the channel that
    hands it a descriptor to hold (:func:`hand_over`)."""
    mine, theirs = socket.socketpair()
    child = subprocess.Popen([program, "-c", _HOLDER, str(theirs.fileno())],
                             executable=sys.executable, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, pass_fds=[theirs.fileno()], text=True)
    theirs.close()
    return child, mine


def hand_over(child: subprocess.Popen[str], channel: socket.socket, fd: int) -> None:
    socket.send_fds(channel, [b"x"], [fd])
    channel.close()
    assert child.stdout is not None and child.stdout.readline() == "holding\n"


class FakeSession:
    """One live session's registry record, key file, process and socket; ``answer``
    decides what it does with a message: ``None`` (take it), a status to send back, or
    raw text."""

    def __init__(self, home: Path, socket_dir: Path, session: str = SESSION,
                 program: str = "claude") -> None:
        self.folder = home / ".claude" / "sessions"
        self.folder.mkdir(parents=True, mode=0o700, exist_ok=True)
        socket_dir.mkdir(mode=0o700, exist_ok=True)
        self.process, channel = holding_process(program)
        self.pid = self.process.pid
        self.path = str(socket_dir / f"{self.pid}.sock")
        self.answer: str | None = None
        self.lines: list[dict[str, Any]] = []
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        os.chmod(self.path, 0o600)
        self.server.listen(4)
        hand_over(self.process, channel, self.server.fileno())
        self.record = {"pid": self.pid, "sessionId": session, "cwd": "/work",
                       "procStart": proc_start(self.pid), "version": "2.1.332",
                       "peerProtocol": 1, "peerFeatures": ["notify_idle"],
                       "kind": "interactive", "entrypoint": "cli",
                       "messagingSocketPath": self.path, "name": "work-1a", "status": "idle"}
        self.write()
        digest = hashlib.sha256(os.path.realpath(self.path).encode()).hexdigest()
        key = self.folder / f"{self.pid}.{digest}.key"
        key.write_text(json.dumps({"peerToken": TOKEN}))
        key.chmod(0o600)
        threading.Thread(target=self.serve, daemon=True).start()

    @property
    def record_path(self) -> Path:
        return self.folder / f"{self.pid}.json"

    def write(self, **changes: Any) -> None:
        self.record_path.write_text(json.dumps({**self.record, **changes}))
        self.record_path.chmod(0o644)  # as Claude Code writes it

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
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(30)
        if self.process.stdout is not None:
            self.process.stdout.close()


class Trap:
    """A socket a forged record names: it keeps whatever reaches it."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
        self.path = str(path)
        self.lines: list[dict[str, Any]] = []
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(self.path)
        os.chmod(self.path, 0o600)
        self.server.listen(4)
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        for lines in accepted_lines(self.server):
            self.lines += lines

    def close(self) -> None:
        self.server.close()
