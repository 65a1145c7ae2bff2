"""Kilo Code CLI against the real program, offline, registered by ``mailslot install
kilo``: it connects in either scope, its model's tool call delivers mail as the agent,
the person's permission rule (not a bypass flag) is what lets the call run headless, a
``kilo`` wake resumes the headless session with the notice, and a project's
``opencode.json`` makes Kilo speak as the agent that file names."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from . import hosts_kilo  # noqa: F401  (registers kilo in the harness)
from .conftest import VERSIONS
from .harness import World, merge_json, request_text

AGENT = "quinn"
KILO = VERSIONS.get("kilo", "absent")
pytestmark = pytest.mark.skipif(KILO == "absent", reason="kilo is not installed")
ONCE = [pytest.param(KILO, id=f"kilo-{KILO}")]


def _events(stdout: str) -> list[dict[str, Any]]:
    """``kilo run --format json``: one JSON event per line."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


def _session(stdout: str) -> str:
    (session,) = {e["sessionID"] for e in _events(stdout)}
    return str(session)


@pytest.mark.parametrize("scope", [pytest.param(s, id=f"kilo-{KILO}-{s}")
                                   for s in ("project", "user")])
def test_kilo_install_connects_and_a_tool_call_delivers(
    world: Callable[..., World], scope: str
) -> None:
    w = world("kilo")
    installed = w.install(AGENT, "--scope", scope)
    assert installed.returncode == 0, installed.stderr
    assert '"mailslot_*": "allow"' in installed.stdout + installed.stderr  # the note
    listed = w.health(r"mailslot\s.*connected", "kilo", "mcp", "list")
    assert re.search(r"mailslot\s.*connected", listed), listed
    done = w.run("Do the task.")
    assert done.returncode == 0, done.stderr[-2000:]
    first = w.provider.model_requests()[0]
    assert first["path"] == "/v1/chat/completions"
    tools = [t["function"]["name"] for t in first["body"]["tools"]]
    assert {"mailslot_send_message", "mailslot_reply", "mailslot_mark_done"} <= set(tools)
    assert first["reply"] == "tool:mailslot_send_message"
    assert re.fullmatch(r"ses_\w+", _session(done.stdout))
    (sent,) = w.inbox("observer")
    assert sent["from"] == AGENT


@pytest.mark.parametrize("version", ONCE)
def test_kilo_run_rejects_a_tool_its_rules_leave_at_ask(
    world: Callable[..., World], version: str
) -> None:
    """The user config's ``mailslot_*: allow`` is what lets the call run: a project rule
    putting it back to ``ask`` makes ``kilo run`` reject it (it never prompts)."""
    w = world("kilo")
    assert w.install(AGENT).returncode == 0
    merge_json(w.project / ".kilo" / "kilo.json",
                          {"permission": {"mailslot_send_message": "ask"}})
    done = w.run("Do the task.")
    assert done.returncode != 0
    assert "auto-rejected permission" in done.stderr
    assert w.provider.model_requests()[0]["reply"] == "tool:mailslot_send_message"
    assert w.inbox("observer") == []


@pytest.mark.timeout(600)  # a whole turn, then a resumed one: minutes on a loaded machine
@pytest.mark.parametrize("version", ONCE)
def test_kilo_wake_resumes_the_headless_session(
    world: Callable[..., World], version: str
) -> None:
    """The watcher's ``kilo`` wake (``kilo run --session ID NOTICE``) continues the
    session a headless run began: the notice reaches the model with turn one's history."""
    w = world("kilo", {"call": None})
    assert w.install(AGENT).returncode == 0
    first = w.run("Hello there")
    assert first.returncode == 0, first.stderr[-2000:]
    session = _session(first.stdout)
    w.set_wake(AGENT, "kilo", session_id=session)
    _, woke = w.woken_by_mail(AGENT, "WAKE-BODY")
    assert "Hello there" in request_text(woke[0])  # the same session, resumed
    assert woke[0]["reply"] == "text"
    assert "WAKE-BODY" not in request_text(woke[0])  # the notice carries no mail text
    shown = w.program("kilo", "session", "list")
    assert shown.stdout.count(session) == 1, shown.stdout  # no second session was made


@pytest.mark.parametrize("version", ONCE)
def test_kilo_speaks_as_the_agent_a_project_opencode_json_names(
    world: Callable[..., World], version: str
) -> None:
    """Kilo reads a project's ``opencode.json`` too: with ``install opencode --agent
    other`` there, a Kilo run in that project sends as ``other``."""
    w = world("kilo")
    assert w.install("other", host="opencode").returncode == 0
    done = w.run("Do the task.")
    assert done.returncode == 0, done.stderr[-2000:]
    (sent,) = w.inbox("observer")
    assert sent["from"] == "other"
    warned = w.install(AGENT)  # which is why `install kilo` warns about that file
    assert f"{w.project / 'opencode.json'} registers mailslot as agent 'other'" in warned.stderr
