"""Who a message goes to: the names given, probable typos, and what to tell the sender.

Kept apart from :mod:`mailslot.service.mailbox` because these rules read the roster (mailboxes,
config, owner) rather than one agent's mail. Reached through
:meth:`mailslot.service.mailbox.Mailbox.send`.
"""

from __future__ import annotations

from ..core.config import Config
from ..core.errors import InvalidInput, MailslotError, ProbableTypo
from ..core.message import Message
from ..core.names import BROADCAST_RECIPIENT, check_name, closest
from ..core.text import quoted

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from ..store import Store


NEW_ANYWAY = "pass --new, or new=true to the tool"
"""How the CLI and the MCP tools send to a new name close to a known one."""


def parse(to: str | Sequence[str], nodes: Collection[str] = ()) -> list[str]:
    """The checked names in ``to`` (a name, a list, or comma-separated), each once; an
    address ``AGENT@NODE`` of one of ``nodes`` (this node's peers) is kept whole."""
    raw = [to] if isinstance(to, str) else list(to)
    names: list[str] = []
    for entry in raw:
        for part in entry.split(",") if isinstance(entry, str) else [entry]:
            part = part.strip() if isinstance(part, str) else part
            if isinstance(part, str) and part.lower() == BROADCAST_RECIPIENT:
                raise InvalidInput(
                    "recipient 'all' is reserved: to write to every agent, broadcast "
                    "(mailslot broadcast, or send_message to all alone)"
                )
            if isinstance(part, str) and _node(part) in nodes:
                from ..core.addresses import check_address

                name = "@".join(check_address(part))
            else:
                name = check_name(part, "recipient")
            if name not in names:
                names.append(name)
    if not names:
        raise InvalidInput("no recipient given")
    return names


def _node(part: str) -> str | None:
    """The node an address names (``ana@b``: ``b``), or ``None`` for a plain name."""
    _, at, node = part.partition("@")
    return node.strip().lower() if at else None


def parse_instance(to: str | Sequence[str], nodes: Collection[str] = ()
                   ) -> tuple[list[str], str | None]:
    """Like :func:`parse`, where the one recipient may be ``name@session-prefix`` (an
    instance, see :mod:`mailslot.access.instances`): the names and that prefix, if any.
    ``AGENT@NODE`` of one of ``nodes`` is an agent of that peer, never an instance."""
    from ..access.instances import split

    raw = [to] if isinstance(to, str) else list(to)
    parts = [p for e in raw for p in (e.split(",") if isinstance(e, str) else [e])]
    addressed = [p for p in parts if isinstance(p, str) and "@" in p
                 and _node(p) not in nodes]
    if not addressed:
        return parse(to, nodes), None
    if len(parts) > 1:
        raise InvalidInput(f"{addressed[0].strip()} names one session: send it alone (one "
                           "recipient per message to an instance)")
    name, prefix = split(addressed[0].strip())
    return parse(name), prefix


def roster_for(store: Store, config: Config, names: Sequence[str], sender: str
               ) -> list[str]:
    """What :func:`check_new` needs to check ``names``: the config's agents and the owner
    when they hold every recipient (so a send to a configured agent, which every agent
    woken on mail is, lists no mailboxes), else all of :func:`known`."""
    configured = set(config.agents()) | ({config.owner} if config.owner else set())
    if all(name in configured or name == sender or "@" in name for name in names):
        return sorted(configured)
    return known(store, config)


def known(store: Store, config: Config) -> list[str]:
    """Names with a mailbox, in the config, or the owner: whom a message can reach."""
    names = set(store.agent_names()) | set(config.agents())
    if config.owner:
        names.add(config.owner)
    return sorted(names)


def check_new(recipients: list[str], roster: list[str], sender: str, *,
              allow_new: bool) -> list[str]:
    """Refuse a probable typo (a name without a mailbox within two edits of a known one)
    unless ``allow_new``; return a note for each genuinely new name."""
    notes = []
    for name in recipients:
        if name in roster or name == sender or "@" in name:
            continue  # an agent of a peer: its node has the roster
        near = closest(name, roster)
        if near is not None and not allow_new:
            raise ProbableTypo(quoted(name), near, roster, NEW_ANYWAY)
        notes.append(f"{name} had no mailbox; a new one was made")
    return notes


def wake_refusals(config: Config, message: Message) -> list[str]:
    """Why each recipient's own config will not let ``message`` wake it, said at once
    (the watcher's later notice says the same)."""
    from ..wake.policy import refusal, settings_for  # here: read paths never need it

    notes = []
    for name in message.to:
        if "@" in name:
            continue  # an agent of another node: its own config decides there
        try:
            why = refusal(settings_for(config, name), message)
        except MailslotError as exc:
            why = str(exc)
        if why is not None:
            notes.append(f"{name} will not be woken: {why}; the message waits in its inbox")
    return notes
