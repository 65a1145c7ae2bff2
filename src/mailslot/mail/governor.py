"""The loop governor: what stops agents that keep answering each other.

Two agents that reply to each other's every message, or three in a ring, never stop by
themselves; one such loop sent 398 messages in ten hours. Every rule that stops them is
here, and is asked by the send path (:meth:`mailslot.service.mailbox.Mailbox._deliver`)
and the wake path (:mod:`mailslot.wake.queue`, :mod:`mailslot.wake.runner`):

* **token buckets**, per sender→recipient pair and per agent, on sends (the sender's)
  and on wakes. A limit is N an hour: a bucket holds N/2 tokens (half an hour's worth
  at once) and refills at N an hour; a message takes one token from each of its
  buckets, all or none (:meth:`~mailslot.store.base.Store.update_buckets` holds them
  under one lock, or one row lock each on PostgreSQL). Every bucket is its sender's
  own: a wake of B for A's message takes from ``wakes.B.A`` only, whose limit is the
  pair's, or A's equal share of B's (``agent_wakes_per_hour`` divided among the senders
  that woke B within the hour) when that is smaller; so no sender spends another's
  wakes, and together they stay within B's limit over time. A stored value out of
  bounds is read as the nearest sane one (:func:`_refilled`): no bucket holds anyone
  back longer than one token's refill;
* **budgets of cost** in the same buckets: the bytes a sender's mail puts into other
  agents' contexts, per hour (``sends.A.-bytes``) and per conversation
  (``sends.A.-tX``), and the turns its mail wakes in one conversation
  (``wakes.-tX.A``); a message takes its size from a byte bucket, not one token;
* a **hop limit**: a message whose chain of causes (what it answers, or the agent mail
  its sender had just been given: :mod:`.causes`) holds more messages in a row from
  agents, none from the owner, than ``hop_limit`` is stopped; when any limit stops a
  message that continues such a chain, the refusal carries the chain
  (``Throttled.loop``) and the owner is told once (:mod:`mailslot.service.loops`);
* the owner's **pause**: ``governor.paused`` in the config (only the owner changes it:
  ``mailslot pause``/``resume``, the owner's MCP server, the web page). A paused agent
  sends nothing and is woken for nothing; its mail is still delivered.

The owner (the config's ``owner``) is never limited: their sends take no tokens, their
messages wake, and a message of theirs in a chain starts its count again. A stopped send
raises :class:`~mailslot.core.errors.Throttled` before anything is written, in one line
that says why and how to go on. A wake over its limit is skipped with a ``wake_skipped``
line in the events log; the mail is delivered all the same. A malformed ``governor``
section fails closed: agents' sends are refused, naming the field (the owner's are not).
Limits and defaults: :data:`mailslot.core.config.GOVERNOR_DEFAULTS`, docs/security.md.
"""

from __future__ import annotations

import math

from ..core.config import Config
from ..core.errors import MailslotError, StoreError, Throttled
from ..core.names import BROADCAST_RECIPIENT
from .causes import Chain

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from ..core.message import Message
    from ..store import Store

_KEPT = "nothing was sent and your text is unchanged"
_HOUR = 3600.0
_SKEW = 60.0
"""How far ahead of a sender's clock a bucket's time may be and still be believed
(another process's clock, a moment later); beyond it the time was forged."""


def _owner(config: Config) -> str | None:
    """The owner, or ``None`` where the config cannot say (then nobody is exempt)."""
    try:
        return config.owner
    except MailslotError:
        return None


def word(name: str) -> str:
    """A party as a part of a bucket's key: a local agent by its name; an agent of a peer
    node (``ana@b``: ``@`` is no key character) by ``-`` and a digest of its address,
    which no agent name can be (none starts with ``-``)."""
    if "@" not in name:
        return name
    import hashlib  # only for mail from or to a peer

    return "-" + hashlib.sha256(name.encode("utf-8")).hexdigest()[:24]


def is_paused(settings: dict[str, Any], agent: str) -> bool:
    paused = settings["paused"]
    return agent in paused or BROADCAST_RECIPIENT in paused


