"""Moving a mailbox between stores (``mailslot migrate --from DIR|URL --to DIR|URL``).

Everything goes through the :class:`~mailslot.store.Store` primitives, so any pair of
backends works (files → PostgreSQL, back, or folder to folder): the mail, then one loop
over the namespaces of keyed records a copy carries, the config and the logs. Only into a mailbox
(:func:`check_target`): a database without mailslot's schema, or a folder of other
things, is refused unless ``init`` (``--init``) asks to make it one first, as every
other command refuses it. Registered agents
move with their credentials' hashes, so every credential file still works.
Idempotent: what the target already has is left alone, so a second run copies nothing
and an interrupted run is finished by running it again. Message text is carried as the
message itself, which both stores write as the same bytes; states only move forward.

Not copied: presence, per-session state (hook sessions too), fenced sessions and
claimed wakes (they describe running processes, which announce themselves again), the
governor's buckets and keys marked once (they refill and expire), archived mailboxes
and quarantined messages (set aside on purpose; they stay in the source). Unreadable
messages cannot be carried and are named.
"""

from __future__ import annotations

from collections import Counter

from ..backends import open_store
from ..core.errors import InvalidInput, NotFound, Refused, Unreadable
from ..core.message import STATES
from ..store import Store, free_for_mailbox
from ..store.namespaces import NAMESPACES

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from typing import Any

    from ..store.namespaces import Namespace


def migrate(source_location: str, target_location: str, *, init: bool = False
            ) -> tuple[Counter[str], list[str]]:
    """Copy the store at ``source_location`` into the mailbox at ``target_location``
    (a folder is created if need be; with ``init`` any target is made a mailbox first):
    what was copied, by kind, and the messages that could not be read."""
    source, target = open_store(source_location), open_store(target_location)
    if source.location == target.location:
        raise InvalidInput(f"--from and --to are the same store ({source.location})")
    if not source.exists():
        raise NotFound(f"no mailbox at {source.location}")
    check_target(target, init=init)
    if init or target.folder is not None:
        target.init()
    copied: Counter[str] = Counter()
    skipped: list[str] = []
    _mail(source, target, copied, skipped)
    _broadcasts(source, target, copied, skipped)
    _rest(source, target, copied)
    return +copied, skipped  # (+ drops the kinds with nothing copied)


def check_target(target: Store, *, init: bool) -> None:
    """Refuse, before anything is written, a target that is not a mailbox: a database
    without mailslot's schema (a mistyped URL, the ``postgres`` maintenance database),
    or a folder holding other things. A folder that does not exist yet, or is empty,
    becomes a mailbox as a send makes one. ``init``: any target is made one."""
    if init:
        return
    if target.folder is not None:
        if not free_for_mailbox(target.folder):
            raise Refused(f"{target.folder} is a folder that is not a mailbox; nothing was "
                          "written: give a new or empty folder, or add --init to make "
                          "this one a mailbox")
    elif not target.exists():
        raise Refused(f"no mailslot mailbox at {target.location} (it has no mailslot "
                      "schema); nothing was written: run mailslot init --store "
                      f"{target.location} first, or add --init")


def carry_records(source: Store, target: Store) -> Counter[str]:
    """Copy everything but the messages and broadcasts (what :func:`migrate` copies
    after them) into ``target``: what a backup holds beside the mail."""
    copied: Counter[str] = Counter()
    _rest(source, target, copied)
    return +copied


def _mail(source: Store, target: Store, copied: Counter[str], skipped: list[str]) -> None:
    for agent in source.agent_names():
        for message_id, state in sorted(source.entries(agent, STATES)):
            there = target.state_of(agent, message_id)
            if there is None:
                try:
                    message, state = source.load(agent, message_id)
                except Unreadable as exc:
                    skipped.append(f"{agent}/{message_id}: {exc}")
                    continue
                except NotFound:
                    continue  # quarantined or archived meanwhile
                target.deliver(message, [agent])
                copied["messages"] += 1
                there = "unread"
            if STATES.index(there) < STATES.index(state):
                target.move(agent, message_id, state)
                copied["states"] += 1


def _broadcasts(source: Store, target: Store, copied: Counter[str],
                skipped: list[str]) -> None:
    for live in (True, False):
        for message_id in sorted(source.broadcast_ids(live=live)):
            try:
                _, standing = target.load_broadcast(message_id, header_only=True)
            except NotFound:
                try:
                    message, _ = source.load_broadcast(message_id)
                except Unreadable as exc:
                    skipped.append(f"broadcast/{message_id}: {exc}")
                    continue
                target.publish(message)
                copied["broadcasts"] += 1
                standing = True
            if standing and not live:
                target.retract(message_id)
                copied["retractions"] += 1


def _rest(source: Store, target: Store, copied: Counter[str]) -> None:
    """Every namespace a copy carries (seen sets, mail for one session, registered
    agents, gates with their members, requests and what passed them, queued wakes and
    notices: :data:`~mailslot.store.namespaces.NAMESPACES` marked ``copied``), the
    config and the logs."""
    for space in NAMESPACES.values():
        if space.copied is not None:
            _records(source, target, space, copied)
    config = source.load_config()

    def adopt(there: dict[str, Any]) -> bool:
        """The source's config, only into a target that has none (checked under the
        target's lock, so a config written there meanwhile is never replaced)."""
        if not config or there:
            return False
        there.update(config)
        return True

    if target.update_config(adopt):
        copied["config"] += 1
    for log, label in (("events", "events"), ("sessions", "sessions started")):
        if next(target.read_log(log), None) is None:  # a log is copied whole, once
            for record in source.read_log(log):
                target.append_log(log, record, durable=log == "sessions")
                copied[label] += 1


def _records(source: Store, target: Store, space: Namespace, copied: Counter[str]) -> None:
    """One namespace: a set's missing words added, a record the target lacks added, one
    it holds otherwise replaced where the namespace says so (a gate's setting, a
    request), else kept (a registration, a queued wake)."""
    for key, value in source.items(space.name).items():
        if space.kind == "set":
            missing = sorted(set(value) - target.get(space.name, key))
            if missing:
                target.add(space.name, key, missing)
            copied[space.label(key)] += len(missing)
        elif not space.replace:
            copied[space.label(key)] += target.add(space.name, key, value)
        elif target.get(space.name, key) != value:
            target.put(space.name, key, value)
            copied[space.label(key)] += 1
