"""The PostgreSQL store's lifecycle: whether the mailbox exists, the database's clock,
``init`` (the schema's migrations), and the database roles ``mailslot pg grant`` creates.
"""

from __future__ import annotations

import time
from typing import Any

import psycopg

from ...core.errors import StoreError
from ...core.names import check_name
from .pg_connection import PgConnection
from .pg_schema import LATEST, grant, migrate, schema_version

CLOCK_SECONDS = 300.0
"""How long a measured offset between this machine's clock and the database's is used
before it is measured again (a clock stepped by NTP is caught within this)."""
CLOCK_SAMPLES = 3
"""Round trips an offset is measured in; the quickest is kept, its error at most half
its time. One round trip on a loaded machine can take a second, and a watcher whose
offset was that far off saw every new wake as due that much later."""
CLOCK_PRECISE = 0.01
"""A round trip this quick leaves an offset at most 5 ms off: not measured again early."""
CLOCK_RETRY_SECONDS = 2.0
"""How often an offset from a slower round trip is measured again (a better one kept)."""


def _offset(db: psycopg.Connection[Any]) -> tuple[float, float]:
    """The quickest of :data:`CLOCK_SAMPLES` round trips: its time, and the database's
    clock minus this machine's at its midpoint."""
    samples = []
    for _ in range(CLOCK_SAMPLES):
        before = time.time()
        row = db.execute("SELECT extract(epoch FROM clock_timestamp())").fetchone()
        after = time.time()
        if row:
            samples.append((after - before, float(row[0]) - (before + after) / 2))
    return min(samples) if samples else (float("inf"), 0.0)


class PgLifecycle(PgConnection):
    """The :class:`~mailslot.store.primitives.Lifecycle` primitives on PostgreSQL."""

    def exists(self) -> bool:
        """Reading the schema's version once: at :data:`LATEST`, the next call need not
        read it again (a hook's round trips)."""
        def check(db: psycopg.Connection[Any]) -> bool:
            version = schema_version(db)
            if version == LATEST:
                self._link.ready = True
            return version is not None
        return bool(self._run("cannot open the mailbox", check, schema=False))

    def clock(self) -> float:
        """The database's ``now()``: this machine's clock plus an offset measured in the
        quickest of :data:`CLOCK_SAMPLES` round trips (the midpoint of the query) and
        kept for :data:`CLOCK_SECONDS`, so asking costs nothing most of the time. An
        offset from a round trip slower than :data:`CLOCK_PRECISE` (a loaded machine)
        is measured again every :data:`CLOCK_RETRY_SECONDS`, a better one kept. While
        the database is unreachable the last offset measured goes on being used."""
        link = self._link
        now = time.monotonic()
        stale = link.offset is None or now - link.offset_at > CLOCK_SECONDS
        if stale or (link.rtt > CLOCK_PRECISE and now - link.tried_at > CLOCK_RETRY_SECONDS):
            link.tried_at = now
            try:
                rtt, offset = self._run("cannot read the database's clock", _offset,
                                        schema=False)
            except StoreError:
                if link.offset is None:
                    raise
                link.offset_at = now  # unreachable: the last offset, for a while
            else:
                if stale or rtt < link.rtt:
                    link.offset, link.rtt, link.offset_at = offset, rtt, now
        assert link.offset is not None
        return time.time() + link.offset

    # Creating and upgrading a store --------------------------------------------
    def init(self) -> str:
        """Apply the migrations this database lacks (each in one transaction); as the
        admin role, so the search an upgrade adds is built here, not by an agent role's
        first search (which may not rebuild it)."""
        applied = self._run("cannot create the schema", migrate, schema=False)
        self._link.ready = True
        if self._rows("cannot search", "SELECT FROM search_stale"):
            self.reindex()
        return (f"{self.location}: schema at version {LATEST} ({applied} migration"
                f"{'' if applied == 1 else 's'} applied)")

    # Agent roles -----------------------------------------------------------------
    def grant(self, agent: str) -> str:
        """Create the database role for ``agent`` (``mailslot pg grant``); one line back."""
        name = check_name(agent, "agent name")
        role = self._run(f"cannot create a role for {name}", lambda db: grant(db, name))
        return (f"role {role} may now use {self.location} as {name}: it reads and moves "
                f"only {name}'s mail and sends only as {name}; give it a password (ALTER "
                f"ROLE {role} PASSWORD ...) or a client certificate (docs/multi-host.md)")
