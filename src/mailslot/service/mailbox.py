"""The service: every rule of mailslot, over any :class:`~mailslot.store.Store`.

Front ends (CLI, MCP server, hooks, watcher) call a :class:`Mailbox` and hold no rule of
their own: identity, validation, limits, reply routing, broadcast visibility and who may
retract all live here, once.
"""

from __future__ import annotations

import heapq
import os
from itertools import chain
from operator import itemgetter

from ..access import authority, fencing, gates, instances
from ..access.identity import Identity, derive_identity
from ..backends import no_mailbox, open_store
from ..core.config import Config, hostname
from ..core.dates import UTC, datetime
from ..core.errors import (
    InvalidInput,
    MailslotError,
    NoIdentity,
    NotFound,
    Refused,
    StoreError,
    Unreadable,
)
from ..core.ids import check_id, sender_of
from ..core.message import NOTIFY_RUNGS, STATES, Message, State
from ..core.names import BROADCAST_RECIPIENT, SYSTEM_SENDER, check_name, closest
from ..core.results import (
    AgentInfo,
    DoctorReport,
    Finished,
    InboxPage,
    Item,
    Page,
    Status,
    WhoAmI,
    where_archived,
)
from ..core.shortids import resolve_first, short_forms
from ..core.text import MAX_SUBJECT_LENGTH, clean_body, clean_field, quoted
from ..core.values import replace
from ..mail import governor
from ..mail.broadcasts import to_serve
from ..mail.posting import Notifier, post, receipt
from . import ladder, overview, recipients

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
    from pathlib import Path
    from typing import Any

    from ..access.authority import Principal
    from ..access.credentials import Credential
    from ..mail.presence import Beacon
    from ..store import Store
    from ..wake.choice import Diagnosis

_REPLY_PREFIX = "Re: "
_CLAIMED_SENDER = ("from", "sender")
_RECENT_SENT = 1000
"""How many of what an agent sent its short forms are first looked among (the rest, with
its done mail, only when nothing newer matches)."""
"""Arguments a caller might name a sender with; the sender is never an argument."""