Taken = list[tuple[str, "tuple[float, float] | None", "tuple[float, float]", float, float]]
"""What one send took: each bucket's key, what it held before (``None``: full), what it
holds after, its size and what was taken; :func:`give_back` undoes it if the delivery
fails."""
CHAIN_MOST = 200
"""How far back a chain is followed for its conversation when no hop limit is set."""
LOOP_HOPS = 2
"""A send stopped after this many agent messages in a row along its causes stopped a
loop: the owner is told (once per conversation)."""
_BUDGETS = {"agent_bytes_per_hour": "into other agents' context",
            "thread_bytes_per_hour": "into context in this conversation"}


FRAMING_BYTES = 300
"""What mailslot's framing adds to a message shown to a model (its header lines, the
answer hint): counted with its subject and body as what it puts into a context."""


def context_bytes(subject: str, body: str) -> int:
    """The bytes a message puts into one reader's context when it is shown (UTF-8)."""
    return len(subject.encode("utf-8", "surrogatepass")) + FRAMING_BYTES \
        + len(body.encode("utf-8", "surrogatepass"))


class Passed:
    """A send the governor let through: what it took (:func:`give_back`), and the
    conversation it is part of (its chain's first message: ``thread``), whose wakes
    :func:`wake_refusal` counts."""

    __slots__ = ("taken", "thread")

    def __init__(self, taken: Taken, thread: str | None) -> None:
        self.taken, self.thread = taken, thread


def check_send(store: Store, config: Config, sender: str, to: Sequence[str], now: float,
               *, answering: Message | None = None, cause: Message | None = None,
               size: int = 0) -> Passed:
    """Let ``sender``'s message to ``to`` through, taking its tokens, or raise
    :class:`Throttled` (nothing taken, nothing sent). ``answering``: the message it
    replies to; ``cause``: the mail its sender had just been given (one of them is
    the start of the chain counted, :mod:`.causes`); ``size``: the bytes it puts into
    each recipient's context."""
    owner = _owner(config)
    if sender == owner:
        return Passed([], None)
    try:
        settings = config.governor()
    except StoreError as exc:
        raise Throttled(f"{exc}; agents' sends are refused until the owner fixes it "
                        f"(mailslot config); {_KEPT}") from None
    if is_paused(settings, sender):
        raise Throttled(f"{sender} is paused by the owner; {_KEPT}; it can send again "
                        f"once the owner runs: mailslot resume {sender}")
    parent = answering or cause
    limit = settings["hop_limit"]
    chain = None if parent is None else Chain(
        store, parent, owner, CHAIN_MOST if limit is None else int(limit))
    if parent is not None and chain is not None and limit is not None \
            and chain.hops >= limit:
        raise _stopped(_hops_refusal(chain.hops, limit, parent, answering is not None),
                       chain, "hop_limit")
    thread = None if chain is None else chain.root
    taken: Taken = []
    stopped = _take(store, _send_buckets(settings, sender, to, thread, size), now, taken)
    if stopped is not None:
        key, field, wait = stopped
        pair = [name for name in to if key == f"sends.{word(sender)}.{word(name)}"]
        whose = f"{sender} to {pair[0]}" if pair else sender
        what = (f"too many bytes from {sender} {_BUDGETS[field]}" if field in _BUDGETS
                else f"too many messages from {whose}")
        line = (f"{what} (config.json governor.{field} {settings[field]:g}); {_KEPT}; try "
                f"again in {_seconds(wait)}, or the owner raises the limit")
        if chain is not None and chain.hops >= LOOP_HOPS:
            raise _stopped(line, chain, field)
        raise Throttled(line)
    return Passed(taken, thread)


def _hops_refusal(hops: int, limit: float, parent: Message, reply: bool) -> str:
    along = ("in its reply chain" if reply else
             "along the mail each was sent after reading (its causes)")
    return (f"this {'reply' if reply else 'message'} would be message {hops + 1} in a row "
            f"between agents {along} with none from the owner (config.json "
            f"governor.hop_limit {limit:g}); {_KEPT}; the chain goes on once the owner "
            f"{'replies' if reply else 'writes'} in it (mailslot reply {parent.id})")


def _stopped(line: str, chain: Chain, field: str) -> Throttled:
    """The refusal of a send that would have grown a loop, with what the owner hears."""
    error = Throttled(line)
    error.loop = (chain, field)
    return error


