"""The hook's side of this machine's relay: a session hook on a PostgreSQL store asks
the relay (:mod:`.relay`) over a Unix socket instead of importing ``psycopg`` (about
370 ms) and connecting on every prompt of every agent.

On the hook path, so it loads only ``_socket`` (not ``socket``, whose enums cost a
millisecond), ``zlib`` and mailslot's foundation. The relay is trusted only when all
of these hold, else the hook answers directly, as it would with no relay
(docs/security.md, "The hook relay"):

* its folder is a real folder (no link) owned by this user with mode 0700, and its
  socket a socket owned by this user with no permission for anyone else (0600);
* the process at the other end is this user's (``SO_PEERCRED``; where the system has
  none, no relay is used);
* it serves the very store address, ``HOME``, libpq settings (``PG*``) and Python this
  hook would connect with (:func:`key_of`; the relay compares the whole key), so it
  reads with exactly the database role the hook's own connection would have;
* it answers within :data:`RELAY_SECONDS`.

Whatever the relay does before the hook's output is printed (refuses, dies, is slow,
sends garbage), the hook answers directly instead; once the output is printed nothing
is printed again, and a relay that dies before recording what was shown leaves it to
be shown again (redelivery, never loss).
"""

from __future__ import annotations

import _socket
import os
import sys
from stat import S_ISDIR, S_ISSOCK

from ..core import jsontext

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, TextIO

OFF_SWITCH = "MAILSLOT_RELAY"
"""``MAILSLOT_RELAY=0``: hooks answer directly and start no relay."""
RELAY_SECONDS = 1.0
"""How long a hook waits for the relay's answer before answering directly: the direct
path (driver import and a connection, about half a second) still fits in the hook's
bound of three seconds."""
FRAME_LIMIT = 16 << 20
"""No frame between hook and relay is longer (a hook's input is at most 8 MiB)."""
UNANSWERED = "\0unanswered"
""":func:`ask`'s answer when the relay did not answer: the hook answers directly."""


class Relay:
    """Where the relay for one store and set of libpq settings lives, and its key."""

    __slots__ = ("absent", "base", "folder", "key")

    def __init__(self, folder: str, key: str) -> None:
        self.folder = folder
        self.key = key
        self.base = os.path.join(folder, f"relay-{_crc(key):08x}")
        self.absent = False  # set when no relay listened: the hook may start one

    @property
    def socket(self) -> str:
        return self.base + ".sock"


def wanted(location: str, env: Mapping[str, str]) -> Relay | None:
    """The relay for ``location``, or ``None``: not a PostgreSQL store, switched off
    (``MAILSLOT_RELAY=0``), or a system without Unix sockets or ``SO_PEERCRED``."""
    if not location.startswith(("postgresql://", "postgres://")) or env.get(OFF_SWITCH) == "0":
        return None
    if not (hasattr(_socket, "AF_UNIX") and hasattr(_socket, "SO_PEERCRED")):
        return None
    return Relay(folder_of(env), key_of(location, env))


def folder_of(env: Mapping[str, str]) -> str:
    """``$XDG_RUNTIME_DIR/mailslot``, else ``/tmp/mailslot-UID`` (short enough for a
    socket's path, private to this user either way: checked, never assumed)."""
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return os.path.join(runtime, "mailslot")
    return os.path.join("/tmp", f"mailslot-{os.getuid()}")


def key_of(location: str, env: Mapping[str, str]) -> str:
    """Everything that decides which database role a connection gets: the store's
    address (with any password in it), ``HOME`` (``~/.pgpass``, ``~/.postgresql``), every
    libpq setting in the environment, and the Python running mailslot."""
    settings = sorted(f"{k}={v}" for k, v in env.items() if k.startswith("PG"))
    python = os.path.normpath(sys.executable)  # as a child started with it sees it
    return "\0".join([python, location, env.get("HOME", ""), *settings])


def _crc(text: str) -> int:
    import zlib

    return zlib.crc32(text.encode("utf-8", "surrogatepass"))


