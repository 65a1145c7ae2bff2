"""A message as a task: where one sender's mail to one recipient stands, in the words of
the task protocols that reach mailslot (A2A's tasks, MCP's tasks extension).

Nothing is stored for a task: it **is** the message, and its state is read from the
message's delivery ladder each time it is asked for, so a read or a reply made by any
process (a hook, the CLI, another server) shows at once:

=============  ====================================================================
state          when
=============  ====================================================================
``submitted``  stored, not read yet (surfaced to a model or not)
``working``    read by the recipient, not done
``completed``  replied to (the first reply is the answer), or marked done unanswered
``canceled``   recalled by its sender while still unread (:func:`recall`)
=============  ====================================================================

A send refused by a gate, the loop governor or a limit stores nothing, so it has no
task to look up later: the front end answers it as ``rejected`` at once, with the
reason. Only the sender of a message sees it as a task (another caller: not found).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..access import authority
from ..core.errors import InvalidInput, NotFound, Refused
from ..core.message import Message
from .mailbox import Mailbox

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

SUBMITTED, WORKING, COMPLETED, CANCELED, REJECTED = (
    "submitted", "working", "completed", "canceled", "rejected")
TERMINAL = frozenset({COMPLETED, CANCELED, REJECTED})
RECALLED = "recalled"
"""The receipt a recall writes: ``{"event": "recalled", "id", "agent": recipient, "by"}``."""
MAX_LISTED = 2000
"""How many of the caller's newest sent messages a listing of its tasks looks through."""


@dataclass(frozen=True)
class MailTask:
    """One message of the caller's to ``recipient``, as a task."""

    message: Message
    recipient: str
    state: str
    changed: str
    """When it last moved (ISO 8601 with offset): stored, read, done or replied."""
    answer: Message | None = None
    """The recipient's first reply, body included (``completed`` with an answer)."""
    note: str = ""
    """A line for a person: why it is where it is (``marked done without a reply``)."""

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL


def task_of(box: Mailbox, message_id: str, recipient: str | None = None) -> MailTask:
    """The task of ``box``'s message ``message_id`` to ``recipient`` (``None``: its one
    recipient); ``NotFound`` for any message that is not the caller's own to
    ``recipient`` (never saying which), and for one with several recipients."""
    if recipient is None:
        recipient = _recipient(box, message_id)
    message = _own(box, message_id, recipient)
    status = box.status(message.id)
    mine = next((r for r in status.recipients if r.agent == recipient), None)
    if mine is None or mine.state is None:
        raise NotFound(f"no task {message_id}")
    if mine.state == "unread":
        return MailTask(message, recipient, SUBMITTED, message.date)
    if mine.state == "read":
        return MailTask(message, recipient, WORKING, mine.read_at or message.date)
    answer = _answer(box, status.replies, recipient)
    changed = mine.replied_at or mine.done_at or message.date
    if answer is not None:
        return MailTask(message, recipient, COMPLETED, changed, answer)
    if _recalled(box, message.id, recipient):
        return MailTask(message, recipient, CANCELED, changed,
                        note="recalled by its sender before it was read")
    return MailTask(message, recipient, COMPLETED, changed,
                    note=f"{recipient} marked it done without a reply")


def tasks_to(box: Mailbox, recipient: str, *, limit: int, after: str | None = None,
             keep: Callable[[MailTask], bool] | None = None) -> list[MailTask]:
    """The caller's tasks at ``recipient`` that ``keep`` keeps, newest first, at most
    ``limit``, starting after the id ``after`` (a page's last); among its
    :data:`MAX_LISTED` newest sends."""
    found: list[MailTask] = []
    skipping = after is not None
    for message_id in box.store.sent_ids(box.agent, MAX_LISTED):
        if skipping:
            skipping = message_id != after
            continue
        if len(found) >= limit:
            break
        try:
            task = task_of(box, message_id, recipient)
        except NotFound:
            continue  # mail to someone else, or gone
        if keep is None or keep(task):
            found.append(task)
    return found


def recall(box: Mailbox, message_id: str, recipient: str | None = None) -> MailTask:
    """Take back the caller's message to ``recipient`` while it is unread: it moves to
    the recipient's done mail (kept, never shown as new) with a ``recalled`` receipt.
    ``Refused`` once the recipient has read it."""
    if recipient is None:
        recipient = _recipient(box, message_id)
    message = _own(box, message_id, recipient)
    authority.check_write(box.store, box.config, box.principal)
    box._unfenced()
    if box.store.state_of(recipient, message.id) != "unread":
        raise Refused(f"{recipient} has read {message.id} already: it cannot be recalled")
    before = box.store.move(recipient, message.id, "done")
    if before != "unread":  # read in the instant between the look and the move
        raise Refused(f"{recipient} read {message.id} as it was being recalled")
    box._event(RECALLED, message.id, agent=recipient, by=box.agent, durable=True)
    return task_of(box, message.id, recipient)


def _recipient(box: Mailbox, message_id: str) -> str:
    """The one recipient of the caller's message ``message_id``."""
    try:
        message = box.status(message_id).message
    except (NotFound, InvalidInput):
        raise NotFound(f"no task {message_id}") from None
    if message.sender != box.agent or len(message.to) != 1 or message.is_broadcast:
        raise NotFound(f"no task {message_id}")
    return message.to[0]


def _own(box: Mailbox, message_id: str, recipient: str) -> Message:
    """The caller's own directed message to ``recipient``, body included."""
    try:
        message, _ = box.store.load(recipient, message_id)
    except NotFound:
        raise NotFound(f"no task {message_id}") from None
    if message.sender != box.agent or recipient not in message.to or message.is_broadcast:
        raise NotFound(f"no task {message_id}")
    return message


def _answer(box: Mailbox, replies: list[str], recipient: str) -> Message | None:
    """The first of ``replies`` that ``recipient`` sent the caller, body included."""
    for reply_id in sorted(replies):
        try:
            message, _ = box.store.load(box.agent, reply_id)
        except NotFound:
            continue
        if message.sender == recipient:
            return message
    return None


def _recalled(box: Mailbox, message_id: str, recipient: str) -> bool:
    """Was ``message_id`` recalled from ``recipient``? The log is read from its newest
    end back to the message's delivery."""
    for event in box.store.events(newest_first=True):
        if event.get("id") != message_id:
            continue
        if event.get("event") == RECALLED and event.get("agent") == recipient:
            return True
        if event.get("event") == "delivered":
            return False
    return False
