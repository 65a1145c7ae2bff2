"""The PostgreSQL store's watching: LISTEN on the one channel the store NOTIFYs."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import psycopg

from ...core.errors import StoreError
from .pg_connection import CHANNEL, PgConnection


class PgWatch(PgConnection):
    """The :class:`~mailslot.store.roles.Watches` role on PostgreSQL."""

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
    """A running watch: its own connection LISTENing on :data:`CHANNEL`, in a thread
    that calls ``kick`` for each relevant notification and reconnects by itself (with
    a kick, since changes may have been missed meanwhile)."""

    def __init__(self, store: PgConnection, kick: Callable[[], None],
                 relevant: Callable[[str], bool], how: str) -> None:
        self.how = how
        self._store, self._kick, self._relevant = store, kick, relevant
        self._stop = threading.Event()
        self._conn: psycopg.Connection[Any] | None = self._listen()
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

    def _run(self) -> None:
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

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._drop()
