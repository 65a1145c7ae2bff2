"""Session delivery: which mail a hook shows an agent, and what it records afterwards.

The rules, in one place (front ends in :mod:`mailslot.frontends.hooks` only translate):

* **session start**: every directed message not yet done, and every standing broadcast
  not yet served; a session that was already shown some of it (resumed, compacted: the
  same session id) gets one line counting those instead of the mail again, so no mail is
  injected into a session twice and none is lost (docs/hooks.md, "Each message once");
* **prompt**: the same, minus what this session was already shown, and nothing at all
  (not a byte) when nothing is new;
* **budget**: every injection stays within the agent's byte budget (config.json
  ``context_budget_bytes``, default :data:`~mailslot.core.config.DEFAULT_CONTEXT_BUDGET`)
  and the host's own limit; one line counts what did not fit, and the session, told of
  it so, is not injected it later (``inbox`` lists it);
* **stop**: like prompt, but only when the agent's config opts in
  (``agents.<name>.auto_continue_on_stop: true``) and never when the host is already
  continuing the turn because of a stop hook. With nothing new to show, a message that
  asked for a reply, was shown earlier in this session and is not done (a reply marks
  it done) is named once more, once per session (recorded among what the session was
  shown as ``revisited:ID``), so the turn goes on to bring it to an end;
* **mid-turn** (after a tool call): directed mail this session has not been shown, and
  only when the session was shown nothing for ``agents.<name>.midturn_interval_seconds``
  (default 30; 0 turns it off). It runs after every tool call, so the common case
  (inside the interval, or nothing new) reads one config file, stats one file and lists
  two folders, and parses no message. Broadcasts wait for the next prompt or start;
* **broadcasts** are never shown to their sender, and are recorded as served only in
  :meth:`Delivery.commit`, which the caller runs after the injection was written and
  flushed: a crash in between serves them again, never loses them;
* **the ladder**: :meth:`Delivery.commit` also writes the ``surfaced`` receipt (host,
  session, moment) of what was shown, when the caller says the host took it
  (:mod:`mailslot.service.ladder`), and a waiter's notice is one too;
* **claims**: the first read with a git-derived identity records its checkout as the
  name's owner; a read of the same name from another checkout gets a warning, because
  two checkouts with one name share (and can finish) one another's mail.

Directed mail is not marked read by a hook: "read" stays something the agent does.
"""

from __future__ import annotations

import os
import time

from ..access.identity import git_toplevel
from ..core.errors import MailslotError
from ..core.framing import command, injection, new_mark, reminder
from ..core.names import session_key
from ..mail.broadcasts import to_serve
from .ladder import event_time, record_surfaced

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, TypeVar

    from ..access.identity import Identity
    from ..core.message import Message
    from ..host_registry import Host
    from ..store.base import Store

    T = TypeVar("T")

START, PROMPT, STOP, MIDTURN = "start", "prompt", "stop", "midturn"
MOMENTS = (START, PROMPT, STOP, MIDTURN)
REVISITED = "revisited:"
"""Marks, among the ids a session was shown, a request the stop rule named once more."""
SESSION_MAX_AGE = 30 * 24 * 3600
"""A session's record of what it was shown is forgotten after this many idle seconds."""


class Injection:
    """What a hook is about to show: the text and what to record once it is out."""

    __slots__ = ("again", "broadcasts", "mark", "moment", "offset", "session", "shown",
                 "text", "told")

    def __init__(self, text: str, moment: str, session: str | None, shown: list[str],
                 broadcasts: list[str], told: Sequence[str] = (), *, mark: str = "",
                 offset: int = 0, again: Sequence[str] = ()) -> None:
        self.text = text
        self.moment = moment
        self.session = session
        self.shown = shown  # every id shown (in full, or with its body cut)
        self.broadcasts = broadcasts  # the broadcasts among them
        self.told = list(told)  # ids only counted, in the line of what did not fit
        self.mark = mark  # the showing's fingerprint ("": none; mailslot.service.seen)
        self.offset = offset  # where the host's record ended before it
        self.again = list(again)  # ids shown again: the record showed them not given


