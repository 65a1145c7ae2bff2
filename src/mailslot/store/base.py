"""The storage interface: what the service needs from any backend, and nothing more.

A store knows where messages are and moves them; it holds no rule about who may do
what (that is :class:`mailslot.service.mailbox.Mailbox`). Every method is safe to call from many
processes at once: a state change another process already made is success, not an error.

The contract every backend keeps (``tests/test_store_contract.py`` checks it):

* every failure is a :class:`~mailslot.core.errors.MailslotError`: ``NotFound`` for a message
  that is not there, ``IdTaken`` for an id already used (nothing written), ``Unreadable``
  for one stored message that cannot be read (listings skip it), ``UnsafePath`` for
  something planted, and ``StoreError`` (one line naming the place and what to do) for
  everything the system refused (a full disk, a permission, another user's folder). No
  ``OSError`` leaves a store.
* a delivery is all or nothing: every recipient has the message, or none has.
* a message's id is the name it is stored under; a copy whose header says otherwise is
  ``Unreadable``.

The interface is cut into roles (:mod:`.roles`), one small protocol per concern: mail,
broadcasts, config and events, upkeep, presence, the wake queues, sessions, the registry,
gates, fences, the governor's token buckets, the session log, search, archives and watching, and
the lifecycle of the store itself. :class:`Store` is all of them together; a backend
implements every role.
"""

from __future__ import annotations

from ..core.values import Protocol
from .roles import (
    Archives,
    Broadcasts,
    ConfigAndEvents,
    Fences,
    Gates,
    Lifecycle,
    Limits,
    Mail,
    Presence,
    Registry,
    Searching,
    SessionLog,
    Sessions,
    Upkeep,
    WakeQueues,
    Watches,
)


class Store(Lifecycle, Mail, Broadcasts, ConfigAndEvents, Upkeep, Presence, WakeQueues,
            Sessions, Registry, Gates, Fences, Limits, SessionLog, Searching, Archives, Watches,
            Protocol):
    """Where messages, broadcasts, seen sets, events, the config, presence, the wake
    queue and the per-session delivery state live."""
