"""What a caller lists: a page of a mailbox (``inbox``, ``read_messages``), what it
sent, and who is there. A page reads only its own messages' headers, newest first, and
says how many are left after it; an unreadable file is skipped and counted.
"""

from __future__ import annotations

import heapq

from ..access import authority, gates
from ..core.errors import InvalidInput, MailslotError, NoIdentity, NotFound, Unreadable
from ..core.ids import sender_of
from ..core.message import Message, State
from ..core.names import BROADCAST_RECIPIENT, check_name, closest
from ..core.results import AgentInfo, InboxPage, Item, Page, Status
from ..core.values import replace
from ..mail.broadcasts import to_serve
from .id_resolution import RECENT_SENT, IdResolution

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from typing import Any


class Listings(IdResolution):
    """A mailbox's listings: pages of mail, what was sent, the agents. Built on
    :class:`IdResolution`: a page shows each message's short form, and starts after
    the message an id names."""

    def _mailboxes(self, for_: str | None) -> list[str]:
        """The mailboxes a page of ``for_`` lists: mine, the one named (when this caller
        may read it), or every one (``all``). The HTTP front end narrows it to mine."""
        if for_ is None:
            return [self.agent]
        if self.credential is not None or self.peer_of is not None:
            authority.check_read(self.principal, for_.lower())
        if for_.lower() == BROADCAST_RECIPIENT:
            return self.store.agent_names()
        return [check_name(for_, "mailbox")]

    def inbox(
        self,
        for_: str | None = None,
        *,
        include_done: bool = False,
        unread_only: bool = False,
        limit: int = 20,
    ) -> Page:
        """Newest first, one page, reading only the page's headers (see :meth:`page`)."""
        return self.page(for_, include_done=include_done, unread_only=unread_only,
                         limit=limit).items

    def page(
        self,
        for_: str | None = None,
        *,
        include_done: bool = False,
        unread_only: bool = False,
        limit: int = 20,
        number: int = 1,
        before: str | None = None,
        bodies: bool = False,
    ) -> InboxPage:
        """Page ``number`` of the listing (or the page after the id ``before``), newest
        first, reading only the page's headers (``bodies``: whole messages), with how many
        are left after it.

        Default: unread and read mail plus broadcasts not yet served. ``include_done``
        adds done mail and broadcasts already served; ``unread_only`` keeps only unread.
        An unreadable file is skipped and counted (``Page.unreadable``).
        """
        if limit < 1:
            raise InvalidInput("limit must be at least 1")
        if number < 1:
            raise InvalidInput("page must be at least 1")
        if for_ is None:
            gates.set_aside(self.store, self.agent, self.notifier())
        states: tuple[State, ...] = ("unread",)
        if not unread_only:
            states = ("unread", "read", "done") if include_done else ("unread", "read")
        everyone = for_ is not None and for_.lower() == BROADCAST_RECIPIENT
        groups = self._listing(for_, states, served=include_done and not unread_only)
        # My own ids in those states, already listed: short forms need not list them again.
        listed = groups[0][1] if for_ is None else []
        if for_ is None and not listed:
            self._note_stranger()
        if before is not None:
            last = self.resolve_id(before, everywhere=not self._own_box(for_))
            groups = [(box, [e for e in got if e[0] < last]) for box, got in groups]
        skip = (number - 1) * limit
        loaded, unreadable = self._load_newest(groups, skip, limit, bodies=bodies)
        forms = self._short_forms([m.id for m, _, _ in loaded], everywhere=for_ is not None,
                                  listed=listed, listed_states=states if listed else (),
                                  history=any(state == "done" for _, state, _ in loaded))
        items = Page([Item(m, state, box, forms[m.id]) for m, state, box in loaded],
                     unreadable)
        more = max(0, sum(len(got) for _, got in groups) - skip - limit)
        done = 0
        archived: tuple[tuple[str, int], ...] = ()
        if not items and not everyone:
            box = self._mailboxes(for_)[0]
            if include_done:
                archived = self._archived_months(box)
            else:
                done = self.store.count_done(box)
        return InboxPage(items, more, done, archived)

    def _archived_months(self, box: str) -> tuple[tuple[str, int], ...]:
        """How many of ``box``'s messages the owner archived, by month (for an empty
        listing); none when the archives cannot be read (``doctor`` names that)."""
        months: dict[str, int] = {}
        for message_id in self._archived_ids(box):
            months[message_id[:7]] = months.get(message_id[:7], 0) + 1
        return tuple(sorted(months.items()))

    def _listing(self, for_: str | None, states: tuple[State, ...], *, served: bool
                 ) -> list[tuple[str, list[tuple[str, State]]]]:
        """What a page of ``for_`` lists, one group per mailbox as the store listed it
        (``(id, state)`` pairs, unsorted), the broadcasts last: those still to serve as
        unread (every standing one for ``all``), and with ``served`` those already
        served as read."""
        groups: list[tuple[str, list[tuple[str, State]]]] = [
            (box, self.store.entries(box, states)) for box in self._mailboxes(for_)]
        live = self.store.broadcast_ids()
        if for_ is not None and for_.lower() == BROADCAST_RECIPIENT:
            shared: list[tuple[str, State]] = [(i, "unread") for i in live]
        else:
            box = self._mailboxes(for_)[0]
            seen = self.store.seen(box)
            shared = [(i, "unread") for i in to_serve(live, seen, box)]
            if served:
                shared.extend((i, "read") for i in live if i in seen and sender_of(i) != box)
        groups.append((BROADCAST_RECIPIENT, shared))
        return groups

    def _note_stranger(self) -> None:
        """A note (:attr:`notes`) when this process speaks as a name the mailbox does not
        know (no mailbox, not in the config, nothing sent) and a known agent's name is a
        typo away: ``--agent alcie`` beside ``alice``. Asked only when my own listing
        came back empty, so a mailbox with mail never pays for it."""
        me = self.agent
        try:
            roster = self.known_agents()
        except MailslotError:  # a config that cannot be read: inbox says nothing of it
            return
        near = None if me in roster else closest(me, roster)
        if near is not None and not self.store.sent_ids(me, 1):  # a sender is known too
            source = self.identity.source if self.identity is not None else "--agent"
            note = (f"this mailbox knows no agent {me} (your name, from {source}): did you "
                    f"mean {near}?")
            if note not in self.notes:  # a server's mailbox lives on: said once
                self.notes.append(note)

    def known_agents(self) -> list[str]:
        """Names with a mailbox, in the config, or the owner: whom a message can reach."""
        from . import recipients  # here: a page of mail never loads it

        return recipients.known(self.store, self.config)

    def _own_box(self, for_: str | None) -> bool:
        """Is ``for_`` this process's own inbox (``None`` is; without an identity, no
        named one is)? A page of it names ids among its own mail only."""
        if for_ is None:
            return True
        try:
            return for_.lower() == self.agent
        except NoIdentity:
            return False

    def _load_newest(self, groups: list[tuple[str, list[tuple[str, State]]]], skip: int,
                     limit: int, *, bodies: bool
                     ) -> tuple[list[tuple[Message, State, str]], int]:
        """The newest ``limit`` readable messages among ``groups`` (each a mailbox and
        the ``(id, state)`` pairs listed in it) after the newest ``skip``, each with its
        state and mailbox, and how many unreadable files were skipped: one never breaks
        the page. Not yet ``Item``s: the caller makes each once, with its short form."""
        page: list[tuple[Message, State, str]] = []
        unreadable = 0
        looked = skip
        want = skip + limit
        while True:
            # Ids sort by time and are unique per mailbox, so the largest are the newest;
            # only as many files are read as the page needs (more if some are skipped).
            # Each mailbox's newest are picked among its bare pairs first: a 10,000-mail
            # inbox builds no 10,000 triples.
            newest = heapq.nlargest(want, [(i, s, box) for box, got in groups
                                           for i, s in heapq.nlargest(want, got)])
            for message_id, state, box in newest[looked:]:
                try:
                    if box == BROADCAST_RECIPIENT:
                        message, _ = self.store.load_broadcast(message_id,
                                                               header_only=not bodies)
                    else:
                        message, state = self.store.load(box, message_id,
                                                         header_only=not bodies,
                                                         state=state)
                except NotFound:
                    continue  # moved or retracted while we listed
                except Unreadable:
                    unreadable += 1
                    continue
                if box != BROADCAST_RECIPIENT and not self._for_me(message):
                    continue  # another instance's mail (name@session)
                page.append((message, state, box))
                if len(page) == limit:
                    return page, unreadable
            if len(newest) < want:
                return page, unreadable
            looked, want = want, want * 2

    def sent(self, *, limit: int = 20) -> list[Status]:
        """What I sent, newest first, with each recipient's state (no id to remember)."""
        from . import overview  # here: a page of mail never loads it

        if limit < 1:
            raise InvalidInput("limit must be at least 1")
        page = overview.sent(self.store, self.agent, self.who, limit, self._clock())
        if not page:
            self._note_stranger()
        recent = set(self.store.sent_ids(self.agent, RECENT_SENT))
        forms = self._short_forms([s.message.id for s in page], everywhere=True,
                                  history=not all(s.message.id in recent for s in page))
        return [replace(s, short=forms[s.message.id]) for s in page]

    def read_page(
        self, for_: str | None = None, *, unread_only: bool = True, limit: int = 20
    ) -> tuple[Page, bool]:
        """A page of mail for a model (``read_messages``), and whether it holds bodies.

        Nothing is marked: the model marks mail read or done when it has handled it, so
        mail it was shown but lost (a compacted context) is shown again. My own mailbox:
        whole messages, newest first. Another agent's mailbox, or ``all``: headers only
        (as ``inbox --for`` shows); only a message's recipient reads its body.
        """
        own = for_ is None or (
            for_.lower() != BROADCAST_RECIPIENT and check_name(for_, "mailbox") == self.agent
        )
        page = self.page(None if own else for_, unread_only=unread_only, limit=limit,
                         bodies=own)
        return page.items, own

    def path_of(self, item: Item) -> str | None:
        """Where a person finds this message on disk (for the demo and ``read``)."""
        if item.archived or item.mailbox == BROADCAST_RECIPIENT:
            return None
        return self.store.path_of(item.mailbox, item.message.id)

    def stats(self, agent: str | None = None, *, since: str | None = None
              ) -> list[dict[str, Any]]:
        """How long each step of the delivery ladder took for mail delivered since
        ``since`` (a date, a time, or ``30m``/``2h``/``7d`` ago; default 7 days), per
        recipient and host: count, p50 and p99 (:mod:`mailslot.service.timing`). Of
        the mail this process may see the ladder of: all of it for the owner, what an
        agent sent or got for an agent."""
        from . import timing  # here: a page of mail never loads it

        name = None if agent is None else check_name(agent, "agent")
        return timing.stats(self.store, timing.since(since, self._clock()), name,
                            viewer=self.viewer)

    def who(self, *, online_only: bool = False) -> list[AgentInfo]:
        """Every agent known from the config, a mailbox folder, a message's sender or a
        server, with unread counts, whether a server of it is online, its wake (where
        its servers run only for a caller that :attr:`sees_machines`), its group gate's
        member count and its parent (``online_only``: those online now)."""
        from . import overview  # here: a page of mail never loads it

        found = overview.who(self.store, self.config, self._clock(), online_only=online_only)
        return found if self.sees_machines else [a.without_machines() for a in found]
