"""Sending: a new message, a broadcast, a reply, an access request. Every one passes
the same door (:meth:`Sending._deliver`): the credential's bounds, the fence, the loop
governor, then delivery to every recipient or none, then the wakes the recipients' own
config allows (the rules live in :mod:`mailslot.wake.queue`).
"""

from __future__ import annotations

from ..access import authority, gates, instances
from ..core.errors import InvalidInput, MailslotError, Refused, Throttled
from ..core.message import NOTIFY_RUNGS, Message
from ..core.names import BROADCAST_RECIPIENT, SYSTEM_SENDER, check_name
from ..core.text import MAX_SUBJECT_LENGTH, clean_body, clean_field, quoted
from ..mail.posting import post
from .message_states import MessageStates

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Any

_REPLY_PREFIX = "Re: "
_CLAIMED_SENDER = ("from", "sender")
"""Arguments a caller might name a sender with; the sender is never an argument."""


def _addressed(to: str | Sequence[str]) -> bool:
    """Does a recipient hold ``@`` (an agent of a peer, or one session of an agent)?"""
    return any(isinstance(t, str) and "@" in t for t in ([to] if isinstance(to, str) else to))


class Sending(MessageStates):
    """A mailbox's ways of sending mail. Built on :class:`MessageStates`: a reply
    marks the message it answers done."""

    def _deliver(self, to: list[str], subject: str, body: str, *,
                 before: Callable[[Message], Callable[[], None] | None] | None = None,
                 answering: Message | None = None, **fields: Any) -> Message:
        """Write the message for every recipient (kept for the nodes of agents on peers),
        then queue the wakes it may cause; the loop governor first (``answering``: the
        message a reply answers; a new message's cause is found here:
        :mod:`mailslot.mail.causes`)."""
        from ..mail import governor  # here: a page of mail never loads it

        authority.check_write(self.store, self.config, self.principal)
        self._unfenced()
        now = self._clock().timestamp()
        cause = None if answering is not None else self._cause(now)
        if cause is not None:
            fields["cause"] = cause.id
        try:
            passed = governor.check_send(self.store, self.config, self.agent, to, now,
                                         answering=answering, cause=cause,
                                         size=governor.context_bytes(subject, body))
        except Throttled as exc:
            if exc.loop is not None:
                from .loops import tell_owner

                tell_owner(self.store, self.config, self._clock, exc)
            raise
        if any("@" in name for name in to):
            from .peer_routes import keeper

            before = keeper(self, before)
        try:
            message = post(self.store, self._clock, self.agent, to, subject, body,
                           before=before, **fields)
        except MailslotError:
            governor.give_back(self.store, passed.taken)  # nothing sent: nothing spent
            raise
        self._after_delivery(message, passed.thread)
        return message

    def _cause(self, now: float) -> Message | None:
        """The agent mail this agent had just been given, if any (not for the owner,
        whom nothing limits)."""
        from ..mail.causes import last_given, load_cause

        try:
            if self.agent == self.config.owner:
                return None
        except MailslotError:
            pass
        found = last_given(self.store, self.agent, now)
        return None if found is None else load_cause(self.store, self.agent, found)

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
        ack: bool = False,
    ) -> Message:
        """Deliver a new message to one or more agents; returns it once it is durable.

        ``notify_when`` (``surfaced``, ``read`` or ``done``): one notice from ``mailslot``
        when the first recipient reaches that rung of the delivery ladder. ``ack``: it
        only acknowledges (so is a short text of thanks alone: :mod:`mailslot.mail.causes`):
        delivered, it wakes nobody.

        ``re_issue`` is stored exactly as given, so it must be text: a number or anything
        else a front end received is refused, never turned into text.

        A recipient without a mailbox that is close to a known agent's name is refused as
        a likely typo unless ``new``; a genuinely new one gets a mailbox and a note.
        """
        from . import recipients  # here: a page of mail never loads it

        self.notes = []
        nodes: set[str] = set()
        if _addressed(to):  # an agent of a peer, or a session: its rules only then
            from . import peer_routes

            nodes = peer_routes.nodes_for(self, to)
        names, prefix = recipients.parse_instance(to, nodes)
        authority.check_send(self.principal, names)
        local = [name for name in names if "@" not in name]
        gates.check(self.store, self.config, self.principal, local)
        roster = recipients.roster_for(self.store, self.config, names, self.agent)
        self.notes = recipients.check_new(names, roster, self.agent, allow_new=new)
        if len(local) < len(names):
            from . import peer_routes

            self.notes += peer_routes.check(self, names)
        subject = clean_field(subject, "subject", MAX_SUBJECT_LENGTH)
        fields: dict[str, Any] = {
            "expect_reply": expect_reply,
            "delivery": "wake" if wake else "inbox",
        }
        if self._acks(ack, expect_reply, f"{subject}\n{body}"):
            fields["ack"] = True
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
        if wake and not message.ack:
            self.notes += recipients.wake_refusals(self.config, message)
        if message.ack:
            self.notes.append("sent as an ack: it is delivered and wakes nobody")
        return message

    @staticmethod
    def _acks(asked: bool, expect_reply: bool, text: str) -> bool:
        """Is the message an ack: asked for (not with a request for a reply, which an
        ack never makes), or a short text of thanks alone that asks for nothing?"""
        from ..mail.causes import content_free

        if asked and expect_reply:
            raise InvalidInput("an ack asks for no reply: drop --expect-reply or --ack; "
                               "nothing was sent")
        return asked or (not expect_reply and content_free(text))

    def broadcast(self, subject: str, body: str) -> Message:
        """A message every agent but the sender is served once (later agents too)."""
        authority.check_broadcast(self.principal)
        subject = clean_field(subject, "subject", MAX_SUBJECT_LENGTH)
        body = clean_body(body, self.max_body_bytes)
        return self._deliver([BROADCAST_RECIPIENT], subject, body)

    def reply(self, message_id: str, body: str, *, subject: str | None = None,
              ack: bool = False) -> Message:
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
        if "@" in sender:  # an agent of a peer: back to its node
            from .peer_routes import reply_address

            recipient = reply_address(self, sender)
        else:
            recipient = check_name(sender, "original sender")
        authority.check_reply(self.principal, recipient)
        subject = chosen or original.message.subject
        if chosen is None and not subject.lower().startswith(_REPLY_PREFIX.lower()):
            subject = _REPLY_PREFIX + subject
        body = clean_body(body, self.max_body_bytes)
        acked: dict[str, Any] = {"ack": True} if self._acks(ack, False, body) else {}
        reply = self._deliver(
            [recipient],
            subject[:MAX_SUBJECT_LENGTH],
            body,
            answering=original.message,
            in_reply_to=original.message.id,
            thread=original.message.thread or original.message.id,
            re_issue=original.message.re_issue,
            **acked,
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

    def _after_delivery(self, message: Message, thread: str | None = None) -> None:
        """Queue the wakes the recipients' own config allows (and see a watcher runs to
        carry mail kept for peers); never fails the send. ``thread``: the conversation
        it is part of (the governor counts its turns)."""
        if message.delivery != "wake" and not self._has_settings(message.to):
            if any("@" in name for name in message.to):
                self._see_watcher_runs()  # the watcher carries it to the peer
            return  # nothing can be queued or logged: the wake modules stay unloaded
        from ..wake.queue import enqueue_wakes  # here, so read paths never import it

        enqueue_wakes(self.store, message, self.notifier(), self._clock().timestamp(),
                      thread=thread)
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
