"""Addresses across nodes: an agent on a peer is ``AGENT@NODE``.

Every mailbox is a *node* with a name (``node`` in config.json, by default the host
name). A node writes its own agents by their bare names and an agent of another node
by its address, ``ana@b``; so the same message reads ``from: ana`` on node ``b``
and ``from: ana@b`` on node ``a``, and a remote ``ana`` is never mistaken for the
local one. An id names its parties the same way (``..._ana@b_to_bob_...``), so
each node's copy carries its own id, and :func:`id_seen_from` turns one into the other.

A node name is a word like an agent name (``a-z 0-9 -``, at most 63). One made only of
hexadecimal digits and ``-`` (``1a2b3c4d``) could be read as a session id
(``bob@1a2b``: one session of the local bob), so it is refused: an address and
an instance address can always be told apart.
"""

from __future__ import annotations

from .errors import InvalidInput
from .names import LOWER, Word, check_name
from .text import quoted

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

MAX_NODE_LENGTH = 63
_NODE = Word(LOWER, LOWER + "-", MAX_NODE_LENGTH)
_SESSION_LIKE = "0123456789abcdef-"
MIN_SESSION_PREFIX = 4
"""The shortest session prefix an instance address takes (``access.instances``)."""


def is_node_name(raw: str) -> bool:
    """Is ``raw`` a usable node name (lower case already)?"""
    return _NODE.fullmatch(raw) and not _session_like(raw)


def _session_like(raw: str) -> bool:
    return len(raw) >= MIN_SESSION_PREFIX and not raw.strip(_SESSION_LIKE)


def check_node(raw: object, role: str = "node name") -> str:
    """The stored (lowercased) form of a node name, or :class:`InvalidInput` saying why."""
    if not isinstance(raw, str) or raw == "":
        raise InvalidInput(f"{role} is empty")
    name = raw.lower() if raw.isascii() else raw
    if not _NODE.fullmatch(name):
        raise InvalidInput(f"{role} {quoted(raw)} is not valid: use 1-{MAX_NODE_LENGTH} of "
                           "a-z, 0-9 and '-', not starting with '-'")
    if _session_like(name):
        raise InvalidInput(f"{role} {quoted(raw)} could be read as a session id "
                           f"(AGENT@{name} already names one session of a local agent): "
                           "give it a name with a letter after f")
    return name


def from_host(host: str) -> str:
    """A node name made from a host name: its first label, lowercased, every other
    character made ``-``; one that would be refused (empty, hexadecimal like a container's
    id) is prefixed ``node-``."""
    label = host.split(".", 1)[0].lower()
    word = "".join(c if c in LOWER else "-" for c in label).strip("-")[:MAX_NODE_LENGTH]
    if word and is_node_name(word):
        return word
    return ("node-" + word)[:MAX_NODE_LENGTH].rstrip("-") or "node"


def node_named(config: Mapping[str, Any]) -> str:
    """The node name config.json gives (``node``), else one made from the host name
    (a ``node`` that is no node name is ignored here; the peer commands refuse it)."""
    from .config import hostname

    named = config.get("node")
    return named if isinstance(named, str) and is_node_name(named) else from_host(hostname())


def split(address: str) -> tuple[str, str | None]:
    """``"ana@b"`` -> ``("ana", "b")``; a local name has no node."""
    name, at, node = address.partition("@")
    return (name, node) if at else (address, None)


def is_remote(name: str) -> bool:
    """Does ``name`` name an agent of another node (``AGENT@NODE``)?"""
    return "@" in name


def check_address(raw: str, role: str = "recipient") -> tuple[str, str]:
    """``AGENT@NODE`` checked: the agent's name and the node's, each stored form."""
    name, node = split(raw.strip())
    if node is None:
        raise InvalidInput(f"{role} {quoted(raw)} names no node (AGENT@NODE)")
    return check_name(name, role), check_node(node, f"{role}'s node")


def seen_from(name: str, origin: str, here: str) -> str:
    """A party as node ``origin`` writes it, written as node ``here`` does: a bare name
    (one of ``origin``'s agents) gains ``@origin``, an address on ``here`` loses its
    node, any other address stays."""
    agent, node = split(name)
    if node is None:
        return f"{agent}@{origin}"
    return agent if node == here else name


def id_seen_from(message_id: str, origin: str, here: str) -> str:
    """A message id as node ``origin`` writes it, as node ``here`` writes it: its sender
    and first recipient translated by :func:`seen_from` (a count ``+N`` kept)."""
    stamp, rest = message_id[:25], message_id[25:]
    parts = rest.split("_")
    sender, recipient = parts[0], parts[2]
    first, plus, count = recipient.partition("+")
    parts[0] = seen_from(sender, origin, here)
    parts[2] = seen_from(first, origin, here) + plus + count
    return stamp + "_".join(parts)
