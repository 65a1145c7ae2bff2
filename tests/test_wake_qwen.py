"""The ``qwen`` wake through a fake ``qwen`` on PATH: its exact argv, and Qwen Code's
approval-skipping flags refused. The real program: tests/hosts/test_qwen.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from mailslot import FileStore, Mailbox
from mailslot.core.errors import StoreError
from mailslot.wake.methods_by_name import method_for
from mailslot.wake.runner import WakeRunner
from wake_helpers import calls, configure, events, fake_host

Box = Callable[[str | None], Mailbox]
SESSION = "5f0c1b2e-8a7d-4c1e-9b3a-2d4e6f8a0b1c"


def test_qwen_resumes_the_session_with_the_notice_as_its_prompt(
        box: Box, root: Path, bin_dir: Path, tmp_path: Path) -> None:
    record = fake_host(bin_dir, "qwen")
    configure(root, {"quinn": {"wake_on_mail": True, "wake_method": "qwen",
                               "session_id": SESSION, "cwd": str(tmp_path)}})
    message = box("bob").send("quinn", "Private subject", "secret body")
    WakeRunner(FileStore(root)).run_agent("quinn")
    (call,) = calls(record)
    assert call["argv"][:2] == ["--resume", SESSION] and len(call["argv"]) == 3
    notice = call["argv"][2]
    assert notice.startswith("[mailslot] quinn") and message.id in notice
    assert "secret body" not in notice and "Private subject" not in notice
    assert call["cwd"] == str(tmp_path) and call["env"]["MAILSLOT_AGENT"] == "quinn"
    assert [e["event"] for e in events(root)][-1] == "wake_ok"


@pytest.mark.parametrize("argv", [
    ["qwen", "--yolo", "{id}"], ["qwen", "-y", "{id}"],
    ["qwen", "--approval-mode", "yolo", "{id}"], ["qwen", "--approval-mode=auto-edit", "{id}"],
    ["qwen", "--approval-mode", "auto", "{id}"],
])
def test_qwens_approval_skipping_flags_are_refused_in_a_command(argv: list[str]) -> None:
    with pytest.raises(StoreError, match="skip a host's permission prompts"):
        method_for("quinn", "command").from_config("quinn", {"command": argv})