class Delivery:
    """Session delivery for one agent over a store; ``problems`` collects what failed."""

    def __init__(self, store: Store, agent: str, identity: Identity,
                 cli: str = "mailslot", tools: str = "{}", note: str = "") -> None:
        self.store = store
        self.agent = agent
        self.identity = identity
        self.cli = cli  # how the session's shell runs mailslot (mailslot.mail.invocation)
        self.tools = tools  # how the session's model sees our tools (Host.tool_names)
        self.note = note  # which tool answers mail, for a host whose own looks alike
        self.problems: list[str] = []
        self._broadcasts: set[str] = set()
        self._loaded: dict[str, Message] = {}  # what the injection read, for the ladder
        self._record: tuple[Host, str] | None = None  # the host's record of the session
        self._again: list[str] = []  # ids due to be shown again (mailslot.service.seen)

    def look(self, host: Host, record: str | None, session: str | None) -> None:
        """The ``seen`` rung's look, before anything is planned: what the host's record
        (``record``, :meth:`~mailslot.host_registry.host.Host.record_of`) says of this
        session's earlier showings, and which of them are due to be shown again. A
        showing planned after it carries a fingerprint when the record holds its moment.
        Nothing at all without a session or a record (:mod:`mailslot.service.seen`)."""
        if record is None or session is None:
            return
        self._record = (host, record)
        marks = SessionMarks(self.store, self.agent, session_key(session))
        self._again = self._attempt(lambda: marks.check(host, record), [])

    def plan(self, moment: str, session: str | None, *, limit: int,
             stop_active: bool = False) -> Injection | None:
        """What to show at ``moment`` (``None``: nothing); records nothing but a claim."""
        key = session_key(session) if session else None
        if moment != START and key is None:
            return None  # without a session there is no telling what it was shown
        if moment == STOP and (stop_active or not self._auto_continue()):
            return None
        self._door()
        if moment == MIDTURN and key is not None:
            notes: list[str] = []
            pending = self._midturn(key)
        else:
            notes = self._claim_notes()
            pending = self._pending()
        again = self._due_again()
        if moment != MIDTURN and key is not None and pending:
            shown: set[str] = self._attempt(lambda: self.store.shown(self.agent, key), set())
            shown.difference_update(again)
            earlier = len(pending)
            pending = [i for i in pending if i not in shown]
            earlier -= len(pending)
            if moment == START and earlier:
                notes.append(self._shown_earlier(earlier))
        pending = self._for_session(pending, key)
        if again:
            pending = sorted({*pending, *again})
            notes.append(_again_note(len(again)))
        if moment == STOP and not pending and key is not None:
            return self._revisit(key)
        if moment != START and not pending:
            return None
        scope = (f"waiting for {self.agent}" if moment == START
                 else f"for {self.agent} not shown before in this session")
        if pending or notes:
            limit = min(limit, self._budget())
        mark, offset = self._mark(moment)
        text, shown_ids = injection(pending, self._load, limit=limit, scope=scope,
                                    cli=self.cli, notes=notes, tools=self.tools,
                                    answer_note=self.note, mark=mark)
        if not text:
            return None
        broadcasts = [i for i in shown_ids if i in self._broadcasts]
        seen = set(shown_ids)
        return Injection(text, moment, key, shown_ids, broadcasts,
                         [i for i in pending if i not in seen],
                         mark=mark if shown_ids else "", offset=offset,
                         again=[i for i in shown_ids if i in again])

    def commit(self, planned: Injection, *, host: str, taken: bool = True) -> None:
        """Record what was shown. Call only after the injection was written and flushed.

        The session's record comes first, the ladder's ``surfaced`` receipt (in
        ``host``) second and the broadcasts' third, so a hook stopped in between shows
        the broadcasts again rather than never. Nothing is recorded unless ``taken``:
        the output went where the host reads it (a pipe), not to a file, a terminal or
        the null device, so no model was shown it and the next prompt shows it again.
        """
        if not taken:
            return
        if planned.session is not None:  # what it was told of is not shown it again
            self.store.add_shown(self.agent, planned.session, planned.shown + planned.told)
        self._broadcasts.update(planned.broadcasts)
        shown = [m for m in map(self._header, planned.shown) if m is not None]
        record_surfaced(self.store, self.agent, shown, host=host, session=planned.session,
                        how=planned.moment, mark=planned.mark, again=planned.again)
        if planned.session is not None and (planned.mark or planned.again):
            self._attempt(lambda: self._await_seen(planned, [m.id for m in shown]), None)
        if planned.broadcasts:
            self.store.add_seen(self.agent, planned.broadcasts)
            now = event_time()
            for message_id in planned.broadcasts:
                self.store.append_event({"ts": now, "event": "read", "id": message_id,
                                         "agent": self.agent, "via": "hook"}, durable=True)
        if planned.moment == START:
            self.store.prune_sessions(self.agent, SESSION_MAX_AGE)

    def ran(self, session: str, facts: Callable[[], Mapping[str, object]], *,
            fresh: bool) -> None:
        """Record that a hook ran in host session ``session`` now (a hook
        session is a session of its agent, listed by ``sessions`` and ``who``). Its
        ``facts()`` (host, folder, host pid) are written when it is new or ``fresh`` (a
        session start: a resumed session has a new host process); any other call only
        refreshes its time, one ``utime`` in the file store, and works out no facts."""
        key = session_key(session)
        if not fresh and self._attempt(
                lambda: self.store.refresh_hook_session(self.agent, key), True):
            return
        self._attempt(lambda: self.store.record_hook_session(self.agent, key, facts()),
                      None)

    def started(self, host: str, session: str) -> None:
        """Record ``session`` as the agent's latest in ``host``: a wake whose
        ``session_id`` is ``"latest"`` resumes or queues into it (docs/wake.md)."""
        if session_key(session) == session:  # a host id safe as a file, as all known are
            self._attempt(lambda: self.store.set_latest_session(self.agent, host, session),
                          None)

    # Waking an idle session (a host's background waiter) ------------------------------
    def arm_waiter(self, session: str, pid: int) -> None:
        """Make ``pid`` the session's one waiter; an older waiter sees it and leaves."""
        self.store.set_waiter(self.agent, session_key(session), pid)

    def waiter_replaced(self, session: str, pid: int) -> bool:
        """Has a newer waiter for this session taken over from ``pid``?"""
        return self.store.waiter(self.agent, session_key(session)) != pid

    def unannounced(self, session: str, method: str) -> list[Message] | None:
        """Directed mail not done that this session was neither shown nor told of, and
        that the agent's config lets ``method`` wake it for, oldest first.

        ``None`` when the config has not chosen ``method`` (only the recipient's own
        config allows a wake). Broadcasts never wake a session; they
        wait for its next prompt or start.
        """
        from ..core.config import Config
        from ..wake.policy import in_session_wakes  # the waiter's path only

        allowed = in_session_wakes(Config(self.store.load_config()), self.agent, method)
        if allowed is None:
            return None
        self._door()
        directed = self.store.entries(self.agent, ("unread", "read"))
        if not directed:
            return []
        key = session_key(session)
        shown = self.store.shown(self.agent, key)
        fresh = sorted(i for i, _ in directed if i not in shown)
        return [m for m in map(self._load, fresh)  # an ack wakes nobody
                if m is not None and m.shown_to({key}) and allowed(m) and not m.ack]

    def announce(self, session: str, messages: Sequence[Message], host: str) -> None:
        """Record that the session was told of ``messages``; call after the notice is out
        (the host shows it the model: a ``surfaced`` receipt, ``how`` ``notice``)."""
        key = session_key(session)
        self.store.add_shown(self.agent, key, [m.id for m in messages])
        record_surfaced(self.store, self.agent, messages, host=host, session=key,
                        how="notice")

    # The seen rung ---------------------------------------------------------------------
    def _mark(self, moment: str) -> tuple[str, int]:
        """A fingerprint for a showing at ``moment`` and where the host's record ends
        now (before the host gets the text: 0 when it is not written yet), when the
        record holds that moment."""
        if self._record is None or moment not in self._record[0].record_holds:
            return "", 0
        try:
            size = os.stat(self._record[1]).st_size
        except OSError:
            size = 0
        return new_mark(), size

    def _due_again(self) -> list[str]:
        """The ids due to be shown again that are still open (directed, not done)."""
        if not self._again:
            return []
        open_now = set(self._directed())
        return [i for i in self._again if i in open_now]

    def _await_seen(self, planned: Injection, ids: list[str]) -> None:
        """Keep the showing for the next hook's look, and what was shown again."""
        assert planned.session is not None
        marks = SessionMarks(self.store, self.agent, planned.session)
        marks.keep(planned.mark if ids else "", planned.offset, planned.moment, ids,
                   planned.again)

    # Rules -----------------------------------------------------------------------------
    def _midturn(self, key: str) -> list[str]:
        """Directed mail for a mid-turn showing; ``[]`` before anything is parsed when
        the interval since the session was last shown mail has not passed."""
        from ..core.config import Config  # only the rules that read the config load it

        interval: float = self._attempt(
            lambda: Config(self.store.load_config()).midturn_interval(self.agent), 0.0)
        if not interval:
            return []
        last = self._attempt(lambda: self.store.shown_at(self.agent, key), None)
        if last is not None and time.time() - last < interval:
            return []
        directed = self._directed()
        if not directed:
            return []
        shown: set[str] = self._attempt(lambda: self.store.shown(self.agent, key), set())
        return sorted(i for i in directed if i not in shown)

    def _revisit(self, key: str) -> Injection | None:
        """The stop rule's second half: requests shown earlier in this session and still
        open (not done), each revisited at most once in the session."""
        shown: set[str] = self._attempt(lambda: self.store.shown(self.agent, key), set())
        asked = sorted(i for i in self._directed()
                       if i in shown and REVISITED + i not in shown)
        messages = []
        for message_id in asked:
            try:
                message, _ = self.store.load(self.agent, message_id, header_only=True)
            except MailslotError as exc:
                self.problems.append(str(exc))
                continue
            if message.expect_reply:
                messages.append(message)
        if not messages:
            return None
        text = reminder(messages, cli=self.cli, tools=self.tools)
        return Injection(text, STOP, key, [REVISITED + m.id for m in messages], [])

    def _for_session(self, pending: list[str], key: str | None) -> list[str]:
        """Drop mail for another instance of the agent (``name@session``).
        The store's index names such mail (one listing, usually of nothing), and only
        those are parsed; the header decides. A message that cannot be read stays (the
        injection counts it)."""
        if not pending:
            return pending
        marked: dict[str, str] = self._attempt(lambda: self.store.instance_mail(self.agent),
                                               {})
        if not marked:
            return pending
        kept = []
        mine = {key} if key is not None else set()
        for message_id in pending:
            if message_id in marked and message_id not in self._broadcasts:
                try:
                    message, _ = self.store.load(self.agent, message_id, header_only=True)
                except MailslotError:
                    message = None
                if message is not None and not message.shown_to(mine):
                    continue
            kept.append(message_id)
        return kept

    def _directed(self) -> list[str]:
        """Ids of directed mail not done, in no particular order."""
        return self._attempt(
            lambda: [i for i, _ in self.store.entries(self.agent, ("unread", "read"))], [])

    def _door(self) -> None:
        """A gated inbox sets aside what did not come through the service;
        the rule's module is loaded only for a gated inbox, so hooks stay fast."""
        if self._attempt(lambda: self.store.accept_of(self.agent), "open") == "open":
            return
        from ..access.gates import set_aside
        from ..mail.posting import Notifier

        nothing: list[str] = []
        self._attempt(lambda: set_aside(self.store, self.agent, Notifier(self.store)),
                      nothing)

    def _pending(self) -> list[str]:
        """Ids of directed mail not done and of broadcasts not yet served, oldest first."""
        directed = self._directed()
        live: list[str] = self._attempt(self.store.broadcast_ids, [])
        if live:
            seen: set[str] | None = self._attempt(lambda: self.store.seen(self.agent), None)
            live = [] if seen is None else to_serve(live, seen, self.agent)
        self._broadcasts = set(live)
        return sorted({*directed, *live})

    def _load(self, message_id: str) -> Message | None:
        try:
            if message_id in self._broadcasts:
                message, live = self.store.load_broadcast(message_id)
                if live:
                    self._loaded[message_id] = message
                return message if live else None  # retracted since we listed
            message, state = self.store.load(self.agent, message_id)
        except MailslotError as exc:
            self.problems.append(str(exc))
            return None
        if state == "done":
            return None
        self._loaded[message_id] = message
        return message

    def _header(self, message_id: str) -> Message | None:
        """A shown message as the injection read it; a remote hook's (planned by
        another process) read again, header only, for the ladder."""
        found = self._loaded.get(message_id)
        if found is not None:
            return found
        try:
            if message_id in self._broadcasts:
                return self.store.load_broadcast(message_id, header_only=True)[0]
            return self.store.load(self.agent, message_id, header_only=True)[0]
        except MailslotError:
            return None

    def _shown_earlier(self, count: int) -> str:
        """The one line a restarted session (resumed, compacted) gets instead of mail it
        was already shown or told of: never the mail again, nor silence about it."""
        return (f"{count} message{' was' if count == 1 else 's were'} shown earlier in "
                f"this session and {'is' if count == 1 else 'are'} not done: "
                f"`{command(self.cli, 'inbox')}` lists them, "
                f"`{command(self.cli, 'read ID')}` shows one.")

    def _budget(self) -> int:
        """The most bytes one injection may add to the model's context (config.json
        ``context_budget_bytes``, per agent or for all; docs/hooks.md)."""
        from ..core.config import DEFAULT_CONTEXT_BUDGET, Config

        return self._attempt(lambda: Config(self.store.load_config()).context_budget(
            self.agent), DEFAULT_CONTEXT_BUDGET)

    def _auto_continue(self) -> bool:
        from ..core.config import Config

        config: dict[str, Any] = self._attempt(self.store.load_config, {})
        return Config(config).auto_continue_on_stop(self.agent)

    def _claim_notes(self) -> list[str]:
        path = self.identity.path
        if self.identity.source != "git" or path is None:
            return []
        holder = self._attempt(lambda: self.store.claim(self.agent, path), path)
        if holder == path:
            return []
        if not holder or git_toplevel(holder) != holder:  # that checkout is gone
            self._attempt(lambda: self.store.replace_claim(self.agent, path), None)
            return []
        return [
            f"warning: this checkout ({path}) and the one at {holder} both read mail as "
            f"{self.agent!r}, so they share one mailbox and either may answer or finish "
            "the other's mail. Give one of them its own name (MAILSLOT_AGENT or --agent)."
        ]

    def _attempt(self, action: Callable[[], T], fallback: T) -> T:
        """``action()``, or ``fallback`` with the failure noted: show what can be shown."""
        try:
            return action()
        except MailslotError as exc:
            self.problems.append(str(exc))
            return fallback


