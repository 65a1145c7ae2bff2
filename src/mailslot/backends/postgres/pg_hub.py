"""This machine's notification hub for one PostgreSQL store: one process holding the
one LISTEN connection, fanning each notification out over a Unix socket to every watch
on this machine (docs/multi-host.md, "One LISTEN connection per machine").

PostgreSQL signals every listener of a channel at each commit that notifies, and idle
listeners slow it down; a machine with ten agent sessions would otherwise hold ten or
more. Started by the first watch that finds none (:func:`start`, detached: ``python -m
mailslot.backends.postgres.pg_hub``, the store's address in ``MAILSLOT_HUB_STORE``), it
LISTENs first and only then listens on ``hub-KEY.sock`` beside the hook relay's, holds
``hub-KEY.lock`` while it runs so two never serve one key, and exits after
:data:`IDLE_SECONDS` with no subscriber (``MAILSLOT_HUB_IDLE_SECONDS``). It answers
only this user's processes (``SO_PEERCRED``) asking with its own key (the store,
``HOME``, libpq settings and Python, :func:`~mailslot.core.local_socket.key_of`), so a
subscriber hears exactly what its own LISTEN would (docs/security.md, "The
notification hub").

Frames, one JSON object a line (a payload is JSON text in one, so no payload can end
a frame): a subscriber sends ``{"key": KEY}``; the hub answers ``{"ready": true}`` once
it is subscribed, then ``{"note": PAYLOAD}`` for each notification on the store's
channel and ``{"again": true}`` when its own LISTEN connection was made again
(notifications may have been missed: look again), or ``{"refused": WHY}``. Each
subscriber has a queue of :data:`QUEUE_LIMIT` frames; one that does not keep up is
dropped (its connection closed), never waited for, and kicks and subscribes again.
"""

from __future__ import annotations

import contextlib
import os
import queue
import socket
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

import psycopg
from psycopg import conninfo

from ...core.accept_loop import Door, serve
from ...core.local_socket import Place, begin, listen, place, send
from ...core.local_socket import start as start_helper
from .pg_connection import CHANNEL

MODULE = "mailslot.backends.postgres.pg_hub"
STORE_VARIABLE = "MAILSLOT_HUB_STORE"
"""Where the hub is told its store's address (as :func:`.local_socket.begin` reads it)."""
IDLE_SECONDS = 600.0
"""A hub with no subscriber for this long exits (the next watch starts another)."""
HELLO_SECONDS = 5.0
"""A connection whose hello (its key) is not whole within this long is dropped."""
HELLO_BYTES = 64 * 1024
"""The longest hello (a key is a few hundred bytes); a longer line closes the
connection, so an endless line costs the hub this much at most."""
MAX_CONNECTIONS = 256
"""Connections at once at most, subscribers and hellos together (a new one takes the
place of the hello waiting longest; with every one subscribed it is closed, and that
watch LISTENs by itself). Each subscriber costs two threads; a hello costs none."""
QUEUE_LIMIT = 1024
"""Frames waiting for one subscriber at most; one more and it is dropped."""
RETRY_SECONDS = 1.0
"""How soon the hub tries again when its LISTEN connection broke."""
KEEPALIVE = {"keepalives": "1", "keepalives_idle": "30", "keepalives_interval": "10",
             "keepalives_count": "3"}
"""TCP keepalives: a LISTEN connection across a dead network is noticed in a minute."""


def place_of(url: str, env: Mapping[str, str] = os.environ) -> Place | None:
    """Where the hub for ``url`` lives; ``None``: none is used (``MAILSLOT_RELAY=0``, no
    Unix sockets or ``SO_PEERCRED``)."""
    return place("hub", url, env)


def start(where: Place, url: str, env: Mapping[str, str] = os.environ) -> None:
    """Start the hub for ``url`` if none listened at ``where``."""
    start_helper(where, MODULE, STORE_VARIABLE, url, env)


class Subscriber:
    """One watch's connection: its queue, and the thread that writes it."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.queue: queue.Queue[dict[str, Any] | None] = queue.Queue(QUEUE_LIMIT)

    def offer(self, frame: dict[str, Any] | None) -> bool:
        """Queue ``frame`` without waiting; ``False``: the queue is full."""
        try:
            self.queue.put_nowait(frame)
        except queue.Full:
            return False
        return True

    def write(self) -> None:
        """Send queued frames until told to stop (``None``) or the connection fails."""
        while (frame := self.queue.get()) is not None:
            try:
                send(self.sock, frame)
            except OSError:
                return

    def cut(self) -> None:
        """End the connection (the reader sees its end, the writer fails)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)


