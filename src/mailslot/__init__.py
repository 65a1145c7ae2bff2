"""mailslot: a local mailbox for AI coding agents.

The public API is the service and what it returns; everything else is private.

The service classes are loaded on first use (PEP 562), so that ``mailslot hook`` can
import its few modules without paying for the whole package.
"""

from .core import __version__ as __version__
from .core.errors import (
    IdTaken,
    InvalidInput,
    MailslotError,
    NoIdentity,
    NotFound,
    Refused,
    StoreError,
    Unreadable,
    UnsafePath,
)
from .core.lazy import exports as _exports

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .backends import open_store
    from .backends.files.file_store import FileStore
    from .core.message import Message
    from .core.results import AgentInfo, DoctorReport, Item, RecipientStatus, Status
    from .frontends.mcp.server import add_mailbox_tools
    from .service.mailbox import Mailbox
    from .store import Store
del TYPE_CHECKING


__all__ = [
    "AgentInfo",
    "DoctorReport",
    "FileStore",
    "IdTaken",
    "InvalidInput",
    "Item",
    "Mailbox",
    "MailslotError",
    "Message",
    "NoIdentity",
    "NotFound",
    "RecipientStatus",
    "Refused",
    "Status",
    "Store",
    "StoreError",
    "Unreadable",
    "UnsafePath",
    "add_mailbox_tools",
    "open_store",
]

_LAZY = {
    **dict.fromkeys(("AgentInfo", "DoctorReport", "Item", "RecipientStatus", "Status"),
                    "core.results"),
    "Mailbox": "service.mailbox",
    "Message": "core.message",
    "FileStore": "backends.files.file_store",
    "Store": "store",
    "add_mailbox_tools": "frontends.mcp.server",
    "open_store": "backends",
}
__getattr__ = _exports(__name__, _LAZY)
