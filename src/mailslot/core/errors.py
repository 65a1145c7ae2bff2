"""Every error mailslot raises on purpose.

The tree is shallow so a front end can translate it in one place::

    MailslotError               base; never raised itself
    ├── InvalidInput            bad name, id, subject, body or option   (CLI exit 2)
    │   ├── NoIdentity          no --agent, no MAILSLOT_AGENT, no git toplevel
    │   └── ProbableTypo        a recipient a letter or two from a known agent
    ├── NotFound                no such message for this agent          (CLI exit 1)
    ├── Refused                 a rule says no (retracting another's broadcast)  (exit 1)
    │   ├── Unauthorized        a credential that is wrong, rotated or revoked (which of
    │   │                       the three is never said)
    │   └── Throttled           the loop governor stopped a send: paused, too many, or a
    │                           reply chain too long; nothing was sent
    └── StoreError              the store cannot do what was asked: permissions, an
        │                       unsafe owner or mode, config, a full disk  (exit 1)
        ├── UnsafePath          a planted symlink or odd file in the mailbox: never followed
        ├── Unreadable          one message file cannot be read as a message (skipped
        │                       and counted by listings; ``doctor`` names it)
        └── IdTaken             the message id is already taken (the service retries)

Every ``OSError`` is translated into a :class:`StoreError` at the store's public methods,
so no front end catches ``OSError``.

Each message is one line a person (or a model) can act on without a traceback.
"""

from __future__ import annotations


class MailslotError(Exception):
    """Base of every mailslot error; its text is one line meant for the user."""


class InvalidInput(MailslotError):
    """The caller passed something mailslot will not accept; nothing was written."""


class NoIdentity(InvalidInput):
    """No identity could be derived for a write path."""


class ProbableTypo(InvalidInput):
    """A recipient without a mailbox, within two edits of a known name; nothing was
    sent. Its text says how to send anyway from the CLI or a tool; a front end with
    another way (the web page's checkbox) words it with :meth:`anyway`."""

    def __init__(self, name: str, near: str, roster: list[str], how: str) -> None:
        self.name, self.near, self.roster = name, near, roster
        super().__init__(self.anyway(how))

    def anyway(self, how: str) -> str:
        """The line, ending with ``how`` to make a new mailbox anyway."""
        return (f"no agent {self.name}: did you mean {self.near}? (known agents: "
                f"{', '.join(self.roster)}; to make a new mailbox anyway, {how})")


class NotFound(MailslotError):
    """The message (or agent) does not exist for this caller."""


class Refused(MailslotError):
    """The input is well formed but a rule forbids the action."""


class StoreError(MailslotError):
    """The mailbox folder cannot be used as asked (permissions, config, disk)."""


class UnsafePath(StoreError):
    """Something in the mailbox is a symlink or not the kind of file it should be."""


class Unreadable(StoreError):
    """A message file that cannot be read as a message (empty, malformed, wrong id)."""


class IdTaken(StoreError):
    """A message with this id already exists; nothing was written (retry with a new id)."""


# Bounded authority
class Unauthorized(Refused):
    """A credential the store does not accept (wrong, rotated or revoked: never which)."""


# The loop governor
class Throttled(Refused):
    """A send the loop governor stopped (:mod:`mailslot.mail.governor`): nothing was
    written; the line says why and how it can go on."""

    loop: object = None
    """When it stopped a loop (the message would have grown a chain of causes): the
    chain (:class:`mailslot.mail.causes.Chain`) and the limit's name, for the owner's
    one notice."""
