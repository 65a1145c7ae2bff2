"""``name@session``, proved against the real Claude Code: two sessions of one
agent in one folder, mail sent to one of them, and only that session's model shown it.

Each session is a real ``claude -p`` run with its own ``--session-id``; its hooks record
it as an instance of the agent. Mail for the instance ``worker@<first 8 of A>`` is then
sent, and both sessions are resumed: the hooks put it into session A's requests and
never into session B's, while plain mail reaches both.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable

import pytest

from .conftest import VERSIONS
from .harness import World, request_text

AGENT = "worker"
FOR_A = "INSTANCE-9c1e: for session A only"
FOR_ALL = "PLAIN-4b7d: for every session"


def _resumed(w: World, session: str, flag: str) -> str:
    """Run a turn in ``session`` (started with ``flag``); what its model was shown."""
    before = len(w.provider.model_requests())
    done = w.run("Go on.", flag, session)
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    return "\n".join(request_text(r) for r in w.provider.model_requests()[before:])


@pytest.mark.parametrize("name", [pytest.param("claude", id=f"claude-{VERSIONS['claude']}")])
def test_mail_to_an_instance_reaches_only_that_session(
    world: Callable[..., World], name: str
) -> None:
    w = world(name, {"call": None})
    assert w.install(AGENT, "--hooks").returncode == 0
    w.mailslot("init")  # hooks record nothing before there is a mailbox
    a, b = str(uuid.uuid4()), str(uuid.uuid4())
    _resumed(w, a, "--session-id")
    _resumed(w, b, "--session-id")
    listed = json.loads(w.mailslot("--json", "sessions", AGENT).stdout)
    hooks = {s["session"]: s for s in listed if s["kind"] == "hook"}
    assert {a, b} <= set(hooks) and hooks[a]["program"] == "claude" and hooks[a]["online"]
    who = json.loads(w.mailslot("--json", "who").stdout)
    shown = next(x["instances"] for x in who if x["name"] == AGENT)
    assert f"{a[:8]} (claude)" in shown and f"{b[:8]} (claude)" in shown

    sent = w.mailslot("--agent", "boss", "--json", "send", "--to", f"{AGENT}@{a[:8]}",
                      "--subject", FOR_A, "--new", "--body", "only you")
    assert json.loads(sent.stdout)["instance"] == a
    w.send("boss", AGENT, FOR_ALL, "everyone")

    seen_b = _resumed(w, b, "--resume")
    seen_a = _resumed(w, a, "--resume")
    assert FOR_ALL in seen_b and FOR_A not in seen_b
    assert FOR_A in seen_a and FOR_ALL in seen_a
    gone = w.mailslot("--agent", "boss", "send", "--to", f"{AGENT}@0000", "--subject", "s",
                      "--body", "x", check=False)
    assert gone.returncode == 1 and "has no running session 0000" in gone.stderr