class Hub:
    """The one LISTEN connection and the subscribers it fans out to."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._lock = threading.Lock()
        self._subscribers: set[Subscriber] = set()
        self._conn = self._listen()  # before the socket: a subscriber is told at once

    def _listen(self) -> psycopg.Connection[Any]:
        conn = psycopg.connect(conninfo.make_conninfo(self.url, **KEEPALIVE),
                               autocommit=True, connect_timeout=5)
        conn.execute(f"LISTEN {CHANNEL}")
        return conn

    def pump(self) -> None:
        """Forever: each notification on the channel to every subscriber; a broken
        connection made again, then ``again`` to every subscriber. Anything else ends
        the hub: every subscriber sees its end, kicks and subscribes again."""
        try:
            self._pump()
        except BaseException as exc:
            print(f"mailslot hub: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
            os._exit(1)

    def _pump(self) -> None:
        while True:
            try:
                for note in self._conn.notifies():
                    if note.channel == CHANNEL:
                        self._fan({"note": note.payload})
            except psycopg.Error as exc:
                print(f"mailslot hub: the LISTEN connection broke ({exc}); connecting "
                      "again", file=sys.stderr, flush=True)
            with contextlib.suppress(psycopg.Error):
                self._conn.close()
            while True:
                time.sleep(RETRY_SECONDS)
                try:
                    self._conn = self._listen()
                    break
                except psycopg.Error:
                    continue
            self._fan({"again": True})

    def _fan(self, frame: dict[str, Any]) -> None:
        with self._lock:
            for sub in list(self._subscribers):
                if not sub.offer(frame):
                    self._subscribers.discard(sub)  # a stuck subscriber: dropped
                    sub.cut()

    def serve_one(self, key: str, sock: socket.socket, hello: dict[str, Any] | None) -> None:
        """One connection that said its hello (a thread of its own; the accept loop
        checked its peer and read the hello): check its key, subscribe it, and read it
        until it ends, so a watch that closed leaves at once."""
        sub = Subscriber(sock)
        try:
            if hello is None or hello.get("key") != key:
                sock.settimeout(HELLO_SECONDS)
                send(sock, {"refused": "not this hub's store or settings"})
                return
            sock.settimeout(None)  # a stuck subscriber is dropped by its queue instead
            with self._lock:
                sub.offer({"ready": True})
                self._subscribers.add(sub)
            threading.Thread(target=sub.write, name="mailslot-hub-write", daemon=True).start()
            while sock.recv(4096):
                pass  # a subscriber has nothing more to say
        except OSError:
            return
        finally:
            self._leave(sub)

    def _leave(self, sub: Subscriber) -> None:
        with self._lock:
            self._subscribers.discard(sub)
        sub.cut()
        sub.offer(None)
        sub.sock.close()


def main() -> int:
    begun = begin("hub", IDLE_SECONDS, os.environ)
    if isinstance(begun, int):
        return begun
    where, url, idle = begun
    try:
        hub = Hub(url)
    except psycopg.Error as exc:
        print(f"mailslot hub: cannot listen ({exc}); watches listen by themselves",
              file=sys.stderr)
        return 1
    listener = listen(where)
    if listener is None:
        print(f"mailslot hub: {where.folder} is not this user's private folder; "
              "watches listen by themselves", file=sys.stderr)
        return 1
    threading.Thread(target=hub.pump, name="mailslot-hub-pump", daemon=True).start()
    door = Door(line_bytes=HELLO_BYTES, hello_seconds=HELLO_SECONDS,
                connections=MAX_CONNECTIONS, idle=idle)
    try:
        serve(listener, door, lambda sock, hello, _rest: hub.serve_one(where.key, sock,
                                                                       hello))
        return 0  # idle: the next watch starts another
    finally:
        with contextlib.suppress(OSError):
            os.unlink(where.socket)  # still under the lock: no newer hub's socket
        listener.close()


if __name__ == "__main__":
    sys.exit(main())
