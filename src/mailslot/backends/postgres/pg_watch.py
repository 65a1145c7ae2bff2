"""The PostgreSQL store's watching: the one channel the store NOTIFYs, heard through
this machine's hub (:mod:`.pg_hub`, one LISTEN connection per machine) or, when no hub
can be had, on a LISTEN connection of the watch's own."""

from __future__ import annotations

import _socket
import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg

from ...core.errors import StoreError
from ...core.local_socket import Frames, connect, send
from . import pg_hub
from .pg_connection import CHANNEL, PgConnection

HUB_START_SECONDS = 10.0
"""How long a watch waits for a hub it started before listening by itself."""
HUB_RETRY_SECONDS = 60.0
"""How often a watch listening by itself tries this machine's hub again."""


class PgWatch(PgConnection):
    """The :class:`~mailslot.store.primitives.Watches` primitives on PostgreSQL."""

    # Watching --------------------------------------------------------------------------
    def watch(self, kick: Callable[[], None], *, mail_for: str | None = None,
              waiters_of: str | None = None,
              wakes: bool | Callable[[str], bool] = False) -> Notifications:
        wanted = set()
        if mail_for is not None:
            wanted |= {f"mail:{mail_for}", "mail:*"}
        if waiters_of is not None:
            wanted.add(f"waiter:{waiters_of}")
        how = "the wake queue" if wakes else f"mail for {mail_for}"

        def relevant(payload: str) -> bool:
            if payload in wanted:
                return True
            if not (wakes and payload.startswith("wake:")):
                return False
            return wakes is True or (callable(wakes) and wakes(payload[5:]))
        return self._listen(kick, relevant, how)

    def _listen(self, kick: Callable[[], None], relevant: Callable[[str], bool],
                how: str) -> Notifications:
        with self._link.lock:
            self._db()  # the schema exists before anyone listens
        return Notifications(self, kick, relevant, f"{how} (PostgreSQL notifications)")

    # The web page's live view ------------------------------------------------------
    def watch_mail(self, kick: Callable[[], None]) -> Notifications:
        return self._listen(kick, lambda payload: payload.startswith("mail:"),
                            "every mailbox")


class Notifications:
    """A running watch, in a thread that calls ``kick`` for each relevant notification
    on :data:`CHANNEL`: through this machine's hub (:mod:`.pg_hub`, started if none
    runs) when it can be used, else on a LISTEN connection of its own. Either way it
    recovers by itself and kicks after every recovery (changes may have been missed
    meanwhile): a hub that ends or drops it means subscribing again (or listening
    directly when no hub can be had), and a direct watch tries the hub again every
    :data:`HUB_RETRY_SECONDS`."""

    def __init__(self, store: PgConnection, kick: Callable[[], None],
                 relevant: Callable[[str], bool], how: str) -> None:
        self.how = how
        self._store, self._kick, self._relevant = store, kick, relevant
        self._stop = threading.Event()
        self._hub = pg_hub.place_of(store.url)
        self._frames: Frames | None = None
        self._sub: _socket.socket | None = self._subscribe()
        self._conn: psycopg.Connection[Any] | None = None
        if self._sub is None:
            self._conn = self._listen()
        self._thread = threading.Thread(target=self._run, name="mailslot-listen",
                                        daemon=True)
        self._thread.start()

    def _listen(self) -> psycopg.Connection[Any]:
        try:
            conn = psycopg.connect(self._store.url, autocommit=True, connect_timeout=5)
            conn.execute(f"LISTEN {CHANNEL}")
        except psycopg.Error as exc:
            raise self._store._error(exc, "cannot listen for mail") from None
        return conn

    def _subscribe(self) -> _socket.socket | None:
        """A subscription to this machine's hub, the hub's LISTEN already in place;
        ``None``: none may be used (not trusted), it refused or is too slow, or none
        came up within :data:`HUB_START_SECONDS`. A hub that is ending as it is asked
        (its socket not yet gone) is asked again, as is a hub just started."""
        where = self._hub
        if where is None:
            return None
        deadline = time.monotonic() + HUB_START_SECONDS
        started = False
        while True:
            where.absent = False
            sock = connect(where, pg_hub.HELLO_SECONDS)
            if sock is not None:
                frames = Frames(sock)
                said = self._hello(sock, frames, where.key)
                if said == "ready":
                    self._frames = frames
                    return sock
                sock.close()
                if said != "ended":
                    return None
            elif not where.absent:
                return None  # a socket this process may not trust
            elif not started:
                pg_hub.start(where, self._store.url)
                started = True
            if time.monotonic() >= deadline or self._stop.wait(0.05):
                return None

    @staticmethod
    def _hello(sock: _socket.socket, frames: Frames, key: str) -> str:
        """``ready``, ``refused`` (or anything else said), ``ended`` or ``slow``."""
        try:
            send(sock, {"key": key})
            said = frames.next()
            sock.settimeout(None)
        except TimeoutError:
            return "slow"
        except OSError:
            return "ended"
        if said is None:
            return "ended"
        return "ready" if said == {"ready": True} else "refused"

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                if self._sub is None:
                    self._direct()
                    continue
                self._follow()
                self._unsubscribe()
                if not self._stop.is_set():
                    self._sub = self._subscribe()
                    if self._sub is not None:
                        self._kick()  # the old hub may have had notes it never sent
        finally:
            self._unsubscribe()

    def _follow(self) -> None:
        """Kick for the hub's relevant notes until its connection ends."""
        assert self._frames is not None
        try:
            while (frame := self._frames.next()) is not None:
                note = frame.get("note")
                if (isinstance(note, str) and self._relevant(note)) or frame.get("again"):
                    self._kick()
        except OSError:
            return

    def _direct(self) -> None:
        """Listen by itself until stopped or subscribed to a hub again."""
        retry = time.monotonic() + HUB_RETRY_SECONDS
        while not self._stop.is_set():
            try:
                if self._conn is None:
                    self._conn = self._listen()
                    self._kick()
                for note in self._conn.notifies(timeout=0.5):
                    if self._relevant(note.payload):
                        self._kick()
            except (psycopg.Error, StoreError):
                self._drop()
                self._stop.wait(1.0)  # the server restarts; try again soon
            if self._hub is not None and time.monotonic() >= retry:
                retry = time.monotonic() + HUB_RETRY_SECONDS
                self._sub = self._subscribe()
                if self._sub is not None:
                    self._drop()
                    self._kick()  # heard nothing between the two
                    return

    def _unsubscribe(self) -> None:
        sock, self._sub = self._sub, None
        if sock is not None:
            sock.close()

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def close(self) -> None:
        self._stop.set()
        sock = self._sub
        if sock is not None:  # wakes the thread from its read of the hub
            with contextlib.suppress(OSError):
                sock.shutdown(_socket.SHUT_RDWR)
        self._thread.join(10)
        self._drop()
