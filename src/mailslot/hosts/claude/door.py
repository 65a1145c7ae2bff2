"""Claude Code's cross-session door, as a client: finding a live session's socket in its
registry of live sessions, every check passed (:func:`find_door`), handing it a notice
(:meth:`Door.knock`) and hearing its receipts (docs/claude-peers.md). Used by the
``claude-peer`` wake (:mod:`.wake`) and, for its check of a record, by the bridge; a hook
never loads it.
"""

from __future__ import annotations

import os

from ...core import jsontext
from . import PEER_PROTOCOL, PEER_SINCE, sessions_folder

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

RECEIPT_SECONDS = 3.0
"""How long a notice handed to the door waits for a hold or refusal (an accepted one
gets no answer at all: docs/claude-peers.md, "Receipts"). A busy 2.1.332 TUI was seen
to take over a second to hold one."""
_STATUS = {"held": "held", "denied": "denied", "expired": "expired",
           "delivered": "delivered", "refused": "refused", "dropped": "dropped"}


class Door:
    """One live Claude Code session's cross-session socket, checked (:func:`find_door`)."""

    __slots__ = ("idle", "pid", "record", "session", "socket", "token", "version")

    def __init__(self, pid: int, session: str, version: str, socket: str,
                 token: str | None, record: str = "", idle: bool = False) -> None:
        self.pid = pid
        self.session = session
        self.version = version
        self.socket = socket
        self.token = token  # the key file's peerToken (the auth line), if it has one
        self.record = record  # its registry file
        self.idle = idle  # its record said idle when it was found

    def busy(self) -> bool:
        """Has the session, idle before, started a turn (its record says busy)? A turn
        starts only for a message it took, after it would have sent any hold."""
        from ...wake.line_socket import DoorError, own_file

        try:
            record = jsontext.loads(own_file(self.record, private=False))
            return bool(record.get("status") == "busy")
        except (DoorError, ValueError, AttributeError):
            return False

    def frames(self, text: str, answers_to: str, msg_id: str) -> list[dict[str, Any]]:
        """The lines a notice is sent as: the auth line (when there is a key), then one
        user message bound to this session (a socket of another session drops it)."""
        auth = [] if self.token is None else [{"type": "auth", "token": self.token}]
        return [*auth, {"type": "user", "message": {"role": "user", "content": text},
                        "priority": "next", "from": f"uds:{answers_to}", "msgV": 1,
                        "msg_id": msg_id, "session_id": self.session}]

    def knock(self, text: str, timeout: float,
              later: Callable[[str], None] | None = None) -> str | None:
        """Hand ``text`` to the session; what it answered within
        :data:`RECEIPT_SECONDS` (``held``, ``refused``, ``dropped``...; ``None``: no
        answer, which is how it takes a message). Raises ``DoorError``. A held notice's
        later answer (``delivered``, ``denied``, ``expired``, ``dropped``) is handed to
        ``later`` when it comes, by :func:`_follow`."""
        import uuid

        from ...wake.line_socket import Listener, send_lines

        msg_id = str(uuid.uuid4())
        # receipts go only to a socket in the session's own socket folder, served by the
        # process that sent the message (docs/claude-peers.md)
        ours = os.path.join(os.path.dirname(self.socket),
                            f"mailslot-{os.getpid()}-{msg_id[:8]}.sock")
        listener = Listener(ours)
        try:
            send_lines(self.socket, self.frames(text, ours, msg_id), min(timeout, 10.0))
            lines = listener.answers(RECEIPT_SECONDS, self.busy if self.idle else None)
            answer = _status(lines, msg_id) if lines else None
        except BaseException:
            listener.close()
            raise
        if answer == "held" and later is not None:
            _follow(listener, msg_id, later)
        else:
            listener.close()
        return answer


HELD_SECONDS = 24 * 3600.0
"""How long the process that handed over a held notice keeps listening for the person's
decision (a receipt comes to the socket of the process that sent the message, and only
while it listens there: docs/claude-peers.md, "Receipts")."""
MAX_FOLLOWED = 100
"""Held notices followed at once by one process (Claude Code holds at most 100 a
session); past that a held notice's later answer is not listened for."""
_DECISIONS = ("delivered", "denied", "expired", "refused", "dropped")
_followed: list[object] = []


