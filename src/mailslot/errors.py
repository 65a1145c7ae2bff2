"""Every error mailslot raises on purpose.

The tree is shallow so a front end can translate it in one place::

    MailslotError               base; never raised itself
    ├── InvalidInput            bad name, id, subject, body or option   (CLI exit 2)
    │   ├── NoIdentity          no --agent, no MAILSLOT_AGENT, no git toplevel
    │   └── UnsafePath          a planted symlink inside the mailbox: never followed
    ├── NotFound                no such message for this agent          (CLI exit 1)
    ├── Refused                 a rule says no (retracting another's broadcast)  (exit 1)
    └── StoreError              the mailbox folder is unusable: permissions,
                                config, a planted symlink, a full disk  (exit 1)

Each message is one line a person (or a model) can act on without a traceback.
"""

from __future__ import annotations


class MailslotError(Exception):
    """Base of every mailslot error; its text is one line meant for the user."""


class InvalidInput(MailslotError):
    """The caller passed something mailslot will not accept; nothing was written."""


class NoIdentity(InvalidInput):
    """No identity could be derived for a write path."""


class NotFound(MailslotError):
    """The message (or agent) does not exist for this caller."""


class Refused(MailslotError):
    """The input is well formed but a rule forbids the action."""


class StoreError(MailslotError):
    """The mailbox folder cannot be used as asked (permissions, config, disk)."""


class UnsafePath(InvalidInput):
    """Something in the mailbox is a symlink or not the kind of file it should be."""
