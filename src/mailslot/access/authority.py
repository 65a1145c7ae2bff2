"""Bounded authority: who a process may speak as, and what a child agent may do.

Every front end (CLI, MCP stdio, hooks, and the HTTP server and PostgreSQL store that
build on it) reaches these rules through :class:`~mailslot.service.mailbox.Mailbox`, so they hold
the same everywhere. API::

    Principal                      the checked identity a process speaks as: ``name``,
                                   ``parent`` (a child's parent, or --peer-of), whether it
                                   holds a ``credentialed`` identity, its ``generation``
    verify(store, credential, now) -> Principal
                                   the identity a credential binds; ``Unauthorized`` for a
                                   wrong, rotated or revoked secret (or a child whose parent
                                   was rotated or revoked), never saying which; and, in one
                                   line saying when and how to renew, for an expired one
    check_write(store, config, principal)
                                   a write without a credential: refused for a registered
                                   agent, and for everyone under ``require_credentials``
    check_send / check_reply / check_broadcast / check_read
                                   a child may send and reply only to its parent, read only
                                   its own inbox, and never broadcast
    register / rotate / revoke / record / records / describe
                                   administration (CLI only, never an MCP tool): each
                                   writes the store's record and, for register and rotate,
                                   the 0600 credential file (:mod:`mailslot.access.credentials`)

A registered agent's record keeps only the hash of its secret (:mod:`.credentials`).
Rotating bumps the generation and replaces the secret; children issued under the old
generation lose their authority until they are rotated too. Revoking is final for that
name (its children fall with it).

Lifetimes: a child's credential expires, :data:`CHILD_LIFETIME` after it was issued
unless the owner says otherwise (``--expires 8h``, or ``never``); an agent without a
parent never expires unless the owner gives it a lifetime. Rotating renews it. An
expired parent's children are refused with it, as a rotated or revoked one's are.
"""

from __future__ import annotations

import os

from ..core.config import Config
from ..core.dates import datetime, span, timedelta
from ..core.errors import InvalidInput, NotFound, Refused, Unauthorized, Unreadable, UnsafePath
from ..core.names import LOWER, Word, check_name
from ..core.text import quoted
from ..core.values import replace
from ..mail.posting import now
from ..store import AgentRecord
from .credentials import (
    Credential,
    default_path,
    hash_secret,
    launcher_start,
    new_secret,
    refuse_inside_checkout,
    secret_matches,
    write_binding,
    write_credential,
)

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any

    from ..store import Store

_RUNTIME = Word(LOWER, LOWER + "._-", 64)  # [a-z0-9][a-z0-9._-]{0,63}, without re
CHILD_LIFETIME = 24 * 3600
"""Seconds a child agent's credential holds unless the owner gives another lifetime: a
working day with slack, so a forgotten child's credential does not live on."""
_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
MAX_LIFETIME = 366 * 86400
NEVER = "never"


def runtimes() -> list[str]:
    """Runtimes as the hosts name themselves; any other short name is accepted as given."""
    from .. import host_registry as hosts

    return [h.runtime for h in hosts.every() if h.runtime is not None]


class Principal:
    """Who a process speaks as, after every check: the name, and the bounds on it."""

    __slots__ = ("credentialed", "generation", "name", "parent")

    def __init__(self, name: str, *, parent: str | None = None, credentialed: bool = False,
                 generation: int | None = None) -> None:
        self.name = name
        self.parent = parent  # a child may talk to its parent only
        self.credentialed = credentialed
        self.generation = generation

    @property
    def is_child(self) -> bool:
        return self.parent is not None

    def __repr__(self) -> str:
        return (f"Principal({self.name!r}, parent={self.parent!r}, "
                f"credentialed={self.credentialed})")


class Issued:
    """A registration or rotation: the record stored, and where its credential went."""

    __slots__ = ("path", "record")

    def __init__(self, record: AgentRecord, path: str) -> None:
        self.record = record
        self.path = path


# Checking ---------------------------------------------------------------------------
def _refused(agent: str) -> Unauthorized:
    return Unauthorized(f"the credential for {agent} is not accepted (wrong, rotated or "
                        "revoked); ask the mailbox's owner for a new one "
                        f"(mailslot agent rotate {agent})")


def _lookup(store: Store, name: str) -> AgentRecord | None:
    """The record, with a damaged one treated as no authority at all (fail closed)."""
    try:
        return store.registered(name)
    except (Unreadable, UnsafePath):
        return None


