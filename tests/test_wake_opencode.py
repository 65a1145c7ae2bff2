"""The ``opencode`` and ``kilo`` wakes through a fake on PATH: the exact argv (with and
without ``attach``), a server address only on this machine, and no ``"latest"``. The
real programs are in tests/hosts/test_wake_opencode.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mailslot import FileStore, Mailbox
from mailslot.wake.runner import WakeRunner
from wake_helpers import calls, configure, events, fake_host

Box = Callable[[str | None], Mailbox]
SESSION = "ses_dca82d1fcffeGnsmX2yV4G1QZn"


def wake_once(box: Box, root: Path, config: dict[str, object]) -> str:
    configure(root, {"quinn": {"wake_on_mail": True, "wake_retry": {"attempts": 1},
                               **config}})
    message = box("bob").send("quinn", "Private subject", "secret body")
    WakeRunner(FileStore(root)).run_agent("quinn")
    return message.id


@pytest.mark.parametrize("program", ["opencode", "kilo"])
@pytest.mark.parametrize("attach", [None, "http://127.0.0.1:4096", "http://[::1]:80"])
def test_run_wakes_the_session_with_the_notice(box: Box, root: Path, bin_dir: Path,
                                               program: str, attach: str | None) -> None:
    record = fake_host(bin_dir, program)
    extra = {} if attach is None else {"attach": attach}
    sent = wake_once(box, root, {"wake_method": program, "session_id": SESSION,
                                 "cwd": str(root.parent), **extra})
    [call] = calls(record)
    notice = call["argv"][-1]
    assert notice.startswith(f"[mailslot] quinn, you have new mail: bob sent message {sent}")
    assert "secret" not in notice.lower()
    via = [] if attach is None else ["--attach", attach]
    assert call["argv"] == ["run", *via, "--session", SESSION, notice]
    assert events(root)[-1]["event"] == "wake_ok"


@pytest.mark.parametrize("attach", [
    "http://example.com:4096", "https://127.0.0.1:4096", "http://127.0.0.1:4096/x",
    "http://user@127.0.0.1:4096", "--auto", "http://127.0.0.1"])
def test_attach_is_only_a_server_on_this_machine(box: Box, root: Path, bin_dir: Path,
                                                 attach: str) -> None:
    record = fake_host(bin_dir, "opencode")
    wake_once(box, root, {"wake_method": "opencode", "session_id": SESSION,
                          "attach": attach})
    assert calls(record) == []
    assert "agents.quinn.attach is not a server on this machine" in events(root)[-1]["reason"]


def test_opencode_refuses_latest_since_no_hook_records_its_sessions(
        box: Box, root: Path, bin_dir: Path) -> None:
    record = fake_host(bin_dir, "opencode")
    wake_once(box, root, {"wake_method": "opencode", "session_id": "latest"})
    assert calls(record) == []
    reason = events(root)[-1]["reason"]
    assert 'agents.quinn.session_id cannot be "latest" for opencode: OpenCode' in reason
    assert "opencode session list" in reason


@pytest.mark.parametrize("flag", ["--auto", "--yolo", "--dangerously-skip-permissions"])
def test_a_command_template_cannot_approve_everything(flag: str) -> None:
    from mailslot.wake.methods import bypass_flag

    assert bypass_flag(["opencode", "run", flag, "{id}"]) == flag
