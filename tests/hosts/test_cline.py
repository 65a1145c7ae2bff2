"""Cline CLI's wake against the real program, offline: the ``cline`` wake method
continues a saved headless session over Cline's ACP mode (``cline --acp``,
``session/load``, ``session/prompt``), its next request carries the notice with the
session's history, and a tool the woken turn calls is not run (mailslot answers Cline's
permission request with no)."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from . import hosts_more  # noqa: F401  (registers Cline in the harness)
from .conftest import VERSIONS
from .harness import API_KEY, World, request_text
from .test_checks import outside_framing

AGENT = "quinn"
CLINE = VERSIONS.get("cline", "absent")
pytestmark = pytest.mark.skipif(CLINE == "absent", reason="cline is not installed")


@pytest.mark.parametrize("version", [pytest.param(CLINE, id=f"cline-{CLINE}")])
def test_cline_wake_prompts_the_saved_session_over_acp(
    world: Callable[..., World], version: str
) -> None:
    w = world("cline", {"call": None})
    assert w.install(AGENT).returncode == 0
    first = w.run("Hello there")
    assert first.returncode == 0, first.stderr[-2000:]
    listed = w.program("cline", "history", "--json")
    (session,) = [s["sessionId"] for s in json.loads(listed.stdout)]
    w.mailbox.mkdir(mode=0o700, exist_ok=True)
    w.write_config({"agents": {AGENT: {
        "wake_on_mail": True, "wake_method": "cline", "session_id": session,
        "cwd": str(w.project)}}})
    # ACP mode starts only signed in to a Cline account or with CLINE_API_KEY; a provider
    # of the person's own is named in the watcher's environment (docs/wake.md).
    w.env.update({"CLINE_PROVIDER": "openai-compatible", "CLINE_MODEL": "gpt-4.1",
                  "CLINE_API_KEY": API_KEY})
    ran = w.project / "WOKEN-TURN-RAN"
    w.provider.script({"call": {"tool": "run_commands",
                                "args": {"commands": [f"touch {ran}"]}}})
    before = len(w.provider.model_requests())
    sent = w.send("bob", AGENT, "please look", "WAKE-BODY")
    done = w.mailslot("watch", "--once")
    assert "wake_ok" in (w.mailbox / "log" / "events.jsonl").read_text(), done.stdout
    asked = w.provider.model_requests()[before:]
    woke = [r for r in asked if f"bob sent message {sent}" in request_text(r)]
    assert woke, [r["reply"] for r in asked]
    assert "Hello there" in request_text(woke[0])  # the same session, continued
    assert woke[0]["reply"] == "tool:run_commands"
    assert not ran.exists()  # the permission request was answered no
    assert len(asked) >= 2  # the turn went on after the refusal, to its end
    # Cline has no hooks of mailslot's: the notice alone reaches the model, no body.
    assert not any("WAKE-BODY" in request_text(r) for r in w.provider.requests())
    assert outside_framing(woke, "WAKE-BODY") == []
    listed = w.program("cline", "history", "--json")
    assert [s["sessionId"] for s in json.loads(listed.stdout)] == [session]
