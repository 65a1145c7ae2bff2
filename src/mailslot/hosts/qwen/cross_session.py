"""Qwen Code's own cross-session door, as a client: a live session's record and socket,
every check passed (:func:`find_door`), a notice handed over (:meth:`Door.knock`) and
its receipt heard (docs/qwen-peers.md). Used by the ``qwen-peer`` wake (:mod:`.wake`)
and, for its check of a record, by the bridge (:mod:`.bridge`); a hook never loads it.

Mailslot presents the record's own ``ipcToken`` and asserts nothing about itself (no
``fromMode``): Qwen then delivers the notice only where the person set
``agents.crossSessionInbound`` to ``"accept"``, holds it for the person by default, and
refuses it with ``"refuse"``. It never uses a controller token (Qwen tells the model to
treat those as its user's own words) nor a session's own child token: a wake notice is
never the user speaking, nor a process the session started.
"""

from __future__ import annotations

import os

from ...core import jsontext
from . import sessions_folder

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

SCHEMA = 1
"""The registry record's ``schemaVersion`` mailslot reads (a higher one: fail loudly)."""
MSG_V = 1
DOOR_SINCE = "0.23.3"
"""The first Qwen Code with cross-session messaging (its docs; proven on 0.24.4)."""
RECEIPT_SECONDS = 5.0
"""How long a notice waits for its receipt: Qwen answers every outcome (seen within a
second on an idle 0.24.4)."""
STATUSES = ("delivered", "held", "refused", "misaddressed", "dropped", "denied", "expired")
_TOKEN = r"\A[0-9a-f]{64}\Z"


def proc_start(pid: int) -> str | None:
    """``<boot id>:<start ticks>``: how Qwen's records name a process's start."""
    from ...core.processes import start_ticks

    ticks = start_ticks(pid)
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as file:
            boot = file.read().strip()
    except OSError:
        return None
    return None if ticks is None else f"{boot}:{ticks}"


def pid_ns() -> int | None:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None


class Door:
    """One live Qwen Code session's inbox socket, checked (:func:`find_door`)."""

    __slots__ = ("pid", "session", "socket", "token", "version")

    def __init__(self, pid: int, session: str, version: str, socket: str, token: str) -> None:
        self.pid = pid
        self.session = session
        self.version = version
        self.socket = socket
        self.token = token

    def frames(self, text: str, answers_to: str, reply_token: str, msg_id: str
               ) -> list[dict[str, Any]]:
        """The auth line (the record's token), then one user message bound to this
        session; no ``fromMode``: mailslot claims no review mode."""
        return [{"msgV": MSG_V, "type": "auth", "token": self.token},
                {"msgV": MSG_V, "msgId": msg_id, "type": "user", "from": answers_to,
                 "replyToken": reply_token, "fromName": "mailslot",
                 "toSessionId": self.session, "priority": "next",
                 "message": {"role": "user", "content": text}}]

    def knock(self, text: str, timeout: float) -> str | None:
        """Hand ``text`` to the session; its receipt's status (``delivered``,
        ``held``, ``refused``, ``misaddressed``, ``dropped``) or ``None`` when none
        came in :data:`RECEIPT_SECONDS`. Raises ``DoorError``."""
        import secrets
        import uuid

        from ...wake.line_socket import Listener, send_lines

        msg_id = str(uuid.uuid4())
        reply_token = secrets.token_hex(32)
        with Listener(_answer_socket(msg_id)) as listener:
            send_lines(self.socket, self.frames(text, listener.path, reply_token, msg_id),
                       min(timeout, 10.0))
            lines = listener.answers(RECEIPT_SECONDS)
        return receipt_status(lines, msg_id, reply_token) if lines else None


def receipt_status(lines: list[str], msg_id: str, token: str) -> str:
    """The status a receipt gives for ``msg_id``, its auth line carrying ``token``;
    ``DoorError`` for anything else (``UnknownShape``: the protocol changed)."""
    from ...wake.line_socket import DoorError, UnknownShape

    try:
        data = [jsontext.loads(line) for line in lines]
    except ValueError:
        raise UnknownShape("the session answered something that is not JSON") from None
    if not data or not isinstance(data[0], dict) or data[0].get("type") != "auth" \
            or data[0].get("token") != token:
        raise DoorError("an answer without our token: not the session's receipt")
    for item in data[1:]:
        if (isinstance(item, dict) and item.get("type") == "control"
                and item.get("action") == "delivery_status"
                and item.get("origMsgId") == msg_id and item.get("status") in STATUSES):
            return str(item["status"])
    raise UnknownShape("the session answered in a shape qwen-peer does not know "
                       f"(docs/qwen-peers.md): {lines[-1][:120]!r}")


