"""Sessions and fencing: one agent, several running servers, and replacing one safely.

API (issue 12)::

    new_session_id() -> str        a short random id, given to each ``serve`` at start
    sessions(store, agent, now)    the servers of ``agent`` (or of everyone): session id,
                                   program, pid, started, online, replaced by
    start(store, agent, session, *, exclusive, replace) -> list[str]
                                   before a server serves: with ``exclusive`` it refuses
                                   while another session of the agent is online, unless
                                   that session's exact id is given as ``replace``, which
                                   fences it; returns notes for the user
    check(store, agent, session)   ``Refused`` for a fenced session's write, naming the
                                   session that replaced it

Presence (:mod:`mailslot.presence`) records each server with its session id; a fence is
kept by the store, so the replaced server learns it at its next write whichever
process, or machine, it runs on.
"""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

from .errors import InvalidInput, Refused
from .presence import hostname, is_online
from .results import Session
from .store import Store


def new_session_id() -> str:
    return os.urandom(4).hex()


def sessions(store: Store, agent: str | None, now: datetime) -> list[dict[str, Any]]:
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
                      "replaced_by": fenced})
    return sorted(found, key=lambda s: (s["agent"], s["started"]))


def start(store: Store, agent: str, session: str, *, exclusive: bool,
          replace: str | None, now: datetime) -> list[str]:
    others = [s for s in sessions(store, agent, now)
              if s["online"] and s["session"] != session and not s["replaced_by"]]
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
