"""Naming a message: the whole id a short form (a prefix, a random tail) stands for
among the mail a caller may name, the short forms a listing shows, and my copy of a
message once it is named (or where the owner archived it).

Open mail is looked among first, done mail and the archives only when nothing open
matches (:func:`~mailslot.core.shortids.resolve_first`): naming one message needs no
listing of history.
"""

from __future__ import annotations

from itertools import chain
from operator import itemgetter

from ..access import gates
from ..core.errors import MailslotError, NotFound
from ..core.ids import check_id, sender_of
from ..core.message import State
from ..core.names import BROADCAST_RECIPIENT
from ..core.results import Item, where_archived
from ..core.shortids import resolve_first, short_forms
from ..core.values import replace
from .mailbox_base import MailboxBase

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Sequence

RECENT_SENT = 1000
"""How many of what an agent sent its short forms are first looked among (the rest, with
its done mail, only when nothing newer matches)."""


class IdResolution(MailboxBase):
    """A mailbox's ids: resolving them, shortening them, finding what they name. Every
    feature that takes an id builds on this one."""

    def resolve_id(self, raw: object, *, everywhere: bool = False) -> str:
        """The whole id ``raw`` names: an id, a unique prefix (6+ characters) or its
        random tail, among my mail and the broadcasts (``everywhere``: every mailbox);
        open mail first, then done mail, then archived mail
        (:func:`~mailslot.core.shortids.resolve_first`)."""
        owner = "" if everywhere else self.agent
        archived = self._archived_ids(None if everywhere else self.agent)
        return check_id(resolve_first(raw, [*self._nameable(everywhere), archived],
                                      owner=owner))

    def resolve_known(self, raw: object) -> str:
        """The whole id ``raw`` names among the mail this caller may see the status of
        (:func:`overview.may_see`): what it received or sent, and the broadcasts; the
        owner (:attr:`viewer` ``None``) names any message. So a short form of someone
        else's mail is "no message", never "ambiguous" with a list of their ids."""
        if self.viewer is None:
            return self.resolve_id(raw, everywhere=True)
        mine = self.agent
        return check_id(resolve_first(raw, self._known_tiers(mine), owner=mine))

    def _known_tiers(self, me: str) -> Iterator[Iterable[str]]:
        """What :meth:`resolve_known` looks among, each tier listed only when reached:
        my open mail, the broadcasts I may see and the newest of what I sent; then my
        done mail and everything I sent; then my archived mail."""
        yield chain.from_iterable(self._known_lists(me, ("unread", "read"), RECENT_SENT))
        yield chain.from_iterable(self._known_lists(me, ("done",), None))
        yield chain(self._archived_ids(me),
                    (i for i in self._archived_ids(None) if sender_of(i) == me))

    def _known_lists(self, me: str, states: tuple[State, ...], sent: int | None
                     ) -> Iterator[Iterable[str]]:
        """One tier of :meth:`_known_tiers`, each list listed only when it is reached."""
        yield map(itemgetter(0), self.store.entries(me, states))
        if sent is not None:
            yield self._broadcasts_seeable(me)
        yield self.store.sent_ids(me, sent)
        yield self._sent_to_peers(me, sent)

    def _sent_to_peers(self, me: str | None, most: int | None) -> Iterator[str]:
        """What ``me`` (``None``: anyone) sent to agents of peers (the sender's copies
        :mod:`mailslot.peers` keeps), read only when reached and only where config.json
        names a peer."""
        try:
            if not self.store.load_config().get("peers"):
                return
        except MailslotError:
            return
        from .peer_views import sent_ids

        yield from sent_ids(self.store, me, most)

    def _broadcasts_seeable(self, me: str) -> Iterator[str]:
        """The standing broadcasts, and the retracted ones ``me`` was served."""
        yield from self.store.broadcast_ids()
        retracted = self.store.broadcast_ids(live=False)
        seen = self.store.seen(me) if retracted else set()
        yield from (i for i in retracted if i in seen)

    def _nameable(self, everywhere: bool, listed: Sequence[tuple[str, State]] = (),
                  listed_states: Sequence[State] = (), *, history: bool = True
                  ) -> list[Iterable[str]]:
        """The ids a short form may stand for, in two tiers listed lazily (a whole id
        needs none): open mail and the broadcasts, then done mail (``history``).

        ``listed``: my own ``(id, state)`` pairs in ``listed_states``, which the caller
        already listed (never with ``everywhere``): only my other states are listed here.
        """
        # Chained lists, not a generator yielding each id: a full inbox has 10,000 of them.
        tiers: list[Iterable[str]] = [chain.from_iterable(self._nameable_lists(
            everywhere, listed, listed_states, ("unread", "read")))]
        if history:
            tiers.append(chain.from_iterable(self._nameable_lists(
                everywhere, listed, listed_states, ("done",))))
        return tiers

    def _nameable_lists(self, everywhere: bool, listed: Sequence[tuple[str, State]],
                        listed_states: Sequence[State], tier: tuple[State, ...]
                        ) -> Iterator[Iterable[str]]:
        """The lists one tier of :meth:`_nameable` chains, each listed when reached."""
        yield (i for i, state in listed if state in tier)
        rest = tuple(s for s in tier if s not in listed_states)
        for box in self.store.agent_names() if everywhere else [self.agent]:
            yield map(itemgetter(0), self.store.entries(box, rest))
        if "unread" in tier:
            yield self.store.broadcast_ids()
            yield self.store.broadcast_ids(live=False)
            if everywhere and (me := self._me()) is not None:
                yield self.store.sent_ids(me, RECENT_SENT)
            if everywhere:
                yield self._sent_to_peers(None, None)

    def _archived_ids(self, agent: str | None) -> Iterator[str]:
        """The last tier short ids are resolved among (never needed to make one: the
        tiers before it are looked in first): archived mail (``agent``'s copies;
        ``None``: all), listed only when reached; an unreadable archive names nothing."""
        try:
            yield from self.store.archived_ids(agent)
        except MailslotError:
            return

    def _short_forms(self, ids: list[str], *, everywhere: bool,
                     listed: Sequence[tuple[str, State]] = (),
                     listed_states: Sequence[State] = (), history: bool = True
                     ) -> dict[str, str]:
        """The short form of each id that :meth:`resolve_id` turns back into it: unique
        among open mail when every one of ``ids`` is open (``history`` ``False``), else
        among everything."""
        if not ids:
            return {}
        return short_forms(ids, chain.from_iterable(
            self._nameable(everywhere, listed, listed_states, history=history)))

    def shortened(self, items: Sequence[Item]) -> list[Item]:
        """``items`` of my mail, each with the short form my inbox shows for it (its
        random tail, or the whole id where another message shares the tail), found in
        one pass: done mail is looked among only when one of them is done."""
        forms = self._short_forms([i.message.id for i in items], everywhere=False,
                                  history=any(i.state == "done" for i in items))
        return [replace(i, short=forms[i.message.id]) for i in items]

    def _find(self, message_id: str, *, header_only: bool = False) -> Item:
        """My copy of a directed message, or a broadcast I may see."""
        me = self.agent
        if message_id in gates.set_aside(self.store, me, self.notifier()):
            raise NotFound(f"no message {message_id} for {me} (it was set aside: it did "
                           "not come through mailslot's gate)")
        try:
            message, state = self.store.load(me, message_id, header_only=header_only)
        except NotFound:
            pass
        else:
            if not self._for_me(message):
                raise NotFound(f"no message {message_id} for this session of {me} (it is "
                               f"for its session {message.instance})")
            return Item(message, state, me)
        try:
            message, live = self.store.load_broadcast(message_id, header_only=header_only)
        except NotFound:
            raise NotFound(f"no message {message_id} for {me}"
                           f"{self.archived_note(message_id)}") from None
        seen = message_id in self.store.seen(me)
        if not live and not seen and message.sender != me:
            raise NotFound(f"no message {message_id} for {me} (it was retracted)")
        shown: State = "read" if seen or message.sender == me else "unread"
        return Item(message, shown, BROADCAST_RECIPIENT)

    def archived_copy(self, message_id: str) -> Item | None:
        """My copy of ``message_id`` in the month archives, or ``None`` (none, or an
        archive that cannot be read: ``doctor`` names that)."""
        try:
            copies = self.store.archived(message_id)
        except MailslotError:
            return None
        me = self.agent
        return next((Item(m, "done", agent, archived=True)
                     for agent, m in copies if agent == me), None)

    def archived_note(self, message_id: str) -> str:
        """Where an archived copy of ``message_id`` this caller may see is kept and how
        to bring it back (`` (it is archived ...)``), or ``""``."""
        try:
            copies = self.store.archived(message_id)
        except MailslotError:
            return ""
        if not any(self.viewer is None or agent == self.viewer or m.sender == self.viewer
                   for agent, m in copies):
            return ""
        return f" (it is {where_archived(message_id)})"