def _follow(listener: Any, msg_id: str, later: Callable[[str], None]) -> None:
    """Listen on, in a thread of its own, for the decision about held notice
    ``msg_id``; hand it to ``later``, then close. Lost if this process ends first
    (the mail is in the inbox all the same; ``status`` keeps saying held)."""
    import atexit
    import threading
    import time

    from ...wake.line_socket import DoorError

    if len(_followed) >= MAX_FOLLOWED:
        listener.close()
        return
    _followed.append(listener)
    atexit.register(listener.close)  # no socket left behind by a process that stops

    def run() -> None:
        deadline = time.monotonic() + HELD_SECONDS
        try:
            while (left := deadline - time.monotonic()) > 0:
                lines = listener.answers(min(left, 60.0))
                try:
                    status = _status(lines, msg_id) if lines else None
                except DoorError:
                    continue  # not about this notice: not the decision
                if status in _DECISIONS:
                    later(status)
                    return
        except DoorError:
            return
        finally:
            _followed.remove(listener)
            listener.close()

    threading.Thread(target=run, name=f"claude-peer-held-{msg_id[:8]}", daemon=True).start()


def _status(lines: Sequence[str], msg_id: str) -> str:
    """The status a receipt gives for ``msg_id``; raises ``DoorError`` for any other
    shape (the protocol changed: fail loudly, never guess)."""
    from ...wake.line_socket import UnknownShape

    for line in lines:
        try:
            data = jsontext.loads(line)
        except ValueError:
            raise UnknownShape(f"the session answered something that is not JSON: "
                               f"{line[:80]!r}") from None
        if not (isinstance(data, dict) and data.get("type") == "control"
                and data.get("action") == "peer_message_status"
                and data.get("orig_msg_id") == msg_id and data.get("status") in _STATUS):
            raise UnknownShape("the session answered in a shape claude-peer does not know "
                               f"(docs/claude-peers.md): {line[:120]!r}")
        status = str(data["status"])
        return "refused" if data.get("status_detail") == "refused" else status
    raise UnknownShape("the session answered nothing readable")


def find_door(session: str, env: Mapping[str, str]) -> Door:
    """The door of the live Claude Code session ``session`` (the id its hooks recorded).

    Only a record ``<pid>.json`` naming that same pid counts: a regular file of this
    user's, opened without following a link, that no one else may write; its process
    running with the start time it names, started before the record was written, and
    Claude Code by its command line; speaking :data:`PEER_PROTOCOL`, at least
    :data:`PEER_SINCE`; its socket ``cc-socks/<pid>.sock`` in a folder of this user's
    no one else may write to, a private socket that process listens on. Raises
    ``DoorError`` saying which check failed (the first record of the session's that
    failed, when none passed)."""
    from ...wake.line_socket import DoorError, UnknownShape, own_file_and_stat
    from ...wake.peer_records import record_names

    folder = sessions_folder(env)
    refused: DoorError | None = None
    for name in record_names(folder):
        path = os.path.join(folder, name)
        try:
            raw, info = own_file_and_stat(path, private=False)
            record = jsontext.loads(raw)
        except (DoorError, ValueError):
            continue  # another session's record, unreadable or not ours: not this one
        if not isinstance(record, dict) or record.get("sessionId") != session:
            continue
        try:
            return _door(session, folder, path, record, info.st_mtime)
        except UnknownShape:
            raise
        except DoorError as exc:
            refused = refused or exc
    if refused is not None:
        raise refused
    raise DoorError(f"no live record of session {session} in {folder}")


