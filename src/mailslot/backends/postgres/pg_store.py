"""The server store: the same :class:`~mailslot.store.base.Store` on PostgreSQL, for
agents on several machines (see docs/multi-host.md).

Opened by :func:`~mailslot.backends.open_store` for a ``postgresql://`` URL; this
module (and psycopg with it) is imported only then, never on the file store's paths.
One connection per store, opened on first use, in autocommit mode; every change that
must be all or nothing is one transaction. Message text is stored as the exact bytes
the file store writes, so moving between stores is lossless. Changes are announced with
``NOTIFY mailslot, '<kind>:<agent>'`` inside their transaction, so a listener hears of
them only once they are committed.
"""

from __future__ import annotations

from ...store.base import Store
from .pg_events import PgEvents
from .pg_lifecycle import PgLifecycle
from .pg_mail import PgMail
from .pg_records import PgRecords
from .pg_search import PgSearch
from .pg_upkeep import PgUpkeep
from .pg_watch import PgWatch


class PostgresStore(PgLifecycle, PgMail, PgUpkeep, PgEvents, PgRecords, PgSearch, PgWatch,
                    Store):
    """The store in the PostgreSQL database at ``url`` (credentials from the URL or
    libpq's own sources: ``PGPASSFILE``, ``PGSERVICE``, the environment).

    The primitives of :mod:`mailslot.store.primitives` on PostgreSQL, every other
    method inherited from the roles of :mod:`mailslot.store.roles` except where an index
    answers faster. Built from parts side by side, one module each, every one a direct
    subclass of :class:`~.pg_connection.PgConnection` (the connection and its errors):
    the lifecycle (:mod:`.pg_lifecycle`), mail and broadcasts (:mod:`.pg_mail`), what
    ``doctor`` finds and the quarantine (:mod:`.pg_upkeep`), the logs
    (:mod:`.pg_events`), keyed records (:mod:`.pg_records`: each namespace's table is
    :mod:`.pg_tables`'), search (:mod:`.pg_search`) and watching (:mod:`.pg_watch`)."""