def _send_buckets(settings: dict[str, Any], sender: str, to: Sequence[str],
                  thread: str | None, size: int) -> list[tuple[str, str, float | None, float]]:
    """Each bucket a send takes from: its key (every one the sender's own), its limit's
    field, the limit, and what it takes (a message, or the bytes it puts into its
    recipients' context)."""
    spent = float(size * len(to))
    found: list[tuple[str, str, float | None, float]] = [
        (f"sends.{word(sender)}.{word(name)}", "pair_sends_per_hour",
         settings["pair_sends_per_hour"], 1.0) for name in to]
    found.append((f"sends.{word(sender)}", "agent_sends_per_hour",
                  settings["agent_sends_per_hour"], 1.0))
    if spent:
        found.append((f"sends.{word(sender)}.-bytes", "agent_bytes_per_hour",
                      settings["agent_bytes_per_hour"], spent))
        if thread is not None:
            found.append((f"sends.{word(sender)}.{thread_key(thread)}",
                          "thread_bytes_per_hour",
                          settings["thread_bytes_per_hour"], spent))
    return found


def thread_key(thread: str) -> str:
    """A conversation as a part of a bucket's key: ``-t`` and its id's random tail
    (never an agent's name, which cannot start with ``-``)."""
    tail = "".join(c for c in thread.lower()[-12:] if c.isascii() and c.isalnum())
    return f"-t{tail or 'x'}"


def give_back(store: Store, taken: Taken) -> None:
    """Return the tokens of a send whose delivery failed: a failed send takes nothing.
    A bucket nobody took from since is put back exactly as it was; one another sender
    took from meanwhile gets its token back. Best effort: the send's own error is the
    one to report."""
    if not taken:
        return

    def undo(held: dict[str, tuple[float, float]]) -> bool:
        for key, before, after, size, cost in taken:
            now = held.get(key)
            if now == after:
                if before is None:
                    held.pop(key, None)
                else:
                    held[key] = before
            elif now is not None:
                held[key] = (min(size, now[0] + cost), now[1])
        return True

    try:
        store.update_buckets([key for key, _, _, _, _ in taken], undo)
    except MailslotError:
        return


def wake_refusal(store: Store, config: Config, sender: str, agent: str, now: float,
                 thread: str | None = None) -> str | None:
    """Why a wake of ``agent`` for ``sender``'s message is skipped (``None``: go on,
    its tokens taken); ``thread``: the conversation it is part of, whose turns woken
    are counted too. Never raises: the message is delivered whatever this says."""
    if sender == _owner(config):
        return None
    try:
        settings = config.governor()
    except StoreError as exc:
        return f"{exc} (the loop governor wakes nobody for agents until it is fixed)"
    if is_paused(settings, agent):
        return f"{agent} is paused by the owner (mailslot resume {agent})"
    try:
        per_hour, field, senders = _wake_limit(store, settings, sender, agent, now)
        buckets = [(f"wakes.{agent}.{word(sender)}", field, per_hour, 1.0)]
        if thread is not None:
            buckets.append((f"wakes.{thread_key(thread)}.{word(sender)}",
                            "thread_turns_per_hour",
                            settings["thread_turns_per_hour"], 1.0))
        stopped = _take(store, buckets, now)
    except MailslotError as exc:
        return f"the loop governor's buckets cannot be read: {exc}"
    if stopped is None:
        return None
    if stopped[1] == "thread_turns_per_hour":
        return (f"too many turns woken in this conversation by {sender} (config.json "
                f"governor.thread_turns_per_hour {settings['thread_turns_per_hour']:g}); "
                f"the next in {_seconds(stopped[2])}")
    shared = (f", shared by {senders} senders: {per_hour:.3g} an hour each"
              if field == "agent_wakes_per_hour" and senders > 1 else "")
    return (f"too many wakes of {agent} from {sender} (config.json governor.{field} "
            f"{settings[field]:g}{shared}); the next in {_seconds(stopped[2])}")


