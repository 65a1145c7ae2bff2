"""Where the mailbox is, and the one way to open a store there.

``--dir`` beats ``MAILSLOT_DIR`` beats ``~/mailslot``; the answer is a folder (the file
store) or, later, a ``scheme://`` address of another backend. Every front end and
:meth:`mailslot.mailbox.Mailbox.open` come through :func:`open_store`; no module outside
``store/`` builds a backend itself. On the hook path, so it imports only ``os``.
"""

from __future__ import annotations

import os

from ..errors import InvalidInput

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from .files import FileStore

DEFAULT_ROOT = "~/mailslot"


def store_location(explicit: str | None = None, env: Mapping[str, str] = os.environ) -> str:
    """``--dir`` beats ``MAILSLOT_DIR`` beats ``~/mailslot`` (a folder path is expanded)."""
    location = explicit or env.get("MAILSLOT_DIR") or DEFAULT_ROOT
    return location if "://" in location else os.path.expanduser(location)


def open_store(location: str | None = None, env: Mapping[str, str] = os.environ) -> FileStore:
    """The store at ``location`` (resolved by :func:`store_location` when ``None``).

    A folder gives the file store; an address with a scheme mailslot does not know is
    refused in one line.
    """
    where = store_location(location, env)
    if "://" in where:
        scheme = where.split("://", 1)[0]
        raise InvalidInput(f"{scheme}:// stores are not supported yet; use a folder path "
                           "for --dir or MAILSLOT_DIR")
    from .files import FileStore

    return FileStore(where)
