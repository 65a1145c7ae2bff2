"""Moving a mailbox between stores (``mailslot migrate --from DIR|URL --to DIR|URL``).

Everything goes through the :class:`~mailslot.store.Store` protocol, so any pair of
backends works (files → PostgreSQL, back, or folder to folder). Only into a mailbox
(:func:`check_target`): a database without mailslot's schema, or a folder of other
things, is refused unless ``init`` (``--init``) asks to make it one first, as every
other command refuses it. Registered agents
move with their credentials' hashes, so every credential file still works.
Idempotent: what the target already has is left alone, so a second run copies nothing
and an interrupted run is finished by running it again. Message text is carried as the
message itself, which both stores write as the same bytes; states only move forward.

Not copied: presence, per-session state (hook sessions too) and fenced sessions (they
describe running processes, which announce themselves again), archived mailboxes and
quarantined messages (set aside on purpose; they stay in the source). Unreadable
messages cannot be carried and are named.
"""

from __future__ import annotations

from collections import Counter

from ..access.gates import group_of
from ..backends import open_store
from ..core.errors import InvalidInput, NotFound, Refused, Unreadable
from ..core.message import STATES
from ..core.names import GROUP_MARK
from ..store import Store, free_for_mailbox
from ..store.records import NOTIFY_QUEUES

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from typing import Any


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
    """Seen sets, the index of mail for one session, the events log, the
    config, registered agents, gates (a group gate's members too), queued wakes and
    notices and the session log."""
    for agent in source.agent_names():
        missing = sorted(source.seen(agent) - target.seen(agent))
        target.add_seen(agent, missing)
        copied["seen"] += len(missing)
        there = target.instance_mail(agent)  # which mail is for one session
        for message_id, session in source.instance_mail(agent).items():
            if message_id not in there:
                target.add_instance_mail(agent, message_id, session)
                copied["instance mail"] += 1
    if next(target.events(), None) is None:  # a log is copied whole, once
        for event in source.events():
            target.append_event(event)
            copied["events"] += 1
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
    for record in source.registered_agents():
        copied["registrations"] += target.register_agent(record)
    names = set(source.agent_names()) | {r.name for r in source.registered_agents()}
    for agent in sorted(names):
        _gate(source, target, agent, copied)
    _queued(source, target, copied, "wakes")
    for lane in range(NOTIFY_QUEUES):
        _queued(source.notify_queue(lane), target.notify_queue(lane), copied, "notices")
    if not target.started_sessions():  # the session log, like the events log: whole, once
        for started in source.started_sessions():
            target.log_session(started)
            copied["sessions started"] += 1


def _queued(source: Store, target: Store, copied: Counter[str], kind: str) -> None:
    """The entries queued (not claimed) in one queue: the wake queue or a notifier's."""
    for agent in source.wake_agents():
        for entry in source.wake_pending(agent):
            copied[kind] += target.wake_enqueue(entry)


def _gate(source: Store, target: Store, agent: str, copied: Counter[str]) -> None:
    """``agent``'s gate, members, open requests and what passed it: without
    the last, mail that came through the gate would be set aside in the target."""
    accept = source.accept_of(agent)
    if accept != target.accept_of(agent):
        target.set_accept(agent, accept)
        copied["gates"] += 1
    keys = [agent]
    group = group_of(accept)
    if group is not None:  # a group gate's members and requests are the group's
        keys.append(GROUP_MARK + group)
    for key in keys:
        for member in source.members(key):
            copied["members"] += target.set_member(key, member, True)
        there = target.requests(key)
        for requester, message_id in source.requests(key).items():
            if there.get(requester) != message_id:
                target.set_request(key, requester, message_id)
                copied["requests"] += 1
    missing = sorted(source.passed(agent) - target.passed(agent))
    target.add_passed(agent, missing)
    copied["passed"] += len(missing)