def _wake_limit(store: Store, settings: dict[str, Any], sender: str, agent: str,
                now: float) -> tuple[float | None, str, int]:
    """The hourly limit of ``sender``'s wakes of ``agent``, the field it comes from, and
    how many senders share ``agent``'s wakes now: the pair's limit, or the sender's
    equal share of the agent's when that is smaller. The senders counted are those whose
    wake of ``agent`` took a token within the hour, and this one."""
    pair, whole = settings["pair_wakes_per_hour"], settings["agent_wakes_per_hour"]
    if whole is None:
        return pair, "pair_wakes_per_hour", 1
    mine = f"wakes.{agent}.{word(sender)}"
    senders = 1 + sum(1 for key, (_, at) in store.bucket_group(f"wakes.{agent}").items()
                      if key != mine and at > now - _HOUR)
    share = float(whole) / senders
    if pair is None or share < pair:
        return share, "agent_wakes_per_hour", senders
    return pair, "pair_wakes_per_hour", senders


def paused_in(config: Config, agent: str) -> str | None:
    """Why ``agent`` may not be woken now (the owner paused it), for a wake queued
    before the pause, by the config the wake's plan has just read; ``None`` if it may
    (a governor section that cannot be read decides nothing here: the wake's own check
    names the field)."""
    try:
        settings = config.governor()
    except MailslotError:
        return None
    return f"{agent} is paused by the owner" if is_paused(settings, agent) else None


def _take(store: Store, buckets: Sequence[tuple[str, str, float | None, float]], now: float,
          taken: Taken | None = None) -> tuple[str, str, float] | None:
    """Take from every bucket ``(key, field, per_hour, cost)`` with a limit ``cost``
    tokens (at most the bucket's size: a message bigger than half an hour's bytes still
    passes a full bucket), what was taken added to ``taken``; or take nothing: then the
    first bucket short of it, its limit's name and the seconds until it holds enough."""
    limited = [(key, field, float(per_hour), cost) for key, field, per_hour, cost in buckets
               if per_hour is not None]
    stopped: list[tuple[str, str, float]] = []

    def take(held: dict[str, tuple[float, float]]) -> bool:
        after: Taken = []
        for key, field, per_hour, wanted in limited:
            size, rate = max(1.0, per_hour / 2), per_hour / 3600
            cost = min(wanted, size)
            before = held.get(key)
            tokens = _refilled(before, size, rate, now)
            if tokens < cost:
                stopped.append((key, field, (cost - tokens) / rate))
                return False
            after.append((key, before, (tokens - cost, now), size, cost))
        held.update({key: left for key, _, left, _, _ in after})
        if taken is not None:
            taken.extend(after)
        return True

    if limited:
        store.update_buckets([key for key, _, _, _ in limited], take)
    return stopped[0] if stopped else None


def _refilled(stored: tuple[float, float] | None, size: float, rate: float,
              now: float) -> float:
    """The tokens a bucket holds at ``now``. What no take writes is read as the nearest
    sane value, so a forged or damaged bucket never holds anyone back longer than one
    token's refill: fewer than none is empty, more than its size full; a time more than
    :data:`_SKEW` to come, or a value that is no number, is a full bucket (as a line
    that cannot be read is)."""
    if stored is None or not all(math.isfinite(v) for v in stored) \
            or stored[1] > now + _SKEW:
        return size
    tokens, at = stored
    return min(size, max(0.0, tokens) + max(0.0, now - at) * rate)


def _seconds(wait: float) -> str:
    whole = max(1, int(wait + 0.999))
    return f"{whole} s" if whole < 120 else f"{(whole + 59) // 60} min"


# The owner's pause ------------------------------------------------------------------
def set_paused(store: Store, agent: str | None, paused: bool) -> list[str]:
    """Pause (or resume) ``agent``, or everyone (``None``): ``governor.paused`` in the
    config, changed under its lock. Returns who is paused after (``all``: everyone)."""
    name = BROADCAST_RECIPIENT if agent is None else agent
    after: list[str] = []

    def change(raw: dict[str, Any]) -> bool:
        section = raw.setdefault("governor", {})
        if not isinstance(section, dict):
            raise StoreError("config.json: governor must be an object; nothing was changed")
        before = Config(raw).governor()["paused"]
        if paused:
            now = before if name in before else [*before, name]
        else:
            now = [] if agent is None else [n for n in before if n != name]
        after.extend(now)
        if now == before:
            return False
        section["paused"] = now
        return True

    store.update_config(change)
    return after
