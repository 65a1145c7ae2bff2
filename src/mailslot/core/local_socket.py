"""This user's local sockets: where a per-machine helper process of a PostgreSQL store
listens, and the checks that decide whether either end may trust the other.

Two such helpers serve one key (the store's address, ``HOME``, libpq settings and the
Python running mailslot, :func:`key_of`): the hook relay (:mod:`mailslot.frontends.hooks.relay`)
and the notification hub (:mod:`mailslot.backends.postgres.pg_hub`). Each listens on
``KIND-CRC.sock`` in this user's private folder (:func:`folder_of`) and holds
``KIND-CRC.lock`` while it runs. A client trusts one only when the folder is this
user's own 0700 folder and the socket this user's socket with no permission for
anyone else (:func:`private`), and the process at the other end is this user's
(:func:`peer_of`, Linux ``SO_PEERCRED``); a server answers only this user's processes
asking with its own key. Frames both ways are one JSON object a line (:func:`send`,
:class:`Frames`): text inside a frame can never end it.

On the hook path, so it loads only ``_socket`` (not ``socket``, whose enums cost a
millisecond), ``stat`` and mailslot's JSON; what only a server does (:func:`hold`,
:func:`listen`) imports the rest when called, and its accept loop is a module apart
(:mod:`mailslot.core.accept_loop`).
"""

from __future__ import annotations

import _socket
import os
import sys
from stat import S_ISDIR, S_ISSOCK

from . import jsontext
from .errors import UnsafePath

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from collections.abc import Mapping
    from typing import Any

OFF_SWITCH = "MAILSLOT_RELAY"
"""``MAILSLOT_RELAY=0``: no relay and no hub; every process connects by itself."""
FRAME_LIMIT = 16 << 20
"""No frame on these sockets is longer (a hook's input is at most 8 MiB)."""


class Place:
    """Where one helper of one kind (``relay``, ``hub``) for one key lives."""

    __slots__ = ("absent", "base", "folder", "key")

    def __init__(self, folder: str, key: str, kind: str) -> None:
        self.folder = folder
        self.key = key
        self.base = os.path.join(folder, f"{kind}-{_crc(key):08x}")
        self.absent = False  # set when none listened: the client may start one

    @property
    def socket(self) -> str:
        return self.base + ".sock"


def place(kind: str, location: str, env: Mapping[str, str]) -> Place | None:
    """The ``kind`` helper for ``location``, or ``None``: not a PostgreSQL store,
    switched off (:data:`OFF_SWITCH`), or a system without Unix sockets or
    ``SO_PEERCRED``."""
    if not location.startswith(("postgresql://", "postgres://")) or env.get(OFF_SWITCH) == "0":
        return None
    if not (hasattr(_socket, "AF_UNIX") and hasattr(_socket, "SO_PEERCRED")):
        return None
    return Place(folder_of(env), key_of(location, env), kind)


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


def private_folder(folder: str) -> bool:
    """Is ``folder`` a real folder (no link) of this user's that no one else may
    enter, list or write?"""
    found = os.lstat(folder)
    return S_ISDIR(found.st_mode) and found.st_uid == os.geteuid() \
        and not found.st_mode & 0o077


def private(folder: str, socket: str) -> bool:
    """Is ``folder`` this user's own 0700 folder and ``socket`` this user's socket
    that no one else may open? (``lstat``: a link counts as neither.)"""
    if not private_folder(folder):
        return False
    found = os.lstat(socket)
    return S_ISSOCK(found.st_mode) and found.st_uid == os.geteuid() \
        and not found.st_mode & 0o077


def peer_of(sock: _socket.socket) -> tuple[int, int]:
    """The pid and user id of the process at the other end, as the kernel saw them at
    ``connect`` (Linux ``SO_PEERCRED``: pid, uid, gid as three native ints)."""
    raw = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
    return int.from_bytes(raw[0:4], sys.byteorder), int.from_bytes(raw[4:8], sys.byteorder)


def send(sock: _socket.socket, frame: Mapping[str, Any]) -> None:
    """One frame: a JSON object on one line."""
    sock.sendall(jsontext.dumps(frame).encode("utf-8", "surrogatepass") + b"\n")


