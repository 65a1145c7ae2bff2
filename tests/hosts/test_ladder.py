"""The delivery ladder against the real hosts: mail the session-start hook showed the
model is marked surfaced for that very session, and a hook command whose output the
host never gets (it fails and drops it, or it times out) leaves the mail unsurfaced."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from .conftest import VERSIONS
from .harness import World, request_text

LADDER = ("claude", "codex")
"""Hosts whose session-start hook input names the session the model runs in."""


def _status(w: World, message_id: str) -> dict[str, Any]:
    done = w.mailslot("--agent", "bob", "status", message_id, "--json")
    recipients: list[dict[str, Any]] = json.loads(done.stdout)["recipients"]
    return recipients[0]


def _hook_sessions(w: World) -> set[str]:
    """The host sessions whose hooks ran, as ``mailslot sessions`` lists them."""
    done = w.mailslot("--agent", "alice", "sessions", "--json")
    return {str(s.get("session")) for s in json.loads(done.stdout)}


@pytest.mark.parametrize("name", [pytest.param(h, id=f"{h}-{VERSIONS[h]}")
                                  for h in LADDER if h in VERSIONS])
def test_mail_shown_at_session_start_is_surfaced_for_that_session(
        world: Callable[..., World], name: str) -> None:
    w = world(name, {"call": None})
    w.install("alice", "--hooks")
    sent = w.send("bob", "alice", "LADDER-1: schema", "ready")
    assert _status(w, sent)["rung"] == "stored"
    done = w.run("Please do the task.")
    assert done.returncode == 0, done.stderr[-2000:]
    assert sent in request_text(w.provider.model_requests()[0])  # the model was shown it
    ladder = _status(w, sent)  # seen, too, once the stop hook read the host's record
    assert ladder["rung"] in ("surfaced", "seen") and ladder["state"] == "unread", ladder
    surfaced = ladder["surfaced"]
    assert (surfaced["host"], surfaced["how"]) == (name, "start")
    assert surfaced["session"] in _hook_sessions(w)  # the session the host ran


def _wrap_claude_hook(w: World, wrap: Callable[[str], str], timeout: int | None) -> None:
    """Rewrite the session-start command ``mailslot install`` put in the project's
    ``.claude/settings.local.json``, as a user's own wrapper would, and keep no other
    hook (the prompt hook would show the mail next, rightly surfacing it)."""
    path = w.project / ".claude" / "settings.local.json"
    settings = json.loads(path.read_text(encoding="utf-8"))
    settings["hooks"] = {"SessionStart": settings["hooks"]["SessionStart"]}
    for group in settings["hooks"]["SessionStart"]:
        for entry in group["hooks"]:
            if "mailslot" in entry["command"]:
                entry["command"] = wrap(entry["command"])
                if timeout is not None:
                    entry["timeout"] = timeout
    path.write_text(json.dumps(settings), encoding="utf-8")


@pytest.mark.skipif("claude" not in VERSIONS, reason="Claude Code is not installed")
@pytest.mark.parametrize("case", ["fails", "times-out"])
def test_a_hook_whose_output_the_host_never_took_leaves_mail_unsurfaced(
        world: Callable[..., World], case: str) -> None:
    """``fails``: the wrapper sends mailslot's output nowhere and exits 1 (the host drops
    a failed hook's output); ``times-out``: the host's timeout ends the hook first."""
    w = world("claude", {"call": None})
    w.install("alice", "--hooks")
    if case == "fails":
        _wrap_claude_hook(w, lambda c: f"{c} >/dev/null; exit 1", None)
    else:
        _wrap_claude_hook(w, lambda c: f"sleep 20; {c}", 1)
    sent = w.send("bob", "alice", "LADDER-2: schema", "ready")
    done = w.run("Please do the task.")
    assert done.returncode == 0, done.stderr[-2000:]
    assert not any(sent in request_text(r) for r in w.provider.model_requests())
    ladder = _status(w, sent)
    assert ladder["rung"] == "stored" and ladder["surfaced"] is None, ladder
