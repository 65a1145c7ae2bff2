"""Instances: one running session of an agent, addressed as ``name@session``.

An agent may run twice (two sessions of one host in one folder). Each running session is
an instance: a server session (``mailslot serve``, its id from :mod:`mailslot.access.fencing`)
or a host session the hooks ran in (the host's own id, recorded by every hook call). The
rules, in one place:

* **address**: ``builder@1a2b`` names the one online session of ``builder`` whose id
  starts with ``1a2b`` (at least :data:`MIN_PREFIX` characters). A prefix that matches no
  online session, or several, is refused at send with one line; nothing is sent.
* **header**: such mail is a directed message to ``builder`` whose header names the whole
  session id (``instance:``). It must be the message's only recipient.
* **shown to**: that session only, by its hooks, its waiter and its MCP server (a server
  also speaks for the hook sessions of the host process that started it, so the host's
  hooks and its tools see the same mail). Any other session of the agent neither sees
  nor is woken by it. The CLI, which belongs to no session, lists it with its instance,
  as it lists everything in the mailbox: a person may look at all of it. The test
  itself is :meth:`mailslot.core.message.Message.shown_to` (on the hook path).
* **who** lists each online instance by its shortest unique prefix, never fewer than
  :data:`SHOWN_PREFIX` characters.

It is a visibility rule among sessions of one agent, not a boundary: every session of
the agent holds the same credential and can read the mailbox from the CLI (see
docs/security.md).
"""

from __future__ import annotations

from ..core.dates import datetime
from ..core.errors import InvalidInput, Refused
from .fencing import sessions

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from ..store import Store

MIN_PREFIX = 4
"""The shortest session prefix an address may use."""
SHOWN_PREFIX = 8
"""``who`` shows at least this many characters of a session id."""


def split(address: str) -> tuple[str, str | None]:
    """``"builder@1a2b"`` -> ``("builder", "1a2b")``; a plain name has no instance."""
    name, at, prefix = address.partition("@")
    if not at:
        return address, None
    prefix = prefix.strip()
    if len(prefix) < MIN_PREFIX:
        raise InvalidInput(f"{address!r}: an instance is named by at least {MIN_PREFIX} "
                           "characters of its session id (see mailslot who)")
    return name.strip(), prefix


def online(store: Store, agent: str, now: datetime) -> list[dict[str, Any]]:
    """The sessions of ``agent`` that count as instances now: online, not replaced."""
    return [s for s in sessions(store, agent, now)
            if s["online"] and s["session"] and not s["replaced_by"]]


def resolve(store: Store, agent: str, prefix: str, now: datetime) -> str:
    """The whole id of the one online session of ``agent`` starting with ``prefix``."""
    found = sorted({s["session"] for s in online(store, agent, now)
                    if s["session"].lower().startswith(prefix.lower())})
    if not found:
        raise Refused(f"{agent} has no running session {prefix} (see mailslot who); "
                      "nothing was sent")
    if len(found) > 1:
        raise InvalidInput(f"{agent}@{prefix} is ambiguous: it names sessions "
                           f"{', '.join(found)}; give more characters; nothing was sent")
    return str(found[0])


def short_forms(ids: Iterable[str], minimum: int = SHOWN_PREFIX) -> dict[str, str]:
    """Each id's shortest prefix no other id shares, at least ``minimum`` long."""
    unique = sorted(set(ids))
    forms = {}
    for one in unique:
        length = min(minimum, len(one))
        while length < len(one) and any(o != one and o.startswith(one[:length])
                                        for o in unique):
            length += 1
        forms[one] = one[:length]
    return forms


def of_server(store: Store, agent: str, session: str, host_pid: int,
              machine: str) -> set[str]:
    """The instances a server speaks for: its own session and the hook sessions of the
    host process that started it (``host_pid`` on ``machine``)."""
    mine = {session}
    for record in store.hook_sessions():
        if (record["agent"] == agent and record.get("pid") == host_pid
                and record.get("hostname") == machine):
            mine.add(str(record["session"]))
    return mine


def by_agent(store: Store, now: datetime) -> dict[str, list[str]]:
    """Every agent's online instances as ``who`` shows them: ``SHORT (program)``, each
    SHORT the shortest prefix unique among the agent's instances (at least
    :data:`SHOWN_PREFIX` characters), oldest first."""
    found: dict[str, list[dict[str, Any]]] = {}
    for s in sessions(store, None, now):
        if s["online"] and s["session"] and not s["replaced_by"]:
            found.setdefault(s["agent"], []).append(s)
    shown = {}
    for agent, live in found.items():
        forms = short_forms(s["session"] for s in live)
        shown[agent] = [f"{forms[s['session']]} ({s['program'] or '?'})" for s in live]
    return shown
