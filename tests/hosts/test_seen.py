"""The ladder's ``seen`` rung against the real hosts: mail a hook showed is ``seen``
exactly when the provider's request held its fingerprint (the host's own record of
the session says so, read at the session's next hook); a hook wrapped to throw its
output away leaves the mail unseen, and the next hook shows it again."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from .conftest import VERSIONS
from .harness import World, request_text

SEEN = ("claude", "codex", "gemini")
"""The hosts whose record of a session mailslot reads (docs/hosts.md)."""
AGENT = "alice"
MARK = re.compile(r"mslt-[0-9a-f]{12}")
HOOK_FILES = {"claude": ".claude/settings.local.json", "codex": ".codex/hooks.json",
              "gemini": ".gemini/settings.json"}


def _script() -> dict[str, object]:
    """One tool call (its post-tool hook is the session's next hook after the first
    answer), then the answer."""
    return {"call": {"tool": "send_message",
                     "args": {"to": "observer", "subject": "noted", "body": "on it"}}}


def _ladder(w: World, message_id: str) -> dict[str, Any]:
    done = w.mailslot("--agent", "bob", "status", message_id, "--json")
    recipients: list[dict[str, Any]] = json.loads(done.stdout)["recipients"]
    return recipients[0]


def _marks(w: World) -> set[str]:
    """Every fingerprint a showing of the session carried (its ``surfaced`` receipts)."""
    events = (w.mailbox / "log" / "events.jsonl").read_text(encoding="utf-8").splitlines()
    return {str(e["mark"]) for e in map(json.loads, events)
            if e.get("event") == "surfaced" and e.get("mark")}


@pytest.mark.parametrize("name", [pytest.param(h, id=f"{h}-{VERSIONS[h]}")
                                  for h in SEEN if h in VERSIONS])
def test_mail_is_seen_exactly_when_the_request_held_its_fingerprint(
        world: Callable[..., World], name: str) -> None:
    w = world(name, _script())
    w.install(AGENT, "--hooks")
    sent = w.send("bob", AGENT, "SEEN-1: schema", "ready")
    done = w.run("Please do the task.")
    assert done.returncode == 0, done.stderr[-2000:]
    (mark,) = _marks(w)
    asked = [request_text(r) for r in w.provider.model_requests()]
    assert mark in asked[0] and sent in asked[0]  # the provider got the fingerprint
    ladder = _ladder(w, sent)
    assert ladder["rung"] == "seen" and ladder["state"] == "unread", ladder
    assert (ladder["seen"]["host"], ladder["seen"]["how"]) == (name, "start")
    assert ladder["surfaced"]["again"] == 0


def _wrap_session_start(w: World, name: str) -> None:
    """A wrapper of the person's own around the session-start hook that reads mailslot's
    output and throws it away (so mailslot wrote into a pipe: surfaced)."""
    path = w.project / HOOK_FILES[name]
    settings = json.loads(path.read_text(encoding="utf-8"))

    def wrap(node: object) -> None:
        if isinstance(node, dict):
            command = node.get("command")
            if isinstance(command, str) and "mailslot" in command \
                    and "session-start" in command:
                node["command"] = f"{command} | cat >/dev/null"
            for value in node.values():
                wrap(value)
        elif isinstance(node, list):
            for value in node:
                wrap(value)

    wrap(settings)
    assert "| cat >/dev/null" in json.dumps(settings)
    path.write_text(json.dumps(settings), encoding="utf-8")


@pytest.mark.parametrize("name", [pytest.param(h, id=f"{h}-{VERSIONS[h]}")
                                  for h in SEEN if h in VERSIONS])
def test_an_injection_thrown_away_is_unseen_and_shown_again(
        world: Callable[..., World], name: str) -> None:
    w = world(name, _script())
    w.mailslot("install", name, "--agent", AGENT, "--hooks")
    _wrap_session_start(w, name)
    w.host.after_install(w)  # then what the person does: Codex trusts the hooks as they are
    sent = w.send("bob", AGENT, "SEEN-2: schema", "ready")
    done = w.run("Please do the task.")
    assert done.returncode == 0, done.stderr[-2000:]
    asked = [request_text(r) for r in w.provider.model_requests()]
    assert sent not in asked[0]  # the wrapper threw the session start's text away
    again = [text for text in asked if sent in text]
    assert again and "shown again" in again[0]  # the next hook showed it again
    first, second = sorted(_marks(w), key=lambda m: asked[-1].find(m))
    assert first not in "".join(asked) and second in again[0]
    ladder = _ladder(w, sent)
    assert (ladder["surfaced"]["times"], ladder["surfaced"]["again"],
            ladder["surfaced"]["missed"]) == (2, 1, 1), ladder
    assert ladder["rung"] == "seen" and ladder["seen"]["how"] == "midturn", ladder