class SessionMarks:
    """The showings of one hook session that await the host's record (the ``seen``
    rung, :mod:`mailslot.service.seen`), kept as words of the store's ``marks``
    namespace, one set a session (pruned with the session): ``shown:MARK:OFFSET:HOW:ID,ID``;
    ``seen:MARK`` (or ``missed:``, ``lost:``) once the record settled it; ``again:ID``
    once shown again. Read by every hook of a host whose record mailslot reads, so it
    is here, and :mod:`.seen` is loaded only when a showing waits."""

    def __init__(self, store: Store, agent: str, session: str) -> None:
        self.store, self.agent, self.session = store, agent, session
        self.key = (agent, session)

    def check(self, host: Host, record: str) -> list[str]:
        """Settle what ``record`` says of the waiting showings (a ``seen`` or ``missed``
        receipt each); the ids due to be shown again, each once per session."""
        words: set[str] = self.store.get("marks", self.key)
        if not words:
            return []
        settled = {w.split(":", 1)[1]: w.split(":", 1)[0] for w in words
                   if w.startswith(("seen:", "missed:", "lost:"))}
        again = {w[6:] for w in words if w.startswith("again:")}
        showings = [s for s in map(_showing, words) if s is not None]
        due = {i for s in showings if settled.get(s[0]) == "missed" for i in s[3]}
        waiting = [s for s in showings if s[0] not in settled]
        if waiting:
            from .seen import Showing, judge, receipt

            shown = [Showing(*s) for s in waiting]
            verdicts = judge(host, record, shown)
            if verdicts:
                self.store.add("marks", self.key,
                               [f"{v}:{mark}" for mark, (v, _) in verdicts.items()])
            for showing in shown:
                if showing.mark in verdicts:
                    verdict, when = verdicts[showing.mark]
                    receipt(self.store, self.agent, showing, verdict, host=host.name,
                            session=self.session, when=when)
                    if verdict == "missed":
                        due.update(showing.ids)
        return sorted(due - again)

    def keep(self, mark: str, offset: int, how: str, ids: Sequence[str],
             again: Sequence[str]) -> None:
        """A showing that carried ``mark``, and the ids shown again in it."""
        words = [f"again:{i}" for i in again]
        if mark:
            words.append(f"shown:{mark}:{offset}:{how}:{','.join(ids)}")
        if words:
            self.store.add("marks", self.key, words)


def _showing(word: str) -> tuple[str, int, str, list[str]] | None:
    parts = word.split(":")
    if len(parts) != 5 or parts[0] != "shown" or not parts[2].isdigit():
        return None
    return parts[1], int(parts[2]), parts[3], [i for i in parts[4].split(",") if i]


def _again_note(count: int) -> str:
    """Said when mail comes again because the host's record showed it never reached
    the model (:mod:`mailslot.service.seen`)."""
    return (f"{count} message{' is' if count == 1 else 's are'} shown again: the host's "
            "record of this session shows the earlier showing never reached the model.")