def _door(session: str, folder: str, path: str, found: Mapping[str, Any],
          written: float) -> Door:
    """The door one record of ``session`` names, every check passed."""
    from ...core.processes import started_after
    from ...wake.choice import version_numbers
    from ...wake.line_socket import DoorError, UnknownShape
    from ...wake.peer_records import pid_of_record

    pid, version = found.get("pid"), str(found.get("version") or "")
    if not isinstance(pid, int) or pid != pid_of_record(os.path.basename(path)):
        raise DoorError(f"{path} names pid {pid!r}, not the pid of its own name")
    if not _running_since(pid, found.get("procStart")):
        raise DoorError(f"session {session}'s process {pid} is not running (a stale record)")
    if started_after(pid, written):
        raise DoorError(f"process {pid} started after {path} was written: it is not the "
                        "session that wrote it")
    if _is_claude(pid, version) is False:
        raise DoorError(f"process {pid} is not Claude Code (its command line names "
                        "another program)")
    if found.get("peerProtocol") != PEER_PROTOCOL:
        raise UnknownShape(f"session {session} speaks peerProtocol "
                           f"{found.get('peerProtocol')!r}, not {PEER_PROTOCOL}: Claude Code "
                           f"{version or '?'} changed its protocol (docs/claude-peers.md)")
    if version_numbers(version) < version_numbers(PEER_SINCE):
        raise DoorError(f"Claude Code {version or '?'} is older than {PEER_SINCE}")
    sock = found.get("messagingSocketPath")
    if not isinstance(sock, str) or not sock:
        raise DoorError(f"session {session} has no messaging socket (cross-session "
                        "messaging is off there)")
    _own_session_socket(pid, sock)
    return Door(pid, session, version, sock, _token(folder, pid, sock), path,
                found.get("status") == "idle")


_INTERPRETERS = frozenset({"node", "nodejs", "bun", "deno"})
_PLAIN_VERSION = r"\A\d+\.\d+\.\d+\Z"


def _is_claude(pid: int, version: str) -> bool | None:
    """Is process ``pid`` Claude Code, by its command line? Its program (or the script
    a JavaScript runtime runs) is named ``claude``, or is the plain version number the
    native installer names its binary by, or lies in the ``@anthropic-ai/claude-code``
    package. ``None``: ``/proc`` cannot tell (the record's other checks stand alone)."""
    import re

    from ...core.processes import command_line

    argv = command_line(pid)
    if argv is None:
        return None
    first = argv[0].split(" ")[0]
    programs = argv[:2] if os.path.basename(first) in _INTERPRETERS else argv[:1]
    names = {"claude", "claude.exe"}
    if re.match(_PLAIN_VERSION, version):
        names.add(version)
    for program in programs:
        if "/@anthropic-ai/claude-code/" in program:
            return True
        if {os.path.basename(program), os.path.basename(program.split(" ")[0])} & names:
            return True
    return False


def _own_session_socket(pid: int, sock: str) -> None:
    """``sock`` is where Claude Code keeps process ``pid``'s socket and that process
    listens there: ``.../cc-socks/<pid>.sock`` (or ``cc-socks-<uid>``), the folder this
    user's and writable by no one else, the socket this user's, 0600
    (docs/claude-peers.md)."""
    from ...core.processes import holds_socket
    from ...wake.line_socket import DoorError, own_folder, own_socket

    where, name = os.path.split(sock)
    if name != f"{pid}.sock" or os.path.basename(where) not in (
            "cc-socks", f"cc-socks-{os.geteuid()}"):
        raise DoorError(f"{sock} is not where Claude Code keeps process {pid}'s socket "
                        f"(a cc-socks folder, {pid}.sock)")
    own_folder(where)
    own_socket(sock)
    if holds_socket(pid, sock) is False:
        raise DoorError(f"process {pid} does not listen on {sock}")


def _running_since(pid: int, started: object) -> bool:
    """Is ``pid`` running, and (where ``/proc`` tells) since ``started``?"""
    from ...core.processes import start_ticks

    if os.path.isdir("/proc/self"):
        return start_ticks(pid) == str(started)
    from ...mail.presence import pid_alive  # no /proc here: the pid alone

    return pid_alive(pid)


def _token(folder: str, pid: int, sock: str) -> str | None:
    """The session's peer token from its 0600 key file, if there is one."""
    import hashlib

    from ...wake.line_socket import DoorError, own_file

    digest = hashlib.sha256(os.path.realpath(sock).encode("utf-8")).hexdigest()
    try:
        key = jsontext.loads(own_file(os.path.join(folder, f"{pid}.{digest}.key"),
                                      private=True, limit=4096))
    except (DoorError, ValueError):
        return None  # auth is optional on this platform (docs/claude-peers.md)
    token = key.get("peerToken") if isinstance(key, dict) else None
    return token if isinstance(token, str) and len(token) == 32 else None
