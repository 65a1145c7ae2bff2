"""Where the mailbox is, and the one way to open a store there.

``--store``/``--dir`` beat ``MAILSLOT_STORE`` beats ``MAILSLOT_DIR`` beats the machine's
settings file (``$XDG_CONFIG_HOME/mailslot/store``, one line) beats ``~/mailslot``; the
answer is a folder (the file store) or a ``postgresql://`` URL (the PostgreSQL store,
whose module and driver are imported only then). Every front end and
:meth:`mailslot.service.mailbox.Mailbox.open` come through :func:`open_store`; no module outside
``store/`` builds a backend itself. On the hook path, so it imports only ``os``.
"""

from __future__ import annotations

import os

from ..core.durable import read_file
from ..core.errors import InvalidInput, UnsafePath

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from ..store.base import Store
    from ..store.primitives import Lifecycle

DEFAULT_ROOT = "~/mailslot"


def store_location(explicit: str | None = None, env: Mapping[str, str] = os.environ) -> str:
    """``--store``/``--dir`` beat ``MAILSLOT_STORE`` beats ``MAILSLOT_DIR`` beats the
    settings file beats ``~/mailslot`` (a folder path is expanded)."""
    location = (explicit or env.get("MAILSLOT_STORE") or env.get("MAILSLOT_DIR")
                or _settings_file(env) or DEFAULT_ROOT)
    return location if "://" in location else os.path.expanduser(location)


def no_mailbox(location: str) -> str:
    """The one line that says no mailbox is at ``location`` (a folder or a URL), and
    what to do: create one there, or name the right one."""
    options = "--dir/MAILSLOT_DIR" if "://" not in location else "--store/MAILSLOT_STORE"
    return f"no mailbox at {location}: mailslot init {location}, or check {options}"


def handed_over(store: Lifecycle) -> tuple[list[str], dict[str, str]]:
    """How a process mailslot starts is told ``store`` (the watcher, its bridges, a
    service unit): the arguments to put before its command and the variables to put in
    its environment. A folder is named by ``--dir``, which outranks every
    ``MAILSLOT_STORE`` or ``MAILSLOT_DIR`` the child may inherit; a database's whole
    address, password included, goes in ``MAILSLOT_STORE`` only, never in an argument
    (``ps`` shows arguments to every user, a process's environment only to its own)."""
    if store.folder is not None:
        return ["--dir", store.folder], {"MAILSLOT_DIR": store.folder}
    return [], {"MAILSLOT_STORE": store.address}


def _settings_file(env: Mapping[str, str]) -> str:
    """The first line of ``$XDG_CONFIG_HOME/mailslot/store``: where this machine's
    mailbox is, said once (a URL there holds no password: libpq's PGPASSFILE does)."""
    home = env.get("HOME") or os.path.expanduser("~")
    config = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    try:
        raw = read_file(os.path.join(config, "mailslot", "store"), 64 * 1024, follow=True)
        return raw.decode("utf-8").split("\n", 1)[0].strip()
    except (OSError, UnicodeDecodeError, UnsafePath):  # a FIFO there must not hang us
        return ""


def open_store(location: str | None = None, env: Mapping[str, str] = os.environ
               ) -> Store:
    """The store at ``location`` (resolved by :func:`store_location` when ``None``).

    A folder gives the file store, a ``postgresql://`` URL the PostgreSQL store,
    ``memory://NAME`` the memory store of that name; an address with a scheme mailslot
    does not know is refused in one line.
    """
    where = store_location(location, env)
    if where.startswith(("postgresql://", "postgres://")):
        try:
            from .postgres.pg_store import PostgresStore
        except ImportError:
            raise InvalidInput("a postgresql:// store needs the psycopg driver: "
                               "pip install 'mailslot[postgres]'") from None
        return PostgresStore(where)
    if where.startswith("memory://"):
        from .memory.memory_store import MemoryStore

        return MemoryStore(where[len("memory://"):])
    if "://" in where:
        scheme = where.split("://", 1)[0]
        raise InvalidInput(f"{scheme}:// stores are not supported; use a folder path or "
                           "a postgresql:// URL for --store or MAILSLOT_STORE")
    from .files.file_store import FileStore

    return FileStore(where)