class Mailbox:
    """One process's view of the mailbox: a store, and who this process speaks as."""

    def __init__(
        self,
        store: Store,
        identity: Identity | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
        credential: Credential | None = None,
        peer_of: str | None = None,
    ) -> None:
        self.store = store
        self.identity = identity
        self._clock = clock or (lambda: datetime.fromtimestamp(store.clock(), UTC))
        """Now, by the store's clock: message dates, receipts and presence
        agree between machines whose own clocks do not."""
        self._config: Config | None = None
        self.credential = credential
        """The credential this process speaks with, checked at first use."""
        self.peer_of = peer_of
        """``--peer-of``: speak as a child of this agent without a registration."""
        self._principal: Principal | None = None
        self.session: str | None = None
        """The server session this process is: a fenced one may not write."""
        self.host_pid: int | None = None
        """The host process that started this server: its hook sessions are this
        server's instances too (see :mod:`mailslot.access.instances`)."""
        self._mine: set[str] | None = None
        self.notes: list[str] = []
        """What the last send wants its caller told (a new mailbox, a wake not allowed),
        or a listing of my own mail (a name of mine the mailbox does not know)."""

    @classmethod
    def open(
        cls,
        root: str | None = None,
        agent: str | None = None,
        *,
        env: Mapping[str, str] = os.environ,
        cwd: Path | None = None,
        credential: str | None = None,
        peer_of: str | None = None,
    ) -> Mailbox:
        """The store at ``--dir``/``MAILSLOT_DIR``/``~/mailslot`` as ``agent``.

        With a ``credential`` file (else a binding its launcher handed this process,
        ``MAILSLOT_BINDING``, else ``MAILSLOT_CREDENTIAL``) the identity is the
        credential's agent, checked against the store at first use, and the store is the
        credential's unless one is named. ``peer_of`` (or ``MAILSLOT_PEER_OF``) binds the
        child rules to an unregistered agent.
        """
        from ..access.credentials import read_binding, read_credential

        binding = None if credential else env.get("MAILSLOT_BINDING") or None
        path = credential or binding or env.get("MAILSLOT_CREDENTIAL") or None
        held = (read_binding(path) if binding else read_credential(path)) if path else None
        if held is not None and root is None and not env.get("MAILSLOT_DIR"):
            root = held.store
        store = open_store(root, env)
        if held is None:
            identity = derive_identity(agent, env, cwd)
        else:
            if agent is not None and check_name(agent, "--agent") != held.agent:
                raise InvalidInput(f"--agent {agent} does not match the credential, which "
                                   f"is {held.agent}'s; drop one of the two")
            if held.store != store.location:
                raise InvalidInput(f"the credential {path} is for the mailbox at "
                                   f"{held.store}, not {store.location}")
            identity = Identity(held.agent, "credential")
        parent = peer_of or env.get("MAILSLOT_PEER_OF") or None
        return cls(store, identity, credential=held,
                   peer_of=check_name(parent, "--peer-of") if parent else None)

    # Identity and config -------------------------------------------------------
    @property
    def agent(self) -> str:
        """The identity this process speaks as; raises if there is none."""
        if self.credential is not None:
            return self.principal.name
        if self.identity is None:
            raise NoIdentity(
                "no identity: pass --agent NAME, set MAILSLOT_AGENT, or run inside a git checkout"
            )
        if self.identity.source == "git":
            return self._git_name(self.identity)
        return check_name(self.identity.name, f"agent name (from {self.identity.source})")

    @property
    def principal(self) -> Principal:
        """Who this process speaks as, with its bounds: the credential is
        checked against the store once per service object, so a server that opens one per
        call refuses a rotated or revoked credential at its next call."""
        if self._principal is None:
            if self.credential is not None:
                self._principal = authority.verify(self.store, self.credential,
                                                   self._clock())
            else:
                self._principal = authority.Principal(self.agent, parent=self.peer_of)
        return self._principal

    @staticmethod
    def _git_name(identity: Identity) -> str:
        try:
            return check_name(identity.name, "agent name")
        except InvalidInput as exc:
            folder = os.path.basename(identity.path or "")
            raise NoIdentity(
                f"the git checkout's name {quoted(folder)} does not make an agent name "
                f"({exc}); pass --agent NAME (a-z, 0-9 and '-') or set MAILSLOT_AGENT"
            ) from None

    def whoami(self) -> WhoAmI:
        """Who this process speaks as and why, or why it cannot speak at all."""
        name, problem = None, None
        try:
            name = self.agent
        except InvalidInput as exc:
            problem = str(exc)
        identity = self.identity
        missing = None if self.store.exists() else no_mailbox(self.store.location)
        return WhoAmI(name, identity.source if identity else None,
                      identity.path if identity else None, self.store.location,
                      type(self.store).__name__, problem, missing)

    def require_mailbox(self) -> None:
        """Refuse, in one line and before anything is written, a command that only reads
        or checks when there is no mailbox here: a mistyped ``--dir`` is said, not
        answered with "no messages" (or "ok")."""
        if not self.store.exists():
            raise NotFound(no_mailbox(self.store.location))

    def check_identity(self) -> str:
        """Fail early (before reading a body) when there is no usable identity."""
        return self.agent

    @property
    def config(self) -> Config:
        if self._config is None:
            self._config = Config(self.store.load_config())
        return self._config

    @property
    def max_body_bytes(self) -> int:
        return self.config.max_body_bytes

    # Sending -------------------------------------------------------------------
    def _deliver(self, to: list[str], subject: str, body: str, *,
                 before: Callable[[Message], None] | None = None,
                 answering: Message | None = None, **fields: Any) -> Message:
        """Write the message for every recipient, then queue the wakes it may cause; the
        loop governor first (``answering``: the message a reply answers)."""
        authority.check_write(self.store, self.config, self.principal)
        self._unfenced()
        taken = governor.check_send(self.store, self.config, self.agent, to,
                                    self._clock().timestamp(), answering=answering)
        try:
            message = post(self.store, self._clock, self.agent, to, subject, body,
                           before=before, **fields)
        except MailslotError:
            governor.give_back(self.store, taken)  # nothing was sent: nothing is spent
            raise
        self._after_delivery(message)
        return message

    def send(
        self,
        to: str | Sequence[str],
        subject: str,
        body: str,
        *,
        re_issue: object = None,
        expect_reply: bool = False,
        wake: bool = False,
        new: bool = False,
        notify_when: str | None = None,
    ) -> Message:
        """Deliver a new message to one or more agents; returns it once it is durable.

        ``notify_when`` (``surfaced``, ``read`` or ``done``): one notice from ``mailslot``
        when the first recipient reaches that rung of the delivery ladder.

        ``re_issue`` is stored exactly as given, so it must be text: a number or anything
        else a front end received is refused, never turned into text.

        A recipient without a mailbox that is close to a known agent's name is refused as
        a likely typo unless ``new``; a genuinely new one gets a mailbox and a note.
        """
        self.notes = []
        names, prefix = recipients.parse_instance(to)
        authority.check_send(self.principal, names)
        gates.check(self.store, self.config, self.principal, names)
        roster = recipients.roster_for(self.store, self.config, names, self.agent)
        self.notes = recipients.check_new(names, roster, self.agent, allow_new=new)
        subject = clean_field(subject, "subject", MAX_SUBJECT_LENGTH)
        fields: dict[str, Any] = {
            "expect_reply": expect_reply,
            "delivery": "wake" if wake else "inbox",
        }
        if re_issue is not None:
            fields["re_issue"] = clean_field(re_issue, "re_issue")
        if notify_when is not None:
            if notify_when not in NOTIFY_RUNGS:
                raise InvalidInput(f"notify_when must be one of {', '.join(NOTIFY_RUNGS)}, "
                                   f"not {quoted(str(notify_when))}")
            fields["notify_when"] = notify_when
        if prefix is not None:  # name@session: one instance of the one recipient
            fields["instance"] = instances.resolve(self.store, names[0], prefix,
                                                   self._clock())
        body = clean_body(body, self.max_body_bytes)
        message = self._deliver(names, subject, body, **fields)
        if wake:
            self.notes += recipients.wake_refusals(self.config, message)
        return message

    def broadcast(self, subject: str, body: str) -> Message:
        """A message every agent but the sender is served once (later agents too)."""
        authority.check_broadcast(self.principal)
        subject = clean_field(subject, "subject", MAX_SUBJECT_LENGTH)
        body = clean_body(body, self.max_body_bytes)
        return self._deliver([BROADCAST_RECIPIENT], subject, body)

    def reply(self, message_id: str, body: str, *, subject: str | None = None) -> Message:
        """Answer a message: to its sender, in its thread; the original becomes done.

        The subject is ``subject`` as given, or by default the original's with ``Re: ``.
        The reply is delivered before the original is marked, so a crash in between
        shows the original again rather than losing the answer.
        """
        chosen = None if subject is None else clean_field(subject, "subject",
                                                          MAX_SUBJECT_LENGTH)
        original = self._find(self.resolve_id(message_id), header_only=True)
        sender = original.message.sender
        if sender == SYSTEM_SENDER:
            raise Refused("notices from mailslot cannot be replied to; mark them done")
        if original.message.is_broadcast and sender == self.agent:
            raise Refused("that is your own broadcast; there is no one to reply to")
        recipient = check_name(sender, "original sender")
        authority.check_reply(self.principal, recipient)
        subject = chosen or original.message.subject
        if chosen is None and not subject.lower().startswith(_REPLY_PREFIX.lower()):
            subject = _REPLY_PREFIX + subject
        reply = self._deliver(
            [recipient],
            subject[:MAX_SUBJECT_LENGTH],
            clean_body(body, self.max_body_bytes),
            answering=original.message,
            in_reply_to=original.message.id,
            thread=original.message.thread or original.message.id,
            re_issue=original.message.re_issue,
        )
        self._event("replied", reply.id, in_reply_to=original.message.id)
        self._settle(original, "done")
        return reply

    def refuse_claimed_sender(self, command: str, arguments: Mapping[str, object]) -> None:
        """Refuse a request that names its own sender (``from`` or ``sender``), before
        anything is written: the sender is always this process's identity, and a caller
        whose claim were silently dropped would believe it had spoken as another."""
        for claim in _CLAIMED_SENDER:
            if claim in arguments:
                raise InvalidInput(f"{command} takes no {quoted(claim)}: you send as "
                                   f"{self.agent}")

    def request(self, to: str, subject: str, body: str,
                record: Callable[[Message], None]) -> Message:
        """An access request (:meth:`gates.Gate.join`): it passes ``to``'s gate, being
        ``record``ed as one before its delivery; the credential and child rules still
        apply."""
        authority.check_send(self.principal, [to])
        return self._deliver([to], subject, body, before=record, expect_reply=True)

    @property
    def gate(self) -> gates.Gate:
        """This agent's gate: join others', answer requests, open or close its own."""
        return gates.Gate(self)

    def known_agents(self) -> list[str]:
        """Names with a mailbox, in the config, or the owner: whom a message can reach."""
        return recipients.known(self.store, self.config)

    # Reading -------------------------------------------------------------------
    def _mailboxes(self, for_: str | None) -> list[str]:
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

    def _me(self) -> str | None:
        """This process's agent, or ``None`` without an identity."""
        try:
            return self.agent
        except NoIdentity:
            return None

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
        if limit < 1:
            raise InvalidInput("limit must be at least 1")
        page = overview.sent(self.store, self.agent, self.who, limit, self._clock())
        if not page:
            self._note_stranger()
        recent = set(self.store.sent_ids(self.agent, _RECENT_SENT))
        forms = self._short_forms([s.message.id for s in page], everywhere=True,
                                  history=not all(s.message.id in recent for s in page))
        return [replace(s, short=forms[s.message.id]) for s in page]

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
        yield chain.from_iterable(self._known_lists(me, ("unread", "read"), _RECENT_SENT))
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

    def _broadcasts_seeable(self, me: str) -> Iterator[str]:
        """The standing broadcasts, and the retracted ones ``me`` was served."""
        yield from self.store.broadcast_ids()
        retracted = self.store.broadcast_ids(live=False)
        seen = self.store.seen(me) if retracted else set()
        yield from (i for i in retracted if i in seen)

    @property
    def viewer(self) -> str | None:
        """Whose mail this process may see where it stands: its own agent's, or
        ``None`` for every message's (the config's ``owner``, or a process with no
        identity at all: the person at the mailbox folder, as the CLI runs without
        ``--agent``; every server binds one). A config that cannot be read names no
        owner (fail closed)."""
        if self.identity is None and self.credential is None and self.peer_of is None:
            return None
        me = self.agent
        try:
            owner = self.config.owner
        except MailslotError:
            owner = None
        return None if me == owner and not self.principal.is_child else me

    @property
    def sees_machines(self) -> bool:
        """Is this caller shown where sessions run (process ids, folders, host names)?
        Not a child agent; over HTTP never (:class:`mailslot.frontends.http.bearer.Remote`)."""
        if self.credential is None and self.peer_of is None:
            return True
        return not self.principal.is_child

    def resolve_id(self, raw: object, *, everywhere: bool = False) -> str:
        """The whole id ``raw`` names: an id, a unique prefix (6+ characters) or its
        random tail, among my mail and the broadcasts (``everywhere``: every mailbox);
        open mail first, then done mail, then archived mail
        (:func:`~mailslot.core.shortids.resolve_first`)."""
        owner = "" if everywhere else self.agent
        archived = self._archived_ids(None if everywhere else self.agent)
        return check_id(resolve_first(raw, [*self._nameable(everywhere), archived],
                                      owner=owner))

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

    def _archived_ids(self, agent: str | None) -> Iterator[str]:
        """The last tier short ids are resolved among (never needed to make one: the
        tiers before it are looked in first): archived mail (``agent``'s copies;
        ``None``: all), listed only when reached; an unreadable archive names nothing."""
        try:
            yield from self.store.archived_ids(agent)
        except MailslotError:
            return

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
                yield self.store.sent_ids(me, _RECENT_SENT)

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

    def _unfenced(self) -> None:
        """A replaced (fenced) server session writes nothing."""
        if self.session is not None:
            fencing.check(self.store, self.agent, self.session)

    def start_session(self, session: str, *, exclusive: bool = False,
                      replace: str | None = None) -> list[str]:
        """Become server session ``session`` of this agent (see :mod:`fencing`)."""
        notes = fencing.start(self.store, self.bound_agent(), session, exclusive=exclusive,
                              replace=replace, now=self._clock())
        self.session = session
        return notes

    def my_instances(self) -> set[str] | None:
        """The sessions this process is (``None``: it is none, as the CLI): its server
        session and its host's hook sessions (:mod:`mailslot.access.instances`)."""
        if self.session is None:
            return None
        if self._mine is None:
            self._mine = instances.of_server(self.store, self.agent, self.session,
                                             self.host_pid or os.getppid(), hostname())
        return self._mine

    def _for_me(self, message: Message) -> bool:
        """May this process see ``message`` (not another session's ``name@session``)?
        The sessions it is are looked up only for such mail."""
        return message.instance is None or message.shown_to(self.my_instances())

    def sessions(self, name: str | None = None) -> list[dict[str, Any]]:
        """The sessions of ``name``, or of every agent: servers and hook sessions (where
        they run only for a caller that :attr:`sees_machines`)."""
        agent = check_name(name, "agent") if name is not None else None
        return fencing.sessions(self.store, agent, self._clock(),
                                machines=self.sees_machines)

    def _settle(self, item: Item, to: State) -> State:
        """Move my copy forward to ``to`` (a broadcast is simply recorded as served)."""
        me = self.agent
        self._unfenced()
        if item.mailbox == BROADCAST_RECIPIENT:
            if item.state == "unread" and item.message.sender != me:
                self.store.add_seen(me, [item.message.id])
                self._event("read", item.message.id, agent=me, durable=True)
            return "read"
        before = self.store.move(me, item.message.id, to)
        if STATES.index(before) < STATES.index(to):
            self._event(to, item.message.id, agent=me, durable=True)
            ladder.reached(self.store, item.message, me, to)
            return to
        return before

    def read(self, message_id: str, *, mark: bool = True, short: bool = True) -> Item:
        """The whole message; unread mail becomes read unless ``mark`` is false. My
        mail the owner archived is shown from its month's archive (``archived``, done).
        ``short``: with its short form, as my inbox shows it (:meth:`shortened`)."""
        whole = self.resolve_id(message_id)
        try:
            item = self._find(whole)
        except NotFound:
            kept = self.archived_copy(whole)
            if kept is None:
                raise
            item = kept
        else:
            if mark and item.state == "unread":
                item = Item(item.message, self._settle(item, "read"), item.mailbox)
        return self.shortened([item])[0] if short else item

    def shortened(self, items: Sequence[Item]) -> list[Item]:
        """``items`` of my mail, each with the short form my inbox shows for it (its
        random tail, or the whole id where another message shares the tail), found in
        one pass: done mail is looked among only when one of them is done."""
        forms = self._short_forms([i.message.id for i in items], everywhere=False,
                                  history=any(i.state == "done" for i in items))
        return [replace(i, short=forms[i.message.id]) for i in items]

    def mark_read(self, message_id: str) -> Item:
        item = self._find(self.resolve_id(message_id), header_only=True)
        return self.shortened([Item(item.message, self._settle(item, "read"),
                                    item.mailbox)])[0]

    def done(self, message_ids: Iterable[str], *, everything: bool = False) -> Finished:
        """Mark messages handled. Every id is checked before any is touched.

        Each id is reported on its own: those finished, and those not found (or not
        readable). ``NotFound`` only when none could be finished. ``everything`` (and no
        ids: it must be asked for on its own) finishes all the inbox lists instead
        (:meth:`_done_all`).
        """
        given = list(message_ids)
        if everything and given:
            raise InvalidInput("give message ids or --all (everything in your inbox), not "
                               "both; nothing was marked done")
        if everything:
            return self._done_all()
        ids = list(dict.fromkeys(self.resolve_id(i) for i in given))
        if not ids:
            raise InvalidInput("no message id given")
        finished: list[Item] = []
        missing: list[str] = []
        for message_id in ids:
            try:
                item = self._find(message_id, header_only=True)
            except (NotFound, Unreadable):  # an unreadable file is not a message to finish
                missing.append(message_id)
                continue
            finished.append(Item(item.message, self._settle(item, "done"), item.mailbox))
        result = Finished(finished, missing)
        if not finished:
            raise NotFound(f"no message {result.missing_text()} for {self.agent}")
        return result

    def _done_all(self) -> Finished:
        """Mark everything the default inbox lists handled: unread and read mail, and
        broadcasts not yet served (recorded as served). An empty inbox finishes nothing
        and is no error."""
        aside = set(gates.set_aside(self.store, self.agent, self.notifier()))
        found = sorted((i, box) for box, got in self._listing(None, ("unread", "read"),
                                                              served=False)
                       for i, _ in got if i not in aside)
        finished: list[Item] = []
        missing: list[str] = []
        for message_id, box in found:
            try:
                item = self._listed(message_id, box)
            except (NotFound, Unreadable):  # gone meanwhile, or not a message to finish
                missing.append(message_id)
                continue
            if item is not None:
                finished.append(Item(item.message, self._settle(item, "done"), box))
        return Finished(finished, missing)

    def _listed(self, message_id: str, box: str) -> Item | None:
        """A message my inbox listing holds, as :meth:`_find` would give it (``None``:
        another session's ``name@session`` mail), without its per-id door check: the
        caller has set aside what did not come through the gate once for all."""
        if box == BROADCAST_RECIPIENT:
            message, _ = self.store.load_broadcast(message_id, header_only=True)
            return Item(message, "unread", box)
        message, state = self.store.load(box, message_id, header_only=True)
        return Item(message, state, box) if self._for_me(message) else None

    # Broadcast control ---------------------------------------------------------
    def retract(self, message_id: str) -> Message:
        """Un-send a broadcast: no one not yet served it will be. Its sender only."""
        message_id = self.resolve_known(message_id)
        try:
            message, _ = self.store.load_broadcast(message_id, header_only=True)
        except NotFound:
            holders = [a for a in self.store.agent_names()
                       if self.store.state_of(a, message_id) is not None]
            if holders and overview.may_see(
                    self.store.load(holders[0], message_id, header_only=True)[0],
                    self.viewer):
                raise Refused(
                    f"{message_id} is a message to {', '.join(holders)}, not a broadcast: "
                    "a delivered message cannot be recalled (only broadcasts can be "
                    "retracted); send a follow-up instead"
                ) from None
            raise NotFound(f"no broadcast {message_id}") from None
        if message.sender != self.agent:
            raise Refused(f"only its sender, {message.sender}, can retract {message_id}")
        authority.check_write(self.store, self.config, self.principal)
        if self.store.retract(message_id):
            self._event("retracted", message_id)
        return message

    def now(self) -> datetime:
        """The time as this mailbox tells it (the store's clock, or a test's)."""
        return self._clock()

    def require_owner(self, doing: str) -> None:
        """``Refused`` unless this process is the owner (:attr:`viewer` ``None``): what
        only the person decides (a pause, archiving mail)."""
        if self.viewer is None:
            return
        try:
            owner = self.config.owner
        except MailslotError:
            owner = None
        named = f"the owner, {owner}" if owner else "the owner (config.json owner, unset)"
        how = f"--agent {owner}, or " if owner else ""
        raise Refused(f"only {named}, may {doing}, and this process speaks as "
                      f"{self.viewer}; nothing was changed (run it as {how}a process "
                      "with no agent identity: outside any git checkout, without --agent "
                      "or MAILSLOT_AGENT)")

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

    # The owner's pause (the rules live in mailslot.mail.governor) ---------------
    def pause(self, agent: str | None = None, *, paused: bool = True) -> list[str]:
        """Stop ``agent`` (``None``: every agent) sending and being woken, or let it go
        on again (``paused`` false); the owner only (:attr:`viewer`). Returns who is
        paused after (``all``: everyone)."""
        self.require_owner("pause or resume agents")
        name = None if agent is None or agent.lower() == BROADCAST_RECIPIENT \
            else check_name(agent, "agent")
        after = governor.set_paused(self.store, name, paused)
        self._config = None
        self._event("paused" if paused else "resumed", "", agent=name or BROADCAST_RECIPIENT)
        return after

    # Status and overview (the rules live in overview.py) -----------------------
    def status(self, message_id: str) -> Status:
        """Per-recipient state of a message, when each read and finished it, and replies:
        of a message this caller sent or received (the owner: any; see :attr:`viewer`)."""
        message_id = self.resolve_known(message_id)
        try:
            return overview.status(self.store, message_id, self.who, viewer=self.viewer,
                                   now=self._clock())
        except NotFound as exc:
            note = self.archived_note(message_id)
            if not note:
                raise
            raise NotFound(f"{exc}{note}") from None

    def wait_for(self, message_id: str, rung: str, timeout: float) -> tuple[Status, bool]:
        """:meth:`status`, again and again until a recipient reached ``rung`` of the
        delivery ladder (or went beyond it) or ``timeout`` seconds passed; whether it
        did. Polls, from a tenth of a second up to two seconds apart: the receipts that
        move the ladder are written by other processes, on any machine of the store."""
        import time

        if rung not in ladder.RUNGS[1:]:
            raise InvalidInput(f"--wait takes one of {', '.join(ladder.RUNGS[1:])}, "
                               f"not {quoted(rung)}")
        if not timeout >= 0:
            raise InvalidInput("--timeout must be a number of seconds, 0 or more")
        message_id = self.resolve_known(message_id)
        end, pause = time.monotonic() + timeout, 0.1
        while True:
            status = self.status(message_id)
            if any(ladder.passed(r.rung, rung) for r in status.recipients):
                return status, True
            left = end - time.monotonic()
            if left <= 0:
                return status, False
            time.sleep(min(pause, left))
            pause = min(pause * 1.5, 2.0)

    def who(self, *, online_only: bool = False) -> list[AgentInfo]:
        """Every agent known from the config, a mailbox folder, a message's sender or a
        server, with unread counts, whether a server of it is online, its wake (where
        its servers run only for a caller that :attr:`sees_machines`), its group gate's
        member count and its parent (``online_only``: those online now)."""
        found = overview.who(self.store, self.config, self._clock(), online_only=online_only)
        return found if self.sees_machines else [a.without_machines() for a in found]

    def doctor(self, *, fix: bool = False, deep: bool = False) -> DoctorReport:
        """Check permissions, config, wakes and leftovers (``deep``: every message too);
        with ``fix``, repair what is safe to and quarantine unreadable messages."""
        return overview.doctor(self.store, fix=fix, deep=deep)

    def remove_agent(self, name: str) -> str:
        """Archive ``name``'s mailbox: kept on disk, no longer listed (its mail stays
        readable in the archive). Returns where it went."""
        agent = check_name(name, "agent")
        if agent not in self.store.agent_names():
            raise NotFound(f"no mailbox for {agent}")
        where = self.store.archive_mailbox(agent, self._clock().strftime("%Y%m%dT%H%M%S"))
        self._event("archived", "", agent=agent)
        return where

    def path_of(self, item: Item) -> str | None:
        """Where a person finds this message on disk (for the demo and ``read``)."""
        if item.archived or item.mailbox == BROADCAST_RECIPIENT:
            return None
        return self.store.path_of(item.mailbox, item.message.id)

    # Receipts ------------------------------------------------------------------
    def _event(self, kind: str, message_id: str, *, durable: bool = False,
               **extra: Any) -> None:
        """Add a receipt in this process's name (best effort; see :func:`receipt`)."""
        if "agent" not in extra and self.identity is not None:
            extra["agent"] = self.agent
        receipt(self.store, self._clock, kind, message_id, durable=durable, **extra)

    # Servers (mcp_server, presence) ---------------------------------------------
    def bound_agent(self) -> str:
        """The identity a long-running server binds: ``--agent`` or ``MAILSLOT_AGENT`` only.

        A server (and what ``install`` registers) outlives the command line that started
        it, so it never guesses from the git checkout: two hosts in one checkout would
        silently share an identity.
        """
        if self.identity is None or self.identity.source == "git":
            raise NoIdentity(
                "no identity: a server (and what install registers) needs --agent NAME or "
                "MAILSLOT_AGENT; the git checkout's name is not used"
            )
        return self.agent

    def beacon(self, **options: Any) -> Beacon:
        """The presence record of this process's server (``bound_agent``'s)."""
        from ..mail.presence import Beacon

        return Beacon(self.store, self.bound_agent(), session=self.session, **options)

    def surfaced(self, messages: Sequence[Message], *, host: str | None = None) -> None:
        """The ladder's receipt that a tool result carrying ``messages`` (of this
        agent's own mailbox) was handed to the host (:mod:`mailslot.service.ladder`);
        call only once it was written. ``host``: the program that started this
        process, by default."""
        from ..mail.presence import parent_program

        ladder.record_surfaced(self.store, self.agent, messages,
                               host=host or parent_program() or "mcp",
                               session=self.session, how="tool")

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

    # Wake-ups (the rules live in mailslot.wake.queue) ------------------
    def _after_delivery(self, message: Message) -> None:
        """Queue the wakes the recipients' own config allows; never fails the send."""
        if message.delivery != "wake" and not self._has_settings(message.to):
            return  # nothing can be queued or logged: the wake modules stay unloaded
        from ..wake.queue import enqueue_wakes  # here, so read paths never import it

        enqueue_wakes(self.store, message, self.notifier(), self._clock().timestamp())
        from ..wake.notify_queue import enqueue_notices  # notifiers, queued alike

        enqueue_notices(self.store, message)
        self._see_watcher_runs()

    def _see_watcher_runs(self) -> None:
        """After queueing: start a watcher if none runs here (spawn and go); a wake that
        cannot happen now is a note for the sender. The message is delivered whatever."""
        from ..mail.watchers import ensure

        try:
            raw = self.config.raw
        except MailslotError:
            return  # the wake queue logged why nothing was queued
        problem = ensure(self.store, raw)
        if problem is not None:
            self.notes.append(f"wakes cannot happen now: {problem}")

    def _has_settings(self, names: Iterable[str]) -> bool:
        """Has any of ``names`` settings under ``agents.NAME``, where wakes and notifiers
        are set (wake/policy.py, wake/notify_queue.py)? A config that cannot be read
        counts as yes: the wake queue then logs why nothing was queued."""
        try:
            agents = self.config.agents()
        except MailslotError:
            return True
        return any(agents.get(name) for name in names)

    def notifier(self) -> Notifier:
        """What mailslot's own modules use to tell an agent something (wake failures)."""
        return Notifier(self.store, self._clock)

    # Settings --------------------------------------------------------------------
    def wake_method(self, agent: str) -> object:
        """``agent``'s configured ``wake_method`` as written (``None`` if unset)."""
        return self.config.agents().get(check_name(agent), {}).get("wake_method")

    def stop_wake(self, agent: str, methods: Sequence[str]) -> bool:
        """If ``agent`` is woken by one of ``methods``, mark it ``unsupported`` and not
        woken (other keys kept). Returns whether anything changed."""
        name = check_name(agent)

        def opt_out(raw: dict[str, Any]) -> bool:
            agents = raw.get("agents")
            entry = agents.get(name) if isinstance(agents, dict) else None
            if not isinstance(entry, dict) or entry.get("wake_method") not in methods:
                return False
            entry["wake_on_mail"], entry["wake_method"] = False, "unsupported"
            return True

        changed = self.store.update_config(opt_out)
        self._config = None
        return changed

    def put_back_settings(self, agent: str, keys: Sequence[Mapping[str, Any]], *,
                          drop_empty: bool = False) -> tuple[list[str], list[str]]:
        """``install --undo``: each of ``agent``'s settings that install set (``key``, with
        the ``before`` and ``after`` it recorded; no ``before``: the key was not there)
        put back where it still holds ``after``; the entry goes too when ``drop_empty``
        and nothing is left in it. Returns the keys put back, and those left as they
        are because they changed since."""
        name = check_name(agent)
        back: list[str] = []
        left: list[str] = []
        gone = object()

        def put_back(raw: dict[str, Any]) -> bool:
            agents = raw.get("agents")
            entry = agents.get(name) if isinstance(agents, dict) else None
            if not isinstance(agents, dict) or not isinstance(entry, dict):
                return False
            for change in keys:
                key, now = change["key"], entry.get(change["key"], gone)
                if now == change.get("after", gone):
                    back.append(key)
                    if "before" in change:
                        entry[key] = change["before"]
                    else:
                        del entry[key]
                elif now != change.get("before", gone):
                    left.append(key)
            if drop_empty and not entry:
                del agents[name]
                if not agents:
                    del raw["agents"]
                return True
            return bool(back)

        self.store.update_config(put_back)
        self._config = None
        return back, left

    def ask_bridge(self, agent: str, host: str, on: bool, *, dry_run: bool = False) -> str:
        """``install HOST --bridge`` (``on``) or a registration without it: ``agent``'s
        ask for ``host``'s bridge (``agents.NAME.bridge``) set or taken back, and
        ``host`` in ``bridges`` while any agent asks for it. Returns what changed (or,
        with ``dry_run``, would), ``""`` for nothing."""
        name = check_name(agent)
        said = ""

        def change(raw: dict[str, Any]) -> bool:
            nonlocal said
            said = _bridge_ask(raw, name, host, on)
            return bool(said)

        if dry_run:
            change(self.store.load_config())
        else:
            self.store.update_config(change)
            self._config = None
        return said

    def wake_diagnosis(self, agent: str, host: str | None = None) -> Diagnosis:
        """``doctor --wake``: ``agent``'s configured wake probed again, and its host's
        ladder with each step's probe (nothing is woken or written)."""
        from ..wake.choice import diagnose

        return diagnose(self.store, self.store.load_config(), check_name(agent), host,
                        os.environ, os.getcwd())

    def choose_wake(self, agent: str, method: str,
                    fields: Mapping[str, Any] | None = None) -> bool:
        """Opt ``agent`` in to being woken by ``method`` in config.json, with the
        method's ``fields`` (other keys kept).

        Keeps ``wake_on_mail: "requested"`` if that is set; otherwise wakes for every
        message. Returns whether anything changed.
        """
        wanted_fields = dict(fields or {})
        name = check_name(agent)

        def opt_in(raw: dict[str, Any]) -> bool:
            agents = raw.setdefault("agents", {})
            if not isinstance(agents, dict) or not isinstance(agents.setdefault(name, {}), dict):
                raise StoreError(f"config.json: agents.{name} must be an object; nothing was "
                                 "changed")
            entry = agents[name]
            wanted = "requested" if entry.get("wake_on_mail") == "requested" else True
            after = {**entry, "wake_on_mail": wanted, "wake_method": method, **wanted_fields}
            if after == entry:
                return False
            entry.update(after)
            return True

        changed = self.store.update_config(opt_in)
        self._config = None
        return changed


