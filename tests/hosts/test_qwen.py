"""Qwen Code's wake against the real program, offline: the ``qwen`` wake method
(``qwen --resume ID NOTICE``) continues a saved headless session, whose next request
carries the notice with the session's history and, from the installed prompt hook, the
mail itself, framed."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from . import hosts_more  # noqa: F401  (registers Qwen Code in the harness)
from .conftest import VERSIONS
from .harness import World, request_text
from .test_checks import outside_framing

AGENT = "quinn"
QWEN = VERSIONS.get("qwen", "absent")
SESSION = "5f0c1b2e-8a7d-4c1e-9b3a-2d4e6f8a0b1c"
pytestmark = pytest.mark.skipif(QWEN == "absent", reason="qwen is not installed")


@pytest.mark.parametrize("version", [pytest.param(QWEN, id=f"qwen-{QWEN}")])
def test_qwen_wake_resumes_the_saved_session(world: Callable[..., World], version: str
                                             ) -> None:
    w = world("qwen", {"call": None})
    assert w.install(AGENT, "--hooks", "--scope", "user").returncode == 0
    first = w.run("Hello there", "--session-id", SESSION)
    assert first.returncode == 0, first.stderr[-2000:]
    w.set_wake(AGENT, "qwen", session_id=SESSION)
    sent, woke = w.woken_by_mail(AGENT, "WAKE-BODY")
    text = request_text(woke[0])
    assert "Hello there" in text  # the same session, resumed
    # the prompt hook's mail, framed (Qwen escapes ">" in hook text as "&gt;")
    assert f"[mailslot] message {sent}" in text and "> WAKE-BODY" in text.replace("&gt;", ">")
    assert outside_framing(woke, "WAKE-BODY") == []


@pytest.mark.parametrize("version", [pytest.param(QWEN, id=f"qwen-{QWEN}")])
def test_qwen_wake_with_latest_resumes_the_last_interactive_session(
    world: Callable[..., World], version: str
) -> None:
    """``"latest"``: the session the SessionStart hook recorded in the TUI (under ``-p``
    Qwen runs no SessionStart hook), left idle and closed, is resumed with the notice."""
    w = world("qwen", {"call": None})
    assert w.install(AGENT, "--hooks", "--scope", "user").returncode == 0
    w.set_wake(AGENT, "qwen", session_id="latest")
    pane = w.pane("qwen", ["qwen"])
    try:
        pane.wait_screen("Type your message", 90)
        pane.type("Hello there")
        pane.wait_screen("FAKE-MODEL-DONE", 60)
    finally:
        pane.kill()  # the person closes the terminal
    latest = w.mailbox / "latest" / AGENT / "qwen"
    assert latest.exists()
    _, woke = w.woken_by_mail(AGENT, "LATEST-BODY")
    assert "Hello there" in request_text(woke[0])  # the TUI's session, resumed
    assert outside_framing(woke, "LATEST-BODY") == []
