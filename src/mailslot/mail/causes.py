"""What caused a message, and how long the chain of causes behind it is: the loop
governor's hops (:mod:`.governor`); and what is an ack.

A message's **cause** is the agent mail its sender had just been given: the message a
reply answers (``in_reply_to``), or, for a new message, the newest mail the sender was
given within :data:`CAUSE_WINDOW` before it sent: shown by a hook, carried by a tool
result or a wake notice (the ``surfaced`` receipts), or read (``read``). The sender's own
process finds it in the events log (newest line first, at most :data:`LOOKED` lines)
and writes it in the new message's header (``cause``); neither a model nor a caller
names it. Mail from ``mailslot`` and the sender's own are never a cause; mail from the
owner is, and the chain stops there: the owner's word starts the count again.

A **chain** is the messages in a row from agents back along the causes (a message's
``cause``, else its ``in_reply_to``): a plain-send ping-pong and a ring of three agents,
each reading what the last one sent, make one chain as surely as a reply thread does.
Its first message (or the owner's that started it again) names the conversation the
governor's per-thread budgets count.

An **ack** is a message that asks nothing and says nothing but that something arrived
(``send --ack``, the tools' ``ack``), or one short enough and made only of such words
(:func:`content_free`): it is delivered, shown, and wakes nobody.
"""

from __future__ import annotations

from ..core.dates import aware
from ..core.errors import NotFound, Unreadable
from ..core.ids import sender_of
from ..core.names import SYSTEM_SENDER

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from ..core.message import Message
    from ..store import Store

CAUSE_WINDOW = 900.0
"""Seconds after mail was given to its reader within which a new message of the reader's
counts as caused by it (a turn, with its tool calls, is well inside)."""
LOOKED = 2000
"""Lines of the events log a send reads back at most to find what its sender was given."""
_GIVEN = ("surfaced", "seen", "read")
_DATED = 16
"""Every how many lines the walk back looks at a line's time, whoever's it is: a quiet
mailbox's log is read only as far as the window reaches, not :data:`LOOKED` lines."""


def last_given(store: Store, agent: str, now: float) -> str | None:
    """The id of the newest mail ``agent`` was given within :data:`CAUSE_WINDOW` before
    ``now`` (seconds since the epoch), from another agent or the owner; ``None``."""
    oldest = now - CAUSE_WINDOW
    for number, event in enumerate(store.events(newest_first=True)):
        if number >= LOOKED:
            return None
        kind = event.get("event")
        if number % _DATED == 0 or kind in _GIVEN:
            when = aware(event.get("ts"))
            if when is not None and when.timestamp() < oldest:
                return None  # newest first: everything further back is older still
        if kind not in _GIVEN or event.get("agent") != agent:
            continue
        ids = event.get("ids") if kind != "read" else [event.get("id")]
        found = [i for i in ids if isinstance(i, str)
                 and sender_of(i) not in (agent, SYSTEM_SENDER)] \
            if isinstance(ids, list) else []
        if found:
            return max(found)  # ids sort by time: the newest of what it was shown
    return None


def load_cause(store: Store, agent: str, message_id: str) -> Message | None:
    """The cause as the sender holds it (it was given to the sender: its own mailbox,
    or a broadcast); ``None`` when it is gone."""
    try:
        return store.load(agent, message_id, header_only=True)[0]
    except (NotFound, Unreadable):
        pass
    try:
        return store.load_broadcast(message_id, header_only=True)[0]
    except (NotFound, Unreadable):
        return None


class Chain:
    """The messages in a row from agents back from ``parent`` along the causes, at most
    ``most``: how many (``hops``), which (``messages``, newest first, headers only), and
    the conversation's first message (``root``: the oldest found, or the owner's that
    started the count again)."""

    __slots__ = ("hops", "messages", "root")

    def __init__(self, store: Store, parent: Message, owner: str | None, most: int) -> None:
        self.messages: list[Message] = []
        current: Message | None = parent
        while current is not None and current.sender != owner and len(self.messages) < most:
            self.messages.append(current)
            earlier = current.cause or current.in_reply_to
            current = None if earlier is None else load_cause(store, current.sender, earlier)
        self.hops = len(self.messages)
        self.root = (current if current is not None else self.messages[-1]).id

    @property
    def agents(self) -> list[str]:
        """Every agent that sent or got a message of the chain."""
        found = {m.sender for m in self.messages}
        for message in self.messages:
            found.update(message.to)
        return sorted(found)


# Acks ----------------------------------------------------------------------------------
ACK_WORDS = frozenset({
    "thanks", "thank", "thankyou", "thx", "ty", "cheers", "noted", "ack", "acked",
    "acknowledged", "received", "got", "understood", "roger", "seen"})
"""Words that make a message an ack: thanks, or that it arrived."""
FILLER = frozenset({"you", "so", "much", "a", "lot", "very", "many", "it", "that", "this",
                    "great", "perfect", "nice", "cool", "again", "all", "both", "for",
                    "the", "message", "note", "update", "info", "heads", "up", "hi",
                    "hello", "ok", "okay"})
"""Words an ack may hold beside them ("thanks a lot", "got it, cheers")."""
ACK_LONGEST = 80
"""A longer text is never taken for an ack, whatever its words."""


def content_free(text: str) -> bool:
    """Is ``text`` an ack by its words alone: short, at least one of :data:`ACK_WORDS`,
    every other word :data:`FILLER`, and nothing else but punctuation, symbols and
    spaces? ("Thanks!", "Got it, thanks 👍"; never "ok": that can be a yes.)"""
    text = text.strip()
    if not text or len(text) > ACK_LONGEST:
        return False
    words, word = [], []
    for char in text.lower() + " ":
        if char.isalnum():
            word.append(char)
            continue
        if word:
            words.append("".join(word))
            word = []
    if not words:
        return False
    return any(w in ACK_WORDS for w in words) and all(w in ACK_WORDS or w in FILLER
                                                       for w in words)
