"""The one accept loop of this user's helpers (the hook relay, the notification hub):
a connection is read in the loop's own thread until its first line is whole, so a slow
or endless sender costs a bounded buffer and no thread, and only a whole first line
gets a thread of its own.

Apart from :mod:`mailslot.core.local_socket` (where the helpers live and whom they
trust), which the hook path loads: only a running helper loads this.
"""

from __future__ import annotations

import selectors
import threading
import time

from . import jsontext
from .local_socket import trusted_peer

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from collections.abc import Callable
    from typing import Any


class Door:
    """How a helper's socket takes connections (:func:`serve`): the first line (a
    hello or a request) at most ``line_bytes`` long, whole within ``hello_seconds``;
    at most ``connections`` open at once, counting those still saying their first
    line; the helper ends after ``idle`` seconds with none open."""

    __slots__ = ("connections", "hello_seconds", "idle", "line_bytes")

    def __init__(self, *, line_bytes: int, hello_seconds: float, connections: int,
                 idle: float) -> None:
        self.line_bytes, self.hello_seconds = line_bytes, hello_seconds
        self.connections, self.idle = connections, idle


class _Waiting:
    """A connection still saying its first line, read as it arrives (no thread)."""

    __slots__ = ("deadline", "read", "sock")

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock, self.deadline, self.read = sock, deadline, bytearray()


def serve(listener: socket.socket, door: Door,
          answer: Callable[[socket.socket, dict[str, Any] | None, bytes], None]) -> None:
    """Take connections on ``listener`` until ``door.idle`` seconds pass with none open:
    the one accept loop of the relay and the hub.

    Every connection is read in this thread until its first line is whole: another
    user's process is closed before a byte is read, a line past ``door.line_bytes`` or
    not whole within ``door.hello_seconds`` closes it, so a slow or endless sender
    costs a bounded buffer and no thread. A whole line goes to ``answer(sock, frame,
    rest)`` in a thread of its own (``frame``: the line as a JSON object, or ``None``;
    ``rest``: what followed it), and the socket is closed when it returns. With
    ``door.connections`` open, a new connection takes the place of the one waiting
    longest for its first line, or is closed at once when all are past it.
    """
    _AcceptLoop(listener, door, answer).run()


class _AcceptLoop:
    """:func:`serve`'s state: the connections still saying their first line (in this
    thread), and how many were handed to ``answer`` (each in a thread of its own)."""

    def __init__(self, listener: socket.socket, door: Door,
                 answer: Callable[[socket.socket, dict[str, Any] | None, bytes], None]
                 ) -> None:
        self.listener, self.door, self.answer = listener, door, answer
        self.waiting: dict[int, _Waiting] = {}
        self.answering = 0  # connections handed to ``answer`` and not yet done
        self.lock = threading.Lock()
        self.idle_since = time.monotonic()
        self.selector = selectors.DefaultSelector()

    def run(self) -> None:
        """Select until idle; every connection still waiting is closed at the end."""
        self.listener.setblocking(False)
        self.selector.register(self.listener, selectors.EVENT_READ)
        try:
            while True:
                now = time.monotonic()
                for fd in [fd for fd, item in self.waiting.items() if item.deadline <= now]:
                    self.drop(fd)
                with self.lock:
                    busy = bool(self.waiting) or self.answering > 0
                    left = self.door.idle - (now - self.idle_since)
                if not busy and left <= 0:
                    return
                soonest = min((item.deadline for item in self.waiting.values()),
                              default=now + 60)
                wait = min(soonest - now, self.door.idle if busy else left, 60.0)
                for key, _ in self.selector.select(max(wait, 0.01)):
                    if key.fileobj is self.listener:
                        self.take()
                    elif key.fd in self.waiting:
                        self.hear(key.fd)
                if self.waiting:
                    self.idle_since = time.monotonic()
        finally:
            for fd in list(self.waiting):
                self.drop(fd)
            self.selector.close()

    def answered(self, sock: socket.socket, frame: dict[str, Any] | None,
                 rest: bytes) -> None:
        """``answer`` in its own thread; then the socket is closed and counted done."""
        try:
            self.answer(sock, frame, rest)
        finally:
            sock.close()
            with self.lock:
                self.answering -= 1
                if not self.answering:
                    self.idle_since = time.monotonic()

    def drop(self, fd: int) -> None:
        gone = self.waiting.pop(fd)
        self.selector.unregister(gone.sock)
        gone.sock.close()

    def take(self) -> None:
        """A new connection: closed unless this user's and there is room for it."""
        try:
            sock, _ = self.listener.accept()
        except OSError:  # gone before it was taken, or no descriptor left: next time
            return
        with self.lock:
            full = len(self.waiting) + self.answering >= self.door.connections
        if not trusted_peer(sock) or (full and not self.waiting):
            sock.close()  # another user's process, or all busy: not one word
            return
        if full:
            self.drop(min(self.waiting, key=lambda fd: self.waiting[fd].deadline))
        sock.setblocking(False)
        self.waiting[sock.fileno()] = _Waiting(sock, time.monotonic() + self.door.hello_seconds)
        self.selector.register(sock, selectors.EVENT_READ)

    def hear(self, fd: int) -> None:
        """What arrived of a first line; a whole one is handed to :meth:`answered`."""
        item = self.waiting[fd]
        try:
            chunk = item.sock.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        item.read += chunk
        end = item.read.find(b"\n", len(item.read) - len(chunk))
        if not chunk or (end < 0 and len(item.read) > self.door.line_bytes) \
                or end > self.door.line_bytes:
            self.drop(fd)
            return
        if end < 0:
            return
        del self.waiting[fd]
        self.selector.unregister(item.sock)
        item.sock.setblocking(True)
        try:
            frame = jsontext.loads(bytes(item.read[:end]))
        except (ValueError, RecursionError):
            frame = None
        with self.lock:
            self.answering += 1
        threading.Thread(target=self.answered,
                         args=(item.sock, frame if isinstance(frame, dict) else None,
                               bytes(item.read[end + 1:])),
                         daemon=True).start()
