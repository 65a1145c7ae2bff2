"""When the loop governor stops a loop, the owner hears of it once: which agents, the
conversation, and what the loop cost (messages, bytes put into models' context, turns
woken). A notice from ``mailslot`` in the owner's inbox, sent by the process whose send
was stopped, once per conversation (the store's ``mark_once``: ``loop-<first id>``).
It names ids, agent names and numbers only, never a subject or a body.
"""

from __future__ import annotations

from ..core.errors import MailslotError, NotFound, Unreadable
from ..mail.causes import Chain
from ..mail.governor import context_bytes
from ..mail.posting import Notifier

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ..core.config import Config
    from ..core.dates import datetime
    from ..core.errors import Throttled
    from ..core.message import Message
    from ..store import Store

TURNS_LOOKED = 20_000
"""Lines of the events log read back at most to count a loop's turns woken."""


def tell_owner(store: Store, config: Config, clock: Callable[[], datetime],
               stopped: Throttled) -> None:
    """The owner's one notice of the loop ``stopped`` stopped (best effort: the refusal
    is the sender's answer whatever happens here)."""
    if not isinstance(stopped.loop, tuple):
        return
    chain, field = stopped.loop
    try:
        owner = config.owner
        if not isinstance(chain, Chain) or owner is None \
                or not store.mark_once(f"loop-{chain.root}"):
            return
        Notifier(store, clock).tell(owner, f"loop stopped: {', '.join(chain.agents)}",
                                    _body(store, chain, str(field)))
    except MailslotError:
        return


def _body(store: Store, chain: Chain, field: str) -> str:
    messages, spent = _cost(store, chain.messages)
    newest = chain.messages[0].id
    return (
        f"mailslot stopped a loop between agents: {', '.join(chain.agents)}.\n\n"
        f"The limit: config.json governor.{field}.\n"
        f"The conversation: {chain.hops} messages in a row from agents, each sent after "
        f"its sender was given the one before, since {chain.root}; the newest is "
        f"{newest}.\n"
        f"What it cost: {messages} messages, {spent:,} bytes put into models' context, "
        f"{_turns(store, {m.id for m in chain.messages})} turns woken.\n\n"
        f"To let it go on, write in it yourself (`mailslot reply {newest}`) or raise the "
        "limit (`mailslot config`); to stop an agent: `mailslot pause AGENT`.\n")


def _cost(store: Store, chain: list[Message]) -> tuple[int, int]:
    """How many messages, and the bytes they put into their readers' contexts."""
    spent = 0
    for message in chain:
        try:
            whole = (store.load_broadcast(message.id)[0] if message.is_broadcast
                     else store.load(message.to[0], message.id)[0])
        except (NotFound, Unreadable):
            continue
        spent += context_bytes(whole.subject, whole.body) * len(whole.to)
    return len(chain), spent


def _turns(store: Store, ids: set[str]) -> int:
    """Wakes that started a turn for any of ``ids`` (``wake_ok`` receipts)."""
    turns = 0
    for number, event in enumerate(store.events(newest_first=True)):
        if number >= TURNS_LOOKED:
            break
        if event.get("event") == "wake_ok" and event.get("id") in ids:
            turns += 1
    return turns