class Frames:
    """The frames arriving on a socket, one JSON object a line, none longer than
    ``limit`` bytes (``read``: bytes already taken from the socket)."""

    def __init__(self, sock: _socket.socket, read: bytes = b"",
                 limit: int = FRAME_LIMIT) -> None:
        self._sock, self._limit = sock, limit
        self._buffer = bytearray()
        self._lines: list[bytes] = []  # whole lines read, the next one last
        self._take(read)

    def _take(self, chunk: bytes) -> None:
        """Add ``chunk``: whole lines go to the list, the rest stays in the buffer (one
        copy of each byte, however slowly a long line arrives)."""
        self._buffer += chunk
        if b"\n" in chunk:
            *lines, rest = bytes(self._buffer).split(b"\n")
            self._lines[:0] = reversed(lines)  # a burst of short frames is split once
            self._buffer = bytearray(rest)

    def next(self) -> dict[str, Any] | None:
        """The next frame; ``None`` at the end, for a line past the limit, or for
        anything but a JSON object. A timeout raises ``TimeoutError`` and keeps what was
        read for the next call."""
        while not self._lines:
            if len(self._buffer) > self._limit:
                return None
            chunk = self._sock.recv(1 << 16)
            if not chunk:
                return None
            self._take(chunk)
        line = self._lines.pop()
        if len(line) > self._limit:
            return None
        try:
            frame = jsontext.loads(line)
        except (ValueError, RecursionError):
            return None
        return frame if isinstance(frame, dict) else None


def connect(where: Place, seconds: float) -> _socket.socket | None:
    """A connection to the helper at ``where`` (timeout ``seconds``), if it is one this
    process may trust (module docstring); ``None`` else, with ``where.absent`` set
    when none listens there (the caller may start one)."""
    try:
        if not private(where.folder, where.socket):
            return None
    except FileNotFoundError:
        where.absent = True
        return None
    except OSError:
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(seconds)
        sock.connect(where.socket)
        if peer_of(sock)[1] == os.geteuid():
            return sock
    except (ConnectionRefusedError, FileNotFoundError):
        where.absent = True  # a socket left by a helper that died
    except OSError:
        pass
    sock.close()
    return None


def begin(kind: str, idle: float, env: Mapping[str, str]) -> tuple[Place, str, float] | int:
    """The start of a ``kind`` helper's process: its place, its store's address (from
    ``MAILSLOT_KIND_STORE``) and its idle time (``MAILSLOT_KIND_IDLE_SECONDS``, else
    ``idle``), its lock held (:func:`hold`); or its exit status: 2 with no PostgreSQL
    store named, 0 when another helper serves this key."""
    location = env.get(f"MAILSLOT_{kind.upper()}_STORE", "")
    where = place(kind, location, env)
    if where is None:
        print(f"mailslot {kind}: no PostgreSQL store to serve", file=sys.stderr)
        return 2
    raw = env.get(f"MAILSLOT_{kind.upper()}_IDLE_SECONDS", "")
    idle = float(raw) if raw.replace(".", "", 1).isdigit() else idle
    try:
        lock = hold(where)
    except (OSError, UnsafePath) as exc:  # a planted lock: nothing is served through it
        print(f"mailslot {kind}: cannot take its lock ({exc})", file=sys.stderr)
        return 1
    return 0 if lock is None else (where, location, idle)


def hold(where: Place) -> int | None:
    """The helper's lock, taken (a descriptor to keep open while serving), making the
    private folder if need be; ``None``: another helper serves this key."""
    import fcntl

    from .durable import open_file

    os.makedirs(where.folder, mode=0o700, exist_ok=True)
    lock = open_file(where.base + ".lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(lock)
        return None
    return lock


def listen(where: Place) -> socket.socket | None:
    """The listening socket (under :func:`hold`'s lock), 0600 from birth (umask),
    replacing one a dead helper left, for :func:`~mailslot.core.accept_loop.serve`;
    ``None`` when the folder is not this user's own 0700 folder."""
    import contextlib
    import socket

    with contextlib.suppress(FileNotFoundError):
        os.unlink(where.socket)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    before = os.umask(0o177)
    try:
        listener.bind(where.socket)
    finally:
        os.umask(before)
    if not private(where.folder, where.socket):
        listener.close()
        with contextlib.suppress(OSError):
            os.unlink(where.socket)
        return None
    listener.listen(64)
    return listener


def start(where: Place, module: str, variable: str, location: str,
          env: Mapping[str, str]) -> None:
    """Start the helper ``python -m module`` for ``location`` if none listened at
    ``where`` (spawn-and-go), the address in its environment as ``variable`` (never in
    ``ps``), without the caller's agent and credential. Two started at once: the second
    finds the first's lock and exits."""
    if not where.absent:
        return
    from .detached import spawn

    child = {k: v for k, v in env.items()
             if k not in ("MAILSLOT_AGENT", "MAILSLOT_CREDENTIAL", "MAILSLOT_PEER_OF",
                          "MAILSLOT_BINDING")}
    child[variable] = location
    try:
        os.makedirs(where.folder, mode=0o700, exist_ok=True)
    except OSError:
        return
    spawn([sys.executable, "-m", module], child, where.base + ".log")


def trusted_peer(sock: _socket.socket) -> bool:
    """Is the process at the other end of a server's connection this user's?"""
    try:
        return peer_of(sock)[1] == os.geteuid()
    except OSError:
        return False
