"""The store behind the service: the :class:`Store` interface, its values and its format.

The service reaches messages only through :class:`Store`, so another backend (a server
database for agents on several machines) is added without touching a rule. The backends
and :func:`~mailslot.backends.open_store`, the one way to open one, are in
:mod:`mailslot.backends`, a layer below the features and above this package.

Modules outside the store use this package, :mod:`.base` (built on the primitives of
:mod:`.primitives`), :mod:`.namespaces` and :mod:`.records`, never a backend's own
modules (``tests/test_layers.py`` checks it). The file layout of docs/format.md is a
public format too (a backup is that layout, from any backend): :data:`FOLDER_OF`,
:func:`is_kept_file` and :func:`free_for_mailbox` describe it. Loaded on first use (PEP
562): what a hook loads of it is :mod:`.base`, :mod:`.namespaces` and :mod:`.format`,
none of which loads ``typing`` or ``dataclasses``.
"""

from ..core.lazy import exports

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .base import Store
    from .format import FOLDER_OF, free_for_mailbox, is_kept_file
    from .records import AgentRecord, StoredFile, WakeEntry

__all__ = [  # noqa: RUF022 (sorted plainly, as tests/test_package.py checks)
    "AgentRecord", "FOLDER_OF", "Store", "StoredFile", "WakeEntry",
    "free_for_mailbox", "is_kept_file"]

_LAZY = {"Store": "base", "StoredFile": "records", "WakeEntry": "records",
         "AgentRecord": "records", "FOLDER_OF": "format", "is_kept_file": "format",
         "free_for_mailbox": "format"}
__getattr__ = exports(__name__, _LAZY)
