"""mailslot: a local mailbox for AI coding agents.

The public API is the service and what it returns; everything else is private.
"""

from .errors import (
    InvalidInput,
    MailslotError,
    NoIdentity,
    NotFound,
    Refused,
    StoreError,
    UnsafePath,
)
from .mailbox import AgentInfo, DoctorReport, Item, Mailbox, RecipientStatus, Status
from .message import Message
from .store import FileStore, Store

__version__ = "0.1.0"

__all__ = [
    "AgentInfo",
    "DoctorReport",
    "FileStore",
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
    "UnsafePath",
]
