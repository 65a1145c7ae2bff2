"""Claude Code's bridge: mailslot's agents as targets of Claude Code's own cross-session
messaging (``SendMessage``). docs/claude-peers.md, "The bridge", says how; this module is
loaded only by ``mailslot bridge claude`` and by ``doctor``'s look at a running bridge.
"""

from __future__ import annotations

import os

from ...core import jsontext
from . import OWN_MESSAGING, PEER_PROTOCOL, PEER_SINCE, sessions_folder

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from ...wake.peer_records import Peer

BRIDGE_MARK = "mailslotBridge"
"""The key a bridge's registry record carries (``{"agent": …, "mailbox": …}``), so that
mailslot tells its own records from Claude Code's; Claude Code ignores it (seen)."""

_WRAPPER = r"\A<cross-session-message(?: [^>\n]*)?>\n(.*)\n</cross-session-message>\s*\Z"
"""How a real ``SendMessage`` wraps its text (seen, 2.1.332); compiled when used, so a
hook, which loads this module, does not load ``re``."""
_UUID = r"\A[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z"


class Frame:
    """One message a ``SendMessage`` wrote: its text (wrapper removed), its ``msg_id``
    and the ``from`` socket it named (``None``: none, or not a socket path)."""

    __slots__ = ("msg_id", "reply_to", "text")

    def __init__(self, text: str, msg_id: str | None, reply_to: str | None) -> None:
        self.text = text
        self.msg_id = msg_id
        self.reply_to = reply_to


