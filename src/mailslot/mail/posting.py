"""How a new message is written: a fresh id, retried on the rare clash, then its receipt.

Used by :class:`~mailslot.service.mailbox.Mailbox` (what agents send) and :class:`Notifier`
(what mailslot itself tells an agent), so both write mail the same way. The rules about
who may send what stay in the mailbox; a notice is trusted because only mailslot's own
modules can hold a :class:`Notifier`.
"""

from __future__ import annotations

from ..core.dates import UTC, datetime
from ..core.errors import IdTaken, InvalidInput, MailslotError
from ..core.ids import new_id
from ..core.message import Message
from ..core.names import SYSTEM_SENDER, check_name
from ..core.text import DEFAULT_MAX_BODY_BYTES, MAX_SUBJECT_LENGTH, clean_body, clean_field

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from ..store import Store

_ATTEMPTS = 5


def now() -> datetime:
    """Dates are stored in UTC; readers show them in their own time zone."""
    return datetime.now(UTC)


def post(store: Store, clock: Callable[[], datetime], sender: str, to: Sequence[str],
         subject: str, body: str, *,
         before: Callable[[Message], Callable[[], None] | None] | None = None,
         **fields: Any) -> Message:
    """Write a new message from ``sender`` durably for ``to`` (or publish a broadcast)
    and add its ``delivered`` receipt; a clash of ids is retried with a new one.
    ``before`` records what the message is, once its id is known and before it is
    delivered (an access request: the store's door lets it through only then; mail for
    another node: kept for it), and may return what takes that back if the delivery
    fails. A recipient on another node (``AGENT@NODE``) gets no copy here: ``before``
    keeps it for that node."""
    local = [name for name in to if "@" not in name]
    for _ in range(_ATTEMPTS):
        when = clock()
        message = Message(id=new_id(when, sender, list(to)), date=when.isoformat(),
                          sender=sender, to=tuple(to), subject=subject, body=body, **fields)
        undo: Callable[[], None] | None = None
        try:
            if before is not None:
                undo = before(message)
            if message.is_broadcast:
                store.publish(message)
            else:
                for name in local:  # the door of a gated inbox knows this one
                    if store.accept_of(name) != "open":
                        store.add_passed(name, [message.id])
                    if message.instance is not None:  # for one session
                        store.add_instance_mail(name, message.id, message.instance)
                if local:
                    store.deliver(message, local)
        except IdTaken:
            if undo is not None:
                undo()
            continue
        except BaseException:
            if undo is not None:
                undo()
            raise
        receipt(store, clock, "delivered", message.id, agent=sender, to=list(to))
        return message
    raise InvalidInput("could not find a free message id; try again")


def receipt(store: Store, clock: Callable[[], datetime], kind: str, message_id: str,
            *, durable: bool = False, **extra: Any) -> None:
    """Add a receipt. Best effort: the change it records is already done and durable, so
    a log that cannot be written (a planted link, a full disk) must not turn a success
    into an error that invites a second send. ``doctor`` reports the cause.
    ``durable``: synced before this returns (a read or done, acknowledged next)."""
    record: dict[str, Any] = {"ts": clock().isoformat(), "event": kind, "id": message_id}
    record.update(extra)
    try:
        store.append_event(record, durable=durable)
    except MailslotError:
        return


class Notifier:
    """The one way mailslot itself tells an agent something: a notice from ``mailslot``.

    No front end holds one: ``mailslot`` is a reserved name, so no process can take it as
    its identity, and no tool takes a sender. Notices queue no wake (a failed wake can
    never set off another).
    """

    def __init__(self, store: Store, clock: Callable[[], datetime] = now) -> None:
        self.store = store
        self._clock = clock

    def tell(self, to: str, subject: str, body: str) -> Message:
        return post(self.store, self._clock, SYSTEM_SENDER, [check_name(to, "recipient")],
                    clean_field(subject, "subject", MAX_SUBJECT_LENGTH),
                    clean_body(body, DEFAULT_MAX_BODY_BYTES))
