"""OpenCode and its fork Kilo Code CLI woken by mail, against the real programs offline.

The ``opencode`` and ``kilo`` wake methods run ``PROGRAM run [--attach URL] --session ID
NOTICE``. With ``attach`` (the open TUI's ``--port``), the turn runs in the TUI's own
server: the idle session on screen is woken, its history carried. Without it, a
headless turn continues the session (Kilo's: test_kilo.py).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable

import pytest

from . import hosts_kilo, hosts_more  # noqa: F401  (register opencode and kilo)
from .conftest import VERSIONS
from .harness import World, request_text, wait_for
from .test_checks import outside_framing

AGENT = "quinn"
Worlds = Callable[..., World]
FAMILY = [pytest.param(h, id=f"{h}-{VERSIONS[h]}") if h in VERSIONS
          else pytest.param(h, id=f"{h}-absent", marks=pytest.mark.skip(reason=f"{h} absent"))
          for h in ("opencode", "kilo")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _sessions(w: World, program: str) -> list[str]:
    listed = w.program(program, "session", "list", "--format", "json")
    return [s["id"] for s in json.loads(listed.stdout or "[]")]


def _configure(w: World, wake: dict[str, object]) -> None:
    w.mailbox.mkdir(mode=0o700, exist_ok=True)
    w.write_config({"agents": {AGENT: {
        "wake_on_mail": True, "cwd": str(w.project), **wake}}})


def _woken(w: World, sent: str) -> list[dict[str, object]]:
    """The model requests of the woken turn (not the host's own request for a title)."""
    return [r for r in w.provider.model_requests()
            if f"bob sent message {sent}" in (text := request_text(r))
            and "Generate a title" not in text]


@pytest.mark.timeout(300)  # two TUI turns; OpenCode's first takes 20 s offline
@pytest.mark.parametrize("program", FAMILY)
def test_wake_reaches_the_open_tui_session(world: Worlds, program: str) -> None:
    """``attach``: the woken turn runs in the open TUI's server, in its session, and
    the TUI shows it; no second session is made."""
    w = world(program, {"call": None})
    assert w.install(AGENT).returncode == 0
    # The person guards the TUI's server with a password, and gives the watcher the same
    # variable (Kilo's TUI refuses a client without one: 401).
    w.env[f"{program.upper()}_SERVER_PASSWORD"] = "pw-0123456789abcdef"
    port = _free_port()
    pane = w.pane("tui", [program, "--port", str(port)])
    pane.wait_screen("Ask anything", 120)  # keys typed while it still draws are lost
    pane.type("Hello there", timeout=120)
    (session,) = wait_for(lambda: _sessions(w, program), 120, "the TUI's session")
    wait_for(lambda: any("Hello there" in request_text(r) and r["reply"] == "text"
                         for r in w.provider.model_requests()), 120, "the first turn")
    _configure(w, {"wake_method": program, "session_id": session,
                   "attach": f"http://127.0.0.1:{port}"})
    sent = w.send("bob", AGENT, "please look", "WAKE-BODY")
    done = w.mailslot("watch", "--once")
    assert "wake_ok" in (w.mailbox / "log" / "events.jsonl").read_text(), done.stdout
    (woke,) = _woken(w, sent)
    assert "Hello there" in request_text(woke)  # the same session, its history carried
    assert woke["reply"] == "text"
    assert outside_framing([woke], "WAKE-BODY") == [] and "WAKE-BODY" not in request_text(woke)
    pane.wait_screen(f"bob sent message {sent[:20]}", 60)  # the open TUI shows the turn
    assert _sessions(w, program) == [session]


@pytest.mark.parametrize("version", [p for p in FAMILY if p.values[0] == "opencode"])
def test_opencode_wake_resumes_the_headless_session(world: Worlds, version: str) -> None:
    """Without ``attach``: ``opencode run --session ID NOTICE`` continues the session a
    headless run began."""
    w = world("opencode", {"call": None})
    assert w.install(AGENT).returncode == 0
    first = w.run("Hello there", "--format", "json")
    assert first.returncode == 0, first.stderr[-2000:]
    (session,) = {e["sessionID"] for e in map(json.loads, first.stdout.splitlines())
                  if "sessionID" in e}
    _configure(w, {"wake_method": "opencode", "session_id": session})
    sent = w.send("bob", AGENT, "please look", "WAKE-BODY")
    done = w.mailslot("watch", "--once")
    assert "wake_ok" in (w.mailbox / "log" / "events.jsonl").read_text(), done.stdout
    (woke,) = _woken(w, sent)
    assert "Hello there" in request_text(woke) and "WAKE-BODY" not in request_text(woke)
    assert _sessions(w, "opencode") == [session]