def verify(store: Store, credential: Credential, at: datetime | None = None
           ) -> Principal:
    """The principal ``credential`` binds, checked against the store now (``at``: by
    the store's clock)."""
    record = _lookup(store, credential.agent)
    valid = (record is not None and secret_matches(record.secret_hash, credential.secret)
             and not record.revoked and record.generation == credential.generation)
    parent = None
    if valid and record is not None and record.parent is not None:
        parent = _lookup(store, record.parent)
        valid = (parent is not None and not parent.revoked
                 and parent.generation == record.parent_generation)
    if not valid or record is None:
        raise _refused(credential.agent)
    when = at if at is not None else now()
    _unexpired(record, when)
    if parent is not None:
        _unexpired(parent, when, child=record.name)
    return Principal(record.name, parent=record.parent, credentialed=True,
                     generation=record.generation)


def expired(found: AgentRecord, at: datetime) -> bool:
    """Has ``found``'s credential expired by ``at``? (A time that cannot be read never
    reaches here: such a record is unreadable, no authority at all.)"""
    return found.expires is not None and datetime.fromisoformat(found.expires) <= at


def _unexpired(found: AgentRecord, at: datetime, *, child: str | None = None) -> None:
    """Refuse in one line, saying when and how to renew, once ``found`` has expired
    (``child``: the child that asked, whose parent ``found`` is)."""
    if not expired(found, at):
        return
    what = "child" if found.parent is not None else "agent"
    said = f"{what} {found.name} expired at {found.expires}"
    if child is not None:
        raise Unauthorized(f"child {child}'s parent {found.name} expired at {found.expires}; "
                           f"mailslot agent rotate {found.name} to renew it, then "
                           f"mailslot agent rotate {child}")
    raise Unauthorized(f"{said}; mailslot agent rotate {found.name} to renew")


def check_write(store: Store, config: Config, principal: Principal) -> None:
    """May ``principal`` write at all? Credentialed ones were checked by :func:`verify`."""
    if principal.credentialed:
        return
    try:
        registered = store.registered(principal.name) is not None
    except (Unreadable, UnsafePath):
        registered = True  # a damaged record still means registered: never fall open
    if registered:
        raise Refused(f"{principal.name} is a registered agent: speak as it with its "
                      "credential (--credential FILE or MAILSLOT_CREDENTIAL)")
    if config.require_credentials:
        raise Refused("this mailbox requires credentials (config.json "
                      f"require_credentials); the owner registers {principal.name} with "
                      f"`mailslot agent add {principal.name}`")


def check_send(principal: Principal, recipients: Sequence[str]) -> None:
    if principal.parent is not None and any(r != principal.parent for r in recipients):
        raise Refused(f"{principal.name} is a child agent: it may send only to its parent, "
                      f"{principal.parent}; nothing was sent")


def check_reply(principal: Principal, sender: str) -> None:
    if principal.parent is not None and sender != principal.parent:
        raise Refused(f"{principal.name} is a child agent: it may reply only to messages "
                      f"from its parent, {principal.parent}; nothing was sent")


def check_broadcast(principal: Principal) -> None:
    if principal.parent is not None:
        raise Refused(f"{principal.name} is a child agent: it cannot broadcast; send to "
                      f"its parent, {principal.parent}")


def check_read(principal: Principal, mailbox: str | None) -> None:
    """A child reads its own inbox only (``mailbox`` ``None`` is its own)."""
    if principal.parent is not None and mailbox not in (None, principal.name):
        raise Refused(f"{principal.name} is a child agent: it reads only its own inbox")


# Administration (CLI only) -------------------------------------------------------------
def _runtime(raw: str | None) -> str | None:
    if raw is None:
        return None
    value = raw.strip().lower()
    if not _RUNTIME.fullmatch(value):
        raise InvalidInput(f"runtime {quoted(raw)} is not a runtime name (for example "
                           f"{', '.join(runtimes())})")
    return value


def record(store: Store, name: str) -> AgentRecord:
    agent = check_name(name, "agent")
    found = store.registered(agent)
    if found is None:
        raise NotFound(f"{agent} is not a registered agent (see mailslot agent list)")
    return found


def records(store: Store) -> list[AgentRecord]:
    return store.registered_agents()


def describe(found: AgentRecord, at: datetime | None = None) -> dict[str, Any]:
    """What a person (or ``--json``) is shown of a record: never the hash."""
    return {"name": found.name, "parent": found.parent, "runtime": found.runtime,
            "generation": found.generation, "parent_generation": found.parent_generation,
            "revoked": found.revoked, "created": found.created, "expires": found.expires,
            "expired": expired(found, at if at is not None else now())}


