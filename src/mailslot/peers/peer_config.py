"""What config.json says about peers: the owner's settings, read safely.

* ``node``: this mailbox's node name (:func:`.nodes.node_name`);
* ``peers.NAME``: one peer, like a git remote: ``ssh`` (what ``ssh`` takes; absent for
  a peer that only connects here), ``remote_store``, ``remote_mailslot``,
  ``ssh_command``, and ``may_send_to``: the agents of this node the peer may send to (a
  list of names, or absent: every agent; gates still apply);
* ``peer_bounce_hours``: how long mail may wait for a link before it goes back to its
  sender (default 72);
* ``peer_poll_seconds``: how often the watcher looks for mail waiting on a peer that
  cannot reach this node (default 30).

A malformed value fails closed: the peer is not used, and the error names the field.
"""

from __future__ import annotations

from ..core.addresses import check_node
from ..core.config import named_objects
from ..core.errors import InvalidInput, StoreError
from ..core.names import check_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

DEFAULT_BOUNCE_HOURS = 72.0
DEFAULT_POLL_SECONDS = 30.0
WINDOW_MARGIN_HOURS = 24.0
"""A receiver takes an envelope up to this long after the sender would have bounced it
(clocks disagree); past that it is a replay."""
_SETTINGS = ("ssh", "remote_store", "remote_mailslot", "ssh_command")


def peers(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every peer in config.json by name, each checked."""
    found = named_objects(config, "peers", check_node)
    for node, entry in found.items():
        for key in _SETTINGS:
            if entry.get(key) is not None and not isinstance(entry[key], str):
                raise StoreError(f"config.json: peers.{node}.{key} must be text")
    return {node: dict(entry) for node, entry in found.items()}


def reachable(config: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The peers this node can reach itself (an ``ssh`` destination set)."""
    return {name: entry for name, entry in peers(config).items() if entry.get("ssh")}


def wanted(config: Mapping[str, Any]) -> bool:
    """Does any peer need the watcher (one with ``ssh``)? Read from the raw config;
    a malformed section counts as yes (the watcher says why)."""
    section = config.get("peers") if isinstance(config, dict) else None
    if not isinstance(section, dict):
        return False
    return any(not isinstance(e, dict) or e.get("ssh") for e in section.values())


def may_send_to(config: Mapping[str, Any], node: str) -> set[str] | None:
    """The agents ``node`` may send to here (``None``: every one)."""
    entry = peers(config).get(node)
    if entry is None:
        return set()
    allowed = entry.get("may_send_to")
    if allowed is None:
        return None
    if not isinstance(allowed, list):
        raise StoreError(f"config.json: peers.{node}.may_send_to must be a list of agents")
    try:
        return {check_name(a, f"config.json: peers.{node}.may_send_to entry")
                for a in allowed}
    except InvalidInput as exc:
        raise StoreError(str(exc)) from None


def _hours(config: Mapping[str, Any], key: str, default: float) -> float:
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise StoreError(f"config.json: {key} must be a number above 0")
    return float(value)


def bounce_seconds(config: Mapping[str, Any]) -> float:
    """How long mail waits for its peer before it is sent back."""
    return _hours(config, "peer_bounce_hours", DEFAULT_BOUNCE_HOURS) * 3600


def window_seconds(config: Mapping[str, Any]) -> float:
    """How old an envelope a receiver still takes (older: a replay)."""
    return bounce_seconds(config) + WINDOW_MARGIN_HOURS * 3600


def poll_seconds(config: Mapping[str, Any]) -> float:
    return _hours(config, "peer_poll_seconds", DEFAULT_POLL_SECONDS)