def _answer_socket(msg_id: str) -> str:
    """Where the receipt comes: a socket of ours in :func:`socket_folder`."""
    return os.path.join(socket_folder(os.environ), f"{os.getpid()}-{msg_id[:8]}.sock")


def socket_folder(env: Mapping[str, str]) -> str:
    """A 0700 folder of this user's for mailslot's own sockets (receipts, the bridge's
    targets), short enough for a socket path: under ``$XDG_RUNTIME_DIR`` or ``/tmp``."""
    import contextlib

    from ...core.local_socket import private_folder
    from ...wake.line_socket import DoorError

    base = env.get("XDG_RUNTIME_DIR") or ""
    if not base or len(base) > 60 or not os.path.isdir(base):
        base = "/tmp"
    path = os.path.join(base, f"mailslot-qwen-{os.geteuid()}")
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    if not private_folder(path):
        raise DoorError(f"{path} is not a private folder of this user's (mode 0700)")
    return path


def find_door(session: str, env: Mapping[str, str]) -> Door:
    """The door of the live Qwen Code session ``session`` (its hooks' session id).

    Only a record ``<pid>.json`` counts that :func:`checked_record` passes and that
    names ``session``; its socket must be one this user owns, 0600, in a folder no one
    else may enter, held by that process. Raises ``DoorError`` naming the first check
    that failed (``UnknownShape`` for a record of a schema mailslot does not know)."""
    from ...wake.line_socket import DoorError, UnknownShape
    from ...wake.peer_records import record_names

    folder = sessions_folder(env)
    refused: DoorError | None = None
    for name in record_names(folder):
        try:
            record = checked_record(folder, int(name[:-5]))
        except UnknownShape:
            raise
        except DoorError as exc:
            refused = refused or exc
            continue
        if record.get("sessionId") != session or record.get("kind") == "external":
            continue
        return _door(session, record)
    why = f" (a record was refused: {refused})" if refused is not None else ""
    raise DoorError(f"no live record of Qwen Code session {session} in {folder}{why}")


def checked_record(folder: str, pid: int) -> dict[str, Any]:
    """``<pid>.json`` of ``folder``: a regular file of this user's that no one else may
    read or write, naming ``pid``, of schema :data:`SCHEMA`, in this pid namespace,
    that process running since the start it names. Raises ``DoorError``."""
    from ...wake.line_socket import DoorError, UnknownShape
    from ...wake.peer_records import own_record

    path, record = own_record(folder, pid, private=True)
    if record.get("schemaVersion") != SCHEMA:
        raise UnknownShape(f"{path} has schemaVersion {record.get('schemaVersion')!r}, not "
                           f"{SCHEMA}: Qwen Code changed its registry (docs/qwen-peers.md)")
    if record.get("pidNs") != pid_ns():
        raise DoorError(f"{path} is of another pid namespace")
    if record.get("procStart") != proc_start(pid):
        raise DoorError(f"{path} is stale: pid {pid} is not the process it names")
    if not isinstance(record.get("sessionId"), str) or not record["sessionId"]:
        raise DoorError(f"{path} names no session")
    return record


def _door(session: str, record: Mapping[str, Any]) -> Door:
    """The door one checked record of ``session`` names."""
    import re

    from ...core.processes import command_line, holds_socket
    from ...wake.choice import version_numbers
    from ...wake.line_socket import DoorError, own_folder, own_socket

    pid, version = int(record["pid"]), str(record.get("qwenVersion") or "")
    argv = command_line(pid)
    if argv is not None and not any("@qwen-code/qwen-code" in a or
                                    os.path.basename(a.split(" ")[0]) == "qwen" for a in argv):
        raise DoorError(f"process {pid} is not Qwen Code (its command line names another "
                        "program)")
    if version_numbers(version) < version_numbers(DOOR_SINCE):
        raise DoorError(f"Qwen Code {version or '?'} is older than {DOOR_SINCE}")
    sock, token = record.get("ipcPath"), record.get("ipcToken")
    if not isinstance(sock, str) or not os.path.isabs(sock):
        raise DoorError(f"session {session} has no inbox socket (cross-session messaging "
                        "is off there, or its inbox is not bound yet)")
    if not isinstance(token, str) or not re.match(_TOKEN, token):
        raise DoorError(f"session {session}'s record has no token of the known shape")
    own_folder(os.path.dirname(sock))
    own_socket(sock)
    if holds_socket(pid, sock) is False:
        raise DoorError(f"process {pid} does not listen on {sock}")
    return Door(pid, session, version, sock, token)
