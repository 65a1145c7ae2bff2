"""Qwen Code's bridge: mailslot's agents as targets of Qwen Code's own cross-session
messaging (``send_message``, ``list_agents``). docs/qwen-peers.md, "The bridge", says
how; loaded only by ``mailslot bridge qwen`` and by ``doctor``'s look at a running
bridge.

Each listed agent is an ``external`` record in Qwen's registry (the kind Qwen documents
for programs that take part without being a Qwen session), with a socket and a token of
its own. A Qwen session's ``send_message`` to it connects with that token first (a
connection without it is dropped); the sender is bound by the kernel's peer pid, that
pid's own checked record and its session id, never by the frame's claims. Every
message gets Qwen's receipt back (``delivered``, or ``refused`` with mailslot's reason).
"""

from __future__ import annotations

import os

from ...core import jsontext
from . import HOST, sessions_folder

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from ...wake.peer_records import Peer

BRIDGE_MARK = "mailslotBridge"
"""The key a bridge's record carries (``{"agent": …, "mailbox": …}``); Qwen ignores
unknown keys (its docs)."""

_MSG_ID = r"\A[A-Za-z0-9][A-Za-z0-9_-]{0,63}\Z"


class Frame:
    """One user message a session's ``send_message`` wrote."""

    __slots__ = ("msg_id", "reply_to", "reply_token", "text")

    def __init__(self, text: str, msg_id: str | None, reply_to: str | None,
                 reply_token: str | None) -> None:
        self.text = text
        self.msg_id = msg_id
        self.reply_to = reply_to
        self.reply_token = reply_token


class QwenBridge:
    """What :mod:`mailslot.frontends.bridge_server` needs of Qwen Code. One object per
    target process: it keeps the token of the record it announced."""

    host = HOST.name
    tool = "send_message"
    mark = BRIDGE_MARK
    registry = staticmethod(sessions_folder)

    def __init__(self) -> None:
        self.token = ""

    @staticmethod
    def problem(env: Mapping[str, str]) -> str | None:
        folder = sessions_folder(env)
        if not os.path.isdir(folder):
            return f"{folder} does not exist: no Qwen Code session ran here yet"
        return None

    @staticmethod
    def socket_folder(env: Mapping[str, str]) -> str:
        from .cross_session import socket_folder

        return socket_folder(env)

    def announce(self, agent: str, socket: str, mailbox: str, env: Mapping[str, str]) -> str:
        """Write this process's ``external`` record listing ``agent`` (0600, as Qwen
        writes its own; replaced atomically); return its path."""
        import secrets
        import time
        import uuid

        from ...core.durable import replace_file
        from .cross_session import SCHEMA, pid_ns, proc_start

        pid = os.getpid()
        self.token = secrets.token_hex(32)
        record = {"schemaVersion": SCHEMA, "pid": pid, "procStart": proc_start(pid),
                  "pidNs": pid_ns(), "sessionId": str(uuid.uuid4()), "cwd": os.getcwd(),
                  "name": agent, "startedAt": int(time.time() * 1000), "qwenVersion": None,
                  "kind": "external", "ipcPath": socket, "ipcToken": self.token,
                  BRIDGE_MARK: {"agent": agent, "mailbox": mailbox}}
        path = os.path.join(sessions_folder(env), f"{pid}.json")
        replace_file(path, jsontext.dumps(record), mode=0o600)
        return path

    def admit(self, lines: Sequence[str]) -> list[str]:
        """The lines after a first line that is an auth line with this record's token;
        ``DoorError`` for a connection without it (Qwen drops those silently too)."""
        import hmac

        from ...wake.line_socket import DoorError

        try:
            first = jsontext.loads(lines[0]) if lines else None
        except ValueError:
            first = None
        token = first.get("token") if isinstance(first, dict) else None
        if not (isinstance(first, dict) and first.get("type") == "auth"
                and isinstance(token, str) and self.token
                and hmac.compare_digest(token, self.token)):
            raise DoorError("a connection without this record's token")
        return list(lines[1:])

    @staticmethod
    def live(env: Mapping[str, str]) -> list[Peer]:
        """Every live Qwen Code session's record (not an external one)."""
        from ...wake.peer_records import live_records

        return [_peer(r) for _, r in live_records(sessions_folder(env), _checked)
                if r.get("kind") != "external"]

    @staticmethod
    def bridges(mailbox: str, env: Mapping[str, str]) -> list[tuple[str, int]]:
        """The agents live bridges of ``mailbox`` list, with their pids."""
        from ...wake.peer_records import bridges

        return bridges(sessions_folder(env), _checked, BRIDGE_MARK, mailbox)

    @staticmethod
    def sender(pid: int, env: Mapping[str, str]) -> Peer:
        """The session of the Qwen Code process ``pid`` (the connection's peer pid):
        its own record, every check of :func:`checked_record` passed."""
        from ...wake.line_socket import DoorError
        from .cross_session import checked_record

        record = checked_record(sessions_folder(env), pid)
        if record.get("kind") == "external" or BRIDGE_MARK in record:
            raise DoorError(f"process {pid} is not a Qwen Code session")
        return _peer(record)

    @staticmethod
    def frame(line: str) -> Frame | None:
        """The message in one line (``None``: a line that carries none). Raises
        ``DoorError`` for a line no ``send_message`` writes."""
        import re

        from ...wake.line_socket import DoorError

        try:
            data = jsontext.loads(line)
        except ValueError:
            raise DoorError("a line that is not JSON") from None
        if not isinstance(data, dict) or data.get("type") in ("auth", "control"):
            return None
        message = data.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if data.get("type") != "user" or not isinstance(content, str) or not content:
            raise DoorError("a line that is not a user message with text")
        msg_id, sender, token = data.get("msgId"), data.get("from"), data.get("replyToken")
        return Frame(content,
                     msg_id if isinstance(msg_id, str) and re.match(_MSG_ID, msg_id) else None,
                     sender if isinstance(sender, str) and os.path.isabs(sender) else None,
                     token if isinstance(token, str) and token else None)

    @staticmethod
    def refusal(frame: Frame, ours: str, reason: str) -> list[dict[str, Any]]:
        """The receipt that tells the sending session its message was not delivered."""
        return _receipt(frame, ours, "refused", reason)

    @staticmethod
    def delivered(frame: Frame, ours: str) -> list[dict[str, Any]]:
        """The receipt that settles the sending session's ledger: delivered as mail."""
        return _receipt(frame, ours, "delivered", "Delivered as mailslot mail.")


def _receipt(frame: Frame, ours: str, status: str, reason: str) -> list[dict[str, Any]]:
    import uuid

    from .cross_session import MSG_V

    return [{"msgV": MSG_V, "type": "auth", "token": frame.reply_token},
            {"msgV": MSG_V, "msgId": str(uuid.uuid4()), "type": "control",
             "action": "delivery_status", "status": status, "origMsgId": frame.msg_id,
             "from": ours, "reason": reason}]


def _checked(folder: str, pid: int) -> dict[str, Any]:
    """Qwen Code's own checks of a record (loaded only once a record is read)."""
    from .cross_session import checked_record

    return checked_record(folder, pid)


def _peer(record: Mapping[str, Any]) -> Peer:
    from ...wake.peer_records import peer

    return peer(record, "ipcPath")


def bridge() -> QwenBridge:
    """Mailslot's agents as ``send_message`` targets (docs/qwen-peers.md)."""
    return QwenBridge()
