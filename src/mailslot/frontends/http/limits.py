"""What a connection to ``serve --http`` may hold, and for how long; and a log that says
a repeated error a few times, not thousands.

uvicorn's HTTP/1.1 protocol (h11) bounds only the silence between two requests of a
kept-alive connection, and any byte restarts even that. A connection that sends nothing,
half a request head, or a head a byte at a time holds a file descriptor for as long as it
likes, and no credential is needed to open one: enough of them and the server has no
descriptor left for a real client. :class:`Bounded` is uvicorn's h11 protocol with the
missing bounds, each a deadline that bytes do not move:

- a whole request head within :data:`HEAD_SECONDS` of the connection's start or of the
  end of its previous answer;
- the request's body within :data:`BODY_SECONDS` of its head;
- at most ``cap`` connections at once (half the process's file limit, at most
  :data:`MAX_CONNECTIONS`), taken from a short listen queue (:func:`backlog`). At the
  cap a new connection makes room by closing the one that has waited longest with
  nothing being answered (idle or half-sent: never one whose request is being
  answered); when every one is being answered, the new one is closed.

A connection whose request has arrived whole is not bounded here: its answer takes what
it takes (the tools bound themselves), and the keep-alive wait after it is uvicorn's
(:data:`KEEP_ALIVE_SECONDS`). Only ``serve --http`` imports this module.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import time
from collections.abc import Callable
from typing import ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_SECONDS = 10.0
BODY_SECONDS = 30.0
KEEP_ALIVE_SECONDS = 5
MAX_CONNECTIONS = 512


def connection_cap() -> int:
    """Half the file descriptors this process may open (the rest are for the store, the
    threads and the log), at most :data:`MAX_CONNECTIONS`."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(8, min(MAX_CONNECTIONS, soft // 2))


def protocol(cap: int) -> type[asyncio.Protocol]:
    """The protocol class for uvicorn's ``http`` setting, taking ``cap`` connections."""
    return type("Bounded", (Bounded,), {"cap": cap})


def backlog(cap: int) -> int:
    """The listen backlog for ``cap`` connections. asyncio accepts up to the backlog in
    one go, each connection taking a descriptor before the cap can see it: a small
    backlog keeps a burst of connections from using up the descriptors the cap keeps."""
    return max(16, cap // 4)


class Bounded(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request to arrive whole, and a
    cap on connections (see the module's docstring)."""

    cap: ClassVar[int] = MAX_CONNECTIONS
    _deadline: asyncio.TimerHandle | None = None
    _phase: str | None = None  # "head" or "body": what the deadline waits for
    _waiting_since = 0.0  # when this connection began to wait for a request head

    def connection_made(  # type: ignore[override]
        self, transport: asyncio.Transport
    ) -> None:
        super().connection_made(transport)
        self._track()
        if len(self.connections) > self.cap:
            self._make_room()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._track()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._track()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def answering(self) -> bool:
        """Whether a request of this connection's is being answered."""
        return self.cycle is not None and not self.cycle.response_complete

    def awaiting_head(self) -> bool:
        """Nothing is being answered, and no whole request head has come."""
        return not self.answering() and self.conn.their_state is h11.IDLE

    def _track(self) -> None:
        """Set the deadline for what the connection waits for now. A deadline is set
        when the wait begins, never moved by the bytes that trickle in meanwhile."""
        if self.transport.is_closing():
            return
        if self.awaiting_head():
            phase: str | None = "head"
        elif self.conn.their_state is h11.SEND_BODY:
            phase = "body"
        else:  # the request is whole: its answer is the app's business
            phase = None
        if phase == self._phase:
            return
        self._disarm()
        self._phase = phase
        if phase == "head":
            self._waiting_since = self.loop.time()
        if phase is not None:
            seconds = HEAD_SECONDS if phase == "head" else BODY_SECONDS
            self._deadline = self.loop.call_later(seconds, self._close)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._phase = None

    def _close(self) -> None:
        self._disarm()
        if not self.transport.is_closing():
            self.transport.close()

    def _make_room(self) -> None:
        """Over the cap: close the connection that has waited longest with nothing being
        answered (idle, half a head, or a body no one reads: an answer came before it);
        this new one when every other is being answered."""
        waiting = [c for c in self.connections
                   if isinstance(c, Bounded) and c is not self and not c.answering()
                   and not c.transport.is_closing()]
        if waiting:
            min(waiting, key=lambda c: c._waiting_since)._close()
        else:
            self._close()


class Repeats(logging.Filter):
    """At most ``burst`` lines of one kind (logger, level, first line of the message)
    per ``window`` seconds, for warnings and worse. An error that repeats as fast as the
    event loop can fail (an ``accept`` with no descriptor left: thousands a second, each
    with a traceback) is said a few times, then counted: the first line of its kind in
    the next window says how many were left out."""

    def __init__(self, burst: int = 5, window: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.burst = burst
        self.window = window
        self.clock = clock
        self._seen: dict[tuple[str, int, str], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        now = self.clock()
        key = (record.name, record.levelno, str(record.msg).partition("\n")[0][:200])
        start, count = self._seen.get(key, (now, 0))
        if now - start >= self.window:
            if count > self.burst:
                record.msg = (f"{record.msg} [{count - self.burst} more like this in the "
                              f"{now - start:.0f}s before were not logged]")
            start, count = now, 0
        self._seen[key] = (start, count + 1)
        if len(self._seen) > 1000:  # kinds whose window is over are forgotten
            self._seen = {k: v for k, v in self._seen.items() if now - v[0] < self.window}
        return count < self.burst
