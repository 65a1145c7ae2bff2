"""Storage behind the service: the :class:`Store` interface and the file store.

The service reaches messages only through :class:`Store`, so another backend (a
server database for agents on several machines) can be added without touching a rule.
"""

from .base import Event, Store, StoredFile, WakeEntry
from .files import FileStore

__all__ = ["Event", "FileStore", "Store", "StoredFile", "WakeEntry"]
