"""Storage behind the service: the :class:`Store` interface and the file store.

The service reaches messages only through :class:`Store`, so another backend (a
server database for agents on several machines) can be added without touching a rule.

:func:`open_store` is the one way to open a store. Modules outside ``store/`` use
this package, :mod:`.base` (and its roles, :mod:`.roles`), :mod:`.location` and
:mod:`.records` only, never a backend's own modules (``tests/test_layers.py`` checks
it). The file layout of docs/format.md is a public format too (a backup is that layout,
from any backend): :data:`FOLDER_OF`, :func:`is_kept_file` and :func:`free_for_mailbox`
describe it. Loaded on first use (PEP 562): the hook path imports :mod:`.location` and
the file store's lean modules, never :mod:`.base` (``typing``, ``dataclasses``) or
:mod:`.watching` (watchdog).
"""

from ..core.lazy import exports

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .base import Store
    from .files.file_store import FileStore
    from .format import FOLDER_OF, free_for_mailbox, is_kept_file
    from .location import open_store, store_location
    from .records import AgentRecord, StoredFile, WakeEntry

__all__ = [  # noqa: RUF022 (sorted plainly, as tests/test_package.py checks)
    "AgentRecord", "FOLDER_OF", "FileStore", "Store", "StoredFile", "WakeEntry",
    "free_for_mailbox", "is_kept_file", "open_store", "store_location"]

_LAZY = {"Store": "base", "StoredFile": "records", "WakeEntry": "records",
         "AgentRecord": "records", "FileStore": "files.file_store", "open_store": "location",
         "store_location": "location", "FOLDER_OF": "format", "is_kept_file": "format",
         "free_for_mailbox": "format"}
__getattr__ = exports(__name__, _LAZY)