def private(folder: str, socket: str) -> bool:
    """Is ``folder`` this user's own 0700 folder and ``socket`` this user's socket
    that no one else may open? (``lstat``: a link counts as neither.)"""
    uid = os.getuid()
    place = os.lstat(folder)
    if not S_ISDIR(place.st_mode) or place.st_uid != uid or place.st_mode & 0o077:
        return False
    found = os.lstat(socket)
    return S_ISSOCK(found.st_mode) and found.st_uid == uid and not found.st_mode & 0o077


def peer_uid(sock: _socket.socket) -> int:
    """The user id of the process at the other end (Linux ``SO_PEERCRED``: pid, uid,
    gid as three native ints)."""
    raw = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    return int.from_bytes(raw[4:8], sys.byteorder)


def send(sock: _socket.socket, frame: Mapping[str, Any]) -> None:
    """One frame: a JSON object on one line."""
    sock.sendall(jsontext.dumps(frame).encode("utf-8", "surrogatepass") + b"\n")


class Frames:
    """The frames arriving on a socket, one JSON object a line."""

    def __init__(self, sock: _socket.socket) -> None:
        self._sock, self._buffer = sock, b""

    def next(self) -> dict[str, Any] | None:
        """The next frame; ``None`` at the end, or for anything but a JSON object."""
        while b"\n" not in self._buffer:
            if len(self._buffer) > FRAME_LIMIT:
                return None
            chunk = self._sock.recv(1 << 16)
            if not chunk:
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        try:
            frame = jsontext.loads(line)
        except (ValueError, RecursionError):
            return None
        return frame if isinstance(frame, dict) else None


def _connect(relay: Relay) -> _socket.socket | None:
    """A connection to the relay, if it is one this hook may trust (module docstring)."""
    try:
        if not private(relay.folder, relay.socket):
            return None
    except FileNotFoundError:
        relay.absent = True
        return None
    except OSError:
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(RELAY_SECONDS)
        sock.connect(relay.socket)
        if peer_uid(sock) == os.getuid():
            return sock
    except (ConnectionRefusedError, FileNotFoundError):
        relay.absent = True  # a socket left by a relay that died
    except OSError:
        pass
    sock.close()
    return None


def ask(relay: Relay, request: dict[str, Any], stdout: TextIO) -> str | None:
    """Have the relay answer the hook: print its output on ``stdout``, tell it whether
    the host took it, and return its problem line (``None``: none); or
    :data:`UNANSWERED`, with nothing printed, when the hook must answer itself."""
    sock = _connect(relay)
    if sock is None:
        return UNANSWERED
    try:
        frames = Frames(sock)
        try:
            send(sock, {**request, "key": relay.key})
            frame = frames.next()
        except OSError:  # slow (timed out), or gone
            return UNANSWERED
        if frame is None or "refused" in frame:
            return UNANSWERED
        if "out" not in frame:
            done = frame.get("done")
            return done if isinstance(done, str) else None
        out = frame["out"]
        if not isinstance(out, str):
            return UNANSWERED
        stdout.write(out)
        stdout.flush()
        from .host_io import reads

        try:  # printed: from here on, nothing is printed again, whatever the relay does
            send(sock, {"taken": reads(stdout)})
            sock.settimeout(None)  # recording takes what it takes: the hook's bound holds
            frame = frames.next()
        except OSError:
            return None
        done = frame.get("done") if frame is not None else None
        return done if isinstance(done, str) else None
    finally:
        sock.close()


def start(relay: Relay, location: str, env: Mapping[str, str]) -> None:
    """Start this machine's relay for ``location`` if none listened (spawn-and-go: the
    next hook uses it). Two hooks starting one at once start two, and the second finds
    the first's lock and exits."""
    if not relay.absent:
        return
    from ..mail.watchers import spawn

    child = {k: v for k, v in env.items()
             if k not in ("MAILSLOT_AGENT", "MAILSLOT_CREDENTIAL", "MAILSLOT_PEER_OF")}
    child["MAILSLOT_RELAY_STORE"] = location  # in the environment: no address in `ps`
    try:
        os.makedirs(relay.folder, mode=0o700, exist_ok=True)
    except OSError:
        return
    spawn([sys.executable, "-m", "mailslot.hooks.relay"], child, relay.base + ".log")
