"""Sessions and fencing: one agent, several running servers, and replacing one safely.

API::

    new_session_id() -> str        a short random id, given to each ``serve`` at start
    sessions(store, agent, now, *, machines)
                                   the sessions of ``agent`` (or of everyone): its
                                   servers and the host sessions its hooks ran in, each
                                   with kind, session id, program, pid, started, online,
                                   last seen, replaced by; without ``machines``, no pid
                                   or folder (``None``: a remote or child caller's view)
    start(store, agent, session, *, exclusive, replace) -> list[str]
                                   before a server serves: with ``exclusive`` it refuses
                                   while another session of the agent is online, unless
                                   that session's exact id is given as ``replace``, which
                                   fences it; returns notes for the user
    check(store, agent, session)   ``Refused`` for a fenced session's write, naming the
                                   session that replaced it

Presence (:mod:`mailslot.mail.presence`) records each server with its session id; a fence is
kept by the store, so the replaced server learns it at its next write whichever
process, or machine, it runs on. Hook sessions (a host session the hooks ran in, recorded
by every hook call) are listed beside the servers but never fenced: a hook only reads,
and a host session cannot be stopped from outside.
"""

from __future__ import annotations

import os

from ..core.config import hostname
from ..core.dates import datetime
from ..core.errors import InvalidInput, Refused
from ..core.results import Session
from ..mail.presence import hook_online, is_online

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from typing import Any

    from ..store import Store


def new_session_id() -> str:
    return os.urandom(4).hex()


def sessions(store: Store, agent: str | None, now: datetime, *, machines: bool = True
             ) -> list[dict[str, Any]]:
    found = _sessions(store, agent, now)
    if not machines:
        found = [{**s, "pid": None, **({"cwd": None} if "cwd" in s else {})} for s in found]
    return found


def _sessions(store: Store, agent: str | None, now: datetime) -> list[dict[str, Any]]:
    here = hostname()
    found = []
    for record in store.presence():
        session = Session.from_record(record)
        if session is None or (agent is not None and record["agent"] != agent):
            continue
        fenced = store.fenced_by(record["agent"], session.session) if session.session \
            else None
        found.append({"agent": record["agent"], "session": session.session,
                      "program": session.program, "pid": session.pid,
                      "started": session.started, "online": is_online(session, now, here),
                      "replaced_by": fenced, "kind": "server",
                      "last_seen": session.last_seen})
    for record in store.hook_sessions():
        if agent is not None and record["agent"] != agent:
            continue
        found.append(hook_session(record, now))
    return sorted(found, key=lambda s: (s["agent"], str(s["started"])))


def hook_session(record: dict[str, Any], now: datetime) -> dict[str, Any]:
    """A hook session as ``sessions`` lists it: online while a hook ran in it within
    :data:`~mailslot.mail.presence.HOOK_ONLINE_SECONDS`."""
    seen = float(record["seen"])
    started = record.get("started")
    return {"agent": record["agent"], "session": record["session"],
            "program": record.get("host"), "pid": record.get("pid"),
            "started": _stamp(started, now) if isinstance(started, (int, float)) else None,
            "online": hook_online(seen, now), "replaced_by": None, "kind": "hook",
            "last_seen": _stamp(seen, now), "cwd": record.get("cwd")}


def _stamp(epoch: float, now: datetime) -> str:
    return datetime.fromtimestamp(epoch, now.tzinfo).isoformat(timespec="seconds")


def start(store: Store, agent: str, session: str, *, exclusive: bool,
          replace: str | None, now: datetime) -> list[str]:
    others = [s for s in sessions(store, agent, now)
              if s["kind"] == "server" and s["online"] and s["session"] != session
              and not s["replaced_by"]]
    notes = []
    if replace is not None:
        if replace not in {s["session"] for s in others}:
            raise InvalidInput(f"{agent} has no running session {replace} (see mailslot "
                               f"sessions {agent}); nothing was replaced")
        store.fence(agent, replace, session)
        others = [s for s in others if s["session"] != replace]
        notes.append(f"session {replace} of {agent} is replaced by {session}; its next "
                     "write is refused")
    if exclusive and others:
        names = ", ".join(f"{s['session']} ({s['program'] or '?'}, pid {s['pid']})"
                          for s in others)
        raise Refused(f"{agent} already has a running session: {names}; --exclusive "
                      "replaces one only when named: --replace-session ID")
    return notes


def check(store: Store, agent: str, session: str) -> None:
    by = store.fenced_by(agent, session)
    if by is not None:
        raise Refused(f"this session ({session}) of {agent} was replaced by session {by}; "
                      "nothing was written (start a new server to go on)")
