"""Mail mid-turn, proved against the real hosts: a post-tool hook puts directed mail that
arrived during a tool call into the very next model request of the same turn.

The model's one tool call is ``send_message`` to the agent itself, so a message lands in
the agent's inbox while the tool runs, strictly between the request that asked for the
call and the one that carries its result: the post-tool hook that runs in between is the
only way that mail can reach the second request.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from . import hosts_more  # noqa: F401  (registers qwen and pi in the harness)
from .conftest import VERSIONS
from .harness import World, request_text

AGENT = "worker"
SUBJECT = "MIDTURN-7f3a: the schema changed"
MIDTURN = ("claude", "codex", "gemini", "copilot", "qwen", "pi")
"""The hosts with a post-tool hook that adds context."""


def _script() -> dict[str, object]:
    return {"call": {"tool": "send_message",
                     "args": {"to": AGENT, "subject": SUBJECT, "body": "Line one.\nLine two."}}}


@pytest.mark.parametrize("name", [pytest.param(h, id=f"{h}-{VERSIONS[h]}") for h in MIDTURN])
def test_mail_arriving_during_a_tool_call_reaches_the_next_request(
    world: Callable[..., World], name: str
) -> None:
    w = world(name, _script())
    assert w.install(AGENT, "--hooks").returncode == 0
    done = w.run("Do the task.")
    assert done.returncode == 0, done.stderr[-2000:]
    (mail,) = [m for m in w.inbox(AGENT) if m["subject"] == SUBJECT]
    asked = w.provider.model_requests()
    calls = [i for i, r in enumerate(asked)  # not a ToolSearch that loads it first
             if r["reply"].startswith("tool:") and "send_message" in r["reply"]]
    assert calls, "the model never called send_message"
    before, after = asked[: calls[0] + 1], asked[calls[0] + 1:]
    assert after, "no request followed the tool call"
    assert not any(mail["id"] in request_text(r) for r in before)  # it came mid-turn
    shown = request_text(after[0])
    # The hook's injection, not the tool's own result (which names the id and subject):
    assert f"[mailslot] 1 message for {AGENT} not shown before in this session" in shown
    assert f"[mailslot] message {mail['id']}" in shown
    assert re.search(r"^(> |&gt; )Line two\.$", shown, re.M), "the body, quoted"
    assert "untrusted data" in shown