def _bridge_ask(raw: dict[str, Any], agent: str, host: str, on: bool) -> str:
    """:meth:`Mailbox.ask_bridge` on config ``raw`` (changed in place)."""
    agents = raw.setdefault("agents", {}) if on else raw.get("agents", {})
    entry = agents.setdefault(agent, {}) if on and isinstance(agents, dict) \
        else agents.get(agent, {}) if isinstance(agents, dict) else None
    if not isinstance(entry, dict):
        raise StoreError(f"config.json: agents.{agent} must be an object; nothing was "
                         "changed")
    listed = raw.get("bridges", [])
    if not isinstance(listed, list):
        raise StoreError("config.json: bridges must be a list of host names; nothing was "
                         "changed")
    said = []
    if on:
        if entry.get("bridge") != host:
            entry["bridge"] = host
            said.append(f'agents.{agent}.bridge "{host}"')
        if host not in listed:
            raw["bridges"] = [*listed, host]
            said.append(f'"{host}" in bridges')
        return ", ".join(said)
    if entry.get("bridge") != host:
        return ""
    del entry["bridge"]
    said.append(f"agents.{agent}.bridge")
    if host in listed and not any(isinstance(e, dict) and e.get("bridge") == host
                                  for e in agents.values()):
        rest = [b for b in listed if b != host]
        if rest:
            raw["bridges"] = rest
        else:
            del raw["bridges"]
        said.append(f'"{host}" from bridges (no agent asks for it now)')
    return ", ".join(said)
