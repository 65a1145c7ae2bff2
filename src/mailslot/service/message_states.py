"""A message's states (unread → read → done), moved forward by its recipient; a
broadcast retracted by its sender; and where a message stands for each recipient on
the delivery ladder (``status``, waiting for a rung). The rules of the ladder live in
:mod:`.ladder` and :mod:`.overview`.
"""

from __future__ import annotations

from ..access import authority, gates
from ..core.errors import InvalidInput, NotFound, Refused, Unreadable
from ..core.message import STATES, Message, State
from ..core.names import BROADCAST_RECIPIENT
from ..core.results import Finished, Item, Status
from ..core.text import quoted
from .listings import Listings

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from collections.abc import Iterable


class MessageStates(Listings):
    """A mailbox's state changes, and the status of a message. Built on
    :class:`Listings`: ``done --all`` finishes what my listing holds."""

    def _settle(self, item: Item, to: State) -> State:
        """Move my copy forward to ``to`` (a broadcast is simply recorded as served)."""
        from . import ladder  # here: a page of mail never loads it

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

    def retract(self, message_id: str) -> Message:
        """Un-send a broadcast: no one not yet served it will be. Its sender only."""
        from . import overview  # here: a page of mail never loads it

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

    def status(self, message_id: str) -> Status:
        """Per-recipient state of a message, when each read and finished it, and replies:
        of a message this caller sent or received (the owner: any; see :attr:`viewer`)."""
        from . import overview  # here: a page of mail never loads it

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

        from . import ladder  # here: a page of mail never loads it

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
