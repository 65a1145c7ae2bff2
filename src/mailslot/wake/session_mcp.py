"""A session's own mailslot MCP server, speaking as the agent it was started (or woken) as.

A folder's installed settings name the agent its sessions speak as (``mailslot install
HOST --agent A`` registers ``serve --agent A``), and ``--agent`` beats ``MAILSLOT_AGENT``.
So a session started with ``register_as NAME`` would speak as the folder's agent, not
as NAME, if it only got NAME in its environment. Instead each host that can is handed,
for that one run, a server called ``mailslot`` that runs ``serve --agent NAME``, by the
host's own per-run means (:meth:`~mailslot.host_registry.host.Host.session_server`, checked
against each CLI's ``--help``, docs/launch.md). A host with no such means is checked for
a registration that would win (:meth:`~mailslot.host_registry.host.Host.speaks_as_another`).

The mailbox is passed as ``--dir`` when it is a folder; a server URL may hold a
password, so it is never an argument: the server reads it from ``MAILSLOT_STORE``,
which the session's environment carries.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field

from .environment import is_url, rules


@dataclass(frozen=True)
class Override:
    """What to add to one run of a host so its ``mailslot`` server speaks as the agent."""

    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)


def server_argv(agent: str, location: str) -> list[str]:
    """``mailslot serve --agent NAME [--dir FOLDER]`` of this installation."""
    beside = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "mailslot")
    program = [beside] if os.access(beside, os.X_OK) else [sys.executable, "-m", "mailslot"]
    tail = [] if is_url(location) else ["--dir", location]
    return [*program, "serve", "--agent", agent, *tail]


def takes_own_server(host: str) -> bool:
    """Can one run of ``host`` be given its own server?"""
    from .. import host_registry as hosts

    return hosts.host(host).own_servers


def override(host: str, agent: str, location: str) -> Override:
    """The per-run server for ``host`` (a host with no per-run means: nothing)."""
    from .. import host_registry as hosts

    command, *args = server_argv(agent, location)
    found = hosts.host(host).session_server(command, args, url_store=is_url(location))
    return Override([] if found is None else found)


def clean_environ() -> dict[str, str]:
    """This process's environment without any ``MAILSLOT_*`` variable and without any
    host's markers: the caller's own identity, mailbox, credential or parent must never
    pass to a session it starts, nor a sign that it runs inside a host (``CLAUDECODE``),
    which would make the session think it is nested in one."""
    markers = rules().markers
    return {k: v for k, v in os.environ.items()
            if not k.startswith("MAILSLOT_") and k not in markers}
