"""Finding mail: full-text search and threads, limited to what the caller may read.

The store's index answers which messages match (``Store.search``); the rules of who sees
what stay here, with the service. A search covers the caller's own mailbox and the
broadcasts it may see (what ``inbox --all`` lists); a thread also shows what the caller
sent, since a conversation has two sides. Every hit is loaded from the store, so a result
is always the stored message, in its current state, never the index's copy; a message
the owner archived (``mailslot archive``) is found in its month's archive, marked so.

A search never waits long for the index to catch up with new mail: the store spends a
moment on it and answers; :class:`~mailslot.core.results.Found` says how many of the
newest messages it did not cover yet.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.dates import UTC, datetime, timedelta
from ..core.errors import InvalidInput, NotFound, Unreadable
from ..core.ids import sender_of
from ..core.message import STATES, Message, State
from ..core.names import check_name
from ..core.query import Search, parse
from ..core.results import Found, Item, ThreadEntry
from ..core.values import replace  # either kind of value class
from ..service import overview
from ..service.mailbox import Mailbox

MAX_LIMIT = 500
MAX_THREAD = 10_000


def search(
    box: Mailbox,
    query: str,
    *,
    sender: str | None = None,
    recipient: str | None = None,
    since: str | None = None,
    until: str | None = None,
    states: Sequence[str] = (),
    thread: str | None = None,
    limit: int = 20,
) -> Found:
    """The caller's messages matching ``query``, best first, whole (nothing is marked).

    ``states`` keeps only messages in those states for the caller; ``thread`` (any id in
    it) only that thread. Dates are ISO 8601; a date without a time is the caller's local
    day, and ``until`` a day includes that whole day.
    """
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be between 1 and {MAX_LIMIT}")
    unknown = set(states) - set(STATES)
    if unknown:
        raise InvalidInput(f"unknown state {', '.join(sorted(unknown))} (unread, read, done)")
    me = box.agent
    request = Search(
        match=parse(query), reader=me,
        sender=None if sender is None else check_name(sender, "--from"),
        recipient=None if recipient is None else check_name(recipient, "--to"),
        since=None if since is None else utc_bound(since, "--since", end_of_day=False),
        until=None if until is None else utc_bound(until, "--until", end_of_day=True),
        thread=None if thread is None else _root(box, thread),
        limit=limit)
    found: list[Item] = []
    offset = 0
    while len(found) < limit:
        ids = box.store.search(replace(request, offset=offset))
        for message_id in ids:
            item = _mine(box, message_id)
            if item is not None and (not states or item.state in states):
                found.append(item)
                if len(found) == limit:
                    break
        if len(ids) < request.limit:
            break
        offset += len(ids)
    return Found(box.shortened(found), box.store.unsearched())


def thread(box: Mailbox, message_id: str) -> list[ThreadEntry]:
    """The thread ``message_id`` belongs to, oldest first: every message of it the caller
    received or sent, with the caller's state and every recipient's."""
    me = box.agent
    root = _root(box, message_id)
    ids = box.store.search(Search(reader=me, sent=True, thread=root, limit=MAX_THREAD))
    if root not in ids:
        ids.insert(0, root)  # the first message stands in the thread even if the index
        # missed it; if the caller cannot read it, it is left out below
    shown: dict[str, tuple[Message, State | None]] = {}
    for found in ids:
        visible = _readable(box, found)
        if visible is not None:
            shown[found] = visible
    statuses = overview.statuses(box.store, list(shown), box.who, viewer=box.viewer)
    return [ThreadEntry(shown[s.message.id][0], shown[s.message.id][1], s) for s in statuses]


def reindex(box: Mailbox) -> int:
    """Build the search index again from the stored messages; how many it holds."""
    return box.store.reindex()


def utc_bound(text: str, option: str, *, end_of_day: bool) -> str:
    """A date or date-time as the index compares it (UTC ISO 8601)."""
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise InvalidInput(f"{option} must be a date like 2026-09-21 or "
                           f"2026-09-21T14:30 (got {text!r})") from None
    if end_of_day and len(text) == 10:
        when += timedelta(days=1)
    if when.tzinfo is None:
        when = when.astimezone()  # the caller's local time
    return when.astimezone(UTC).isoformat()


def _mine(box: Mailbox, message_id: str) -> Item | None:
    """The caller's copy of a message (or a broadcast it may see), whole, else its
    archived copy (:meth:`Mailbox.read` finds both); ``None`` if it has none (not its
    mail, retracted before it was served, unreadable)."""
    try:
        return box.read(message_id, mark=False, short=False)
    except (NotFound, Unreadable):
        return None


def _readable(box: Mailbox, message_id: str) -> tuple[Message, State | None] | None:
    """A message the caller received (with its state) or sent (``None`` state)."""
    item = _mine(box, message_id)
    if item is not None:
        return item.message, item.state
    if sender_of(message_id) != box.agent:
        return None
    for agent in box.store.agent_names():
        try:
            return box.store.load(agent, message_id)[0], None
        except (NotFound, Unreadable):
            continue
    return None


def _root(box: Mailbox, raw: str) -> str:
    """The id of the first message of the thread that the caller's message ``raw`` is in."""
    message_id = box.resolve_known(raw)
    found = _readable(box, message_id)
    if found is None:
        raise NotFound(f"no message {message_id} for {box.agent}")
    return found[0].thread or found[0].id