def lifetime(text: str) -> int | None:
    """``--expires``: ``30m``, ``8h``, ``7d``, ``2w`` as seconds, or ``never`` (``None``);
    ``InvalidInput`` for anything else."""
    if text.strip().lower() == NEVER:
        return None
    seconds = span(text, _UNITS)
    if seconds is None:
        raise InvalidInput(f"--expires must be a lifetime like 30m, 8h, 7d or 2w, or never "
                           f"(got {quoted(text)})")
    if not 60 <= seconds <= MAX_LIFETIME:
        raise InvalidInput(f"--expires must be between 1m and {MAX_LIFETIME // 86400}d "
                           f"(got {quoted(text)})")
    return seconds


def _expiry(asked: str | None, default: int | None, issued: datetime) -> str | None:
    """When a credential ``issued`` then expires: the lifetime ``asked``
    (``--expires``), else ``default`` (seconds; ``None``: never)."""
    seconds = lifetime(asked) if asked is not None else default
    if seconds is None:
        return None
    return (issued + timedelta(seconds=seconds)).isoformat(timespec="seconds")


def _issue(store: Store, found: AgentRecord, secret: str, path: str | None,
           env: Mapping[str, str], bind_to: int | None = None) -> str:
    """Write the credential file, or with ``bind_to`` a binding for that launcher."""
    credential = Credential(found.name, secret, store.location, found.generation,
                            found.parent_generation)
    where = path or default_path(found.name, env)
    if bind_to is not None:
        return write_binding(credential, where, bind_to)
    return write_credential(credential, where)


def _parent_generation(store: Store, parent: str | None) -> int | None:
    if parent is None:
        return None
    found = record(store, parent)
    if found.revoked:
        raise Refused(f"{parent} is revoked; it cannot have children")
    if found.parent is not None:
        raise Refused(f"{parent} is itself a child agent; children cannot have children")
    return found.generation


def register(store: Store, name: str, *, parent: str | None = None,
             runtime: str | None = None, path: str | None = None,
             env: Mapping[str, str] = os.environ,
             clock: Callable[[], datetime] = now, expires: str | None = None,
             bind_to: int | None = None) -> Issued:
    """Register ``name`` (a child of ``parent`` if given) and write its credential (with
    ``bind_to``: as a binding for that launcher); it expires after ``expires`` (``8h``,
    ``never``; by default a child's after :data:`CHILD_LIFETIME`, any other's never)."""
    agent = check_name(name, "agent")
    mother = check_name(parent, "parent") if parent is not None else None
    if mother == agent:
        raise InvalidInput("an agent cannot be its own parent")
    issued = clock()
    ends = _expiry(expires, CHILD_LIFETIME if mother is not None else None, issued)
    if bind_to is not None:
        launcher_start(bind_to)  # before anything is written
    secret = new_secret()
    found = AgentRecord(agent, hash_secret(secret), 1, mother,
                        _parent_generation(store, mother), _runtime(runtime), False,
                        issued.isoformat(timespec="seconds"), ends)
    where = path or default_path(agent, env)
    refuse_inside_checkout(where)
    if not store.register_agent(found):
        raise Refused(f"{agent} is registered already; to give it a new credential: "
                      f"mailslot agent rotate {agent}")
    return Issued(found, _issue(store, found, secret, where, env, bind_to))


def rotate(store: Store, name: str, *, path: str | None = None,
           env: Mapping[str, str] = os.environ, clock: Callable[[], datetime] = now,
           expires: str | None = None, bind_to: int | None = None) -> Issued:
    """A new secret and generation for ``name``; the old credential stops working, and so
    do its children's until they are rotated. A child is re-issued under its parent's
    current generation. The new credential expires after ``expires``; by default a
    child's after :data:`CHILD_LIFETIME`, and so does any agent's that had an expiry,
    while one that never expired still never does."""
    found = record(store, name)
    if found.revoked:
        raise Refused(f"{found.name} is revoked; revoking is final (register a new name)")
    refuse_inside_checkout(path or default_path(found.name, env))
    lasting = found.parent is None and found.expires is None
    ends = _expiry(expires, None if lasting else CHILD_LIFETIME, clock())
    if bind_to is not None:
        launcher_start(bind_to)  # before anything is written
    secret = new_secret()
    new = replace(found, secret_hash=hash_secret(secret), generation=found.generation + 1,
                  parent_generation=_parent_generation(store, found.parent), expires=ends)
    store.replace_registered(new)
    return Issued(new, _issue(store, new, secret, path, env, bind_to))


def revoke(store: Store, name: str) -> AgentRecord:
    """End ``name``'s authority (and its children's), for good."""
    found = record(store, name)
    if not found.revoked:
        found = replace(found, revoked=True)
        store.replace_registered(found)
    return found