class PeerBridge:
    """What the bridge (:mod:`mailslot.frontends.bridge_server`) needs of Claude Code: where its
    registry is, a record that lists a mailslot agent, how a frame reads, who sent it."""

    host = "claude"
    tool = OWN_MESSAGING
    mark = BRIDGE_MARK
    registry = staticmethod(sessions_folder)

    @staticmethod
    def problem(env: Mapping[str, str]) -> str | None:
        """Why no record can be written now (``None``: they can)."""
        folder = sessions_folder(env)
        if not os.path.isdir(folder):
            return (f"{folder} does not exist: no Claude Code {PEER_SINCE}+ session ran "
                    "here yet")
        return None

    @staticmethod
    def socket_folder(env: Mapping[str, str]) -> str:
        """A 0700 folder of the bridge's sockets: short enough for a socket path."""
        base = env.get("XDG_RUNTIME_DIR") or ""
        if not base or len(base) > 60 or not os.path.isdir(base):
            base = "/tmp"
        return os.path.join(base, f"mailslot-bridge-{os.geteuid()}")

    @staticmethod
    def announce(agent: str, socket: str, mailbox: str, env: Mapping[str, str]) -> str:
        """Write this process's record listing ``agent`` (0644, as Claude Code writes
        its own; replaced atomically) and return its path."""
        import time
        import uuid

        from ...core.processes import start_ticks

        pid = os.getpid()
        now = int(time.time() * 1000)
        record = {"pid": pid, "sessionId": str(uuid.uuid4()), "cwd": os.getcwd(),
                  "startedAt": now, "procStart": start_ticks(pid),
                  "peerProtocol": PEER_PROTOCOL, "kind": "interactive",
                  "messagingSocketPath": socket, "name": agent, "nameSource": "derived",
                  "nameSince": now, "status": "idle", "updatedAt": now,
                  "statusUpdatedAt": now, BRIDGE_MARK: {"agent": agent, "mailbox": mailbox}}
        from ...core.durable import replace_file

        path = os.path.join(sessions_folder(env), f"{pid}.json")
        replace_file(path, jsontext.dumps(record), mode=0o644)
        return path

    @staticmethod
    def live(env: Mapping[str, str]) -> list[Peer]:
        """Every live Claude Code session's record (not a bridge's): checked as
        :meth:`sender` checks one."""
        from ...wake.peer_records import live_records

        return [_peer(record) for _, record in live_records(sessions_folder(env), _checked)
                if BRIDGE_MARK not in record]

    @staticmethod
    def bridges(mailbox: str, env: Mapping[str, str]) -> list[tuple[str, int]]:
        """The agents live bridges of ``mailbox`` list, with their pids."""
        from ...wake.peer_records import bridges

        return bridges(sessions_folder(env), _checked, BRIDGE_MARK, mailbox)

    @staticmethod
    def sender(pid: int, env: Mapping[str, str]) -> Peer:
        """The session of the Claude Code process ``pid`` (the kernel's peer pid of a
        connection): its own record ``<pid>.json``, of this user, no one else may
        write, naming that pid, running since the start time it names, speaking
        :data:`PEER_PROTOCOL`. Raises ``DoorError`` saying which check failed."""
        from ...wake.line_socket import DoorError

        record = _checked(sessions_folder(env), pid)
        if BRIDGE_MARK in record:
            raise DoorError(f"process {pid} is not a Claude Code session")
        return _peer(record)

    @staticmethod
    def frame(line: str) -> Frame | None:
        """The message in one line of the door (``None``: a line that carries none, an
        auth line). Raises ``DoorError`` for a line no ``SendMessage`` writes."""
        import re

        from ...wake.line_socket import DoorError

        try:
            data = jsontext.loads(line)
        except ValueError:
            raise DoorError("a line that is not JSON") from None
        if not isinstance(data, dict):
            raise DoorError("a line that is not a JSON object")
        if data.get("type") == "auth":
            return None
        message = data.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if data.get("type") != "user" or not isinstance(content, str) or not content:
            raise DoorError("a line that is not a user message with text")
        msg_id = data.get("msg_id")
        sender = data.get("from")
        reply_to = sender[4:] if isinstance(sender, str) and sender.startswith("uds:") \
            else None
        wrapped = re.match(_WRAPPER, content, re.DOTALL)
        return Frame(wrapped.group(1) if wrapped else content,
                     msg_id if isinstance(msg_id, str) and re.match(_UUID, msg_id, re.I)
                     else None,
                     reply_to if reply_to and os.path.isabs(reply_to) else None)

    @staticmethod
    def refusal(frame: Frame, ours: str, reason: str) -> dict[str, Any]:
        """The receipt that tells the sending session its message was not delivered
        (the shape Claude Code itself sends for a refused one)."""
        import uuid

        return {"type": "control", "action": "peer_message_status", "status": "expired",
                "status_detail": "refused", "reason": reason, "from": f"uds:{ours}",
                "orig_msg_id": frame.msg_id, "msgV": 1, "msg_id": str(uuid.uuid4())}


def _checked(folder: str, pid: int) -> dict[str, Any]:
    """``<pid>.json`` in ``folder`` when it is this user's own, names ``pid`` running
    since its ``procStart`` and speaks :data:`PEER_PROTOCOL`; else ``DoorError`` saying
    why."""
    from ...wake.line_socket import DoorError
    from ...wake.peer_records import own_record
    from .door import _running_since  # only once a record is read: the doctor's look is raw

    path, record = own_record(folder, pid, private=False)
    if not _running_since(pid, record.get("procStart")):
        raise DoorError(f"{path} is stale: pid {pid} is not the process it names")
    if record.get("peerProtocol") != PEER_PROTOCOL:
        raise DoorError(f"{path} speaks peerProtocol {record.get('peerProtocol')!r}, "
                        f"not {PEER_PROTOCOL}")
    if not isinstance(record.get("sessionId"), str) or not record["sessionId"]:
        raise DoorError(f"{path} names no session")
    return record


def _peer(record: Mapping[str, Any]) -> Peer:
    from ...wake.peer_records import peer

    return peer(record, "messagingSocketPath")


def bridge() -> PeerBridge:
    """Mailslot's agents as ``SendMessage`` targets (docs/claude-peers.md, "The bridge"):
    what :meth:`~mailslot.host_registry.host.Host.bridge` hands out for Claude Code."""
    return PeerBridge()
