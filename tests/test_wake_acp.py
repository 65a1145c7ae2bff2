"""Wakes over the Agent Client Protocol (the ``cline`` method), through a fake agent on
PATH: what mailslot sends, that it approves nothing, and that every way the agent can
fail is one line. The real program is driven in tests/hosts/test_cline.py."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mailslot import FileStore, Mailbox
from mailslot.core.errors import StoreError
from mailslot.wake.methods import bypass_flag
from mailslot.wake.methods_by_name import method_for
from mailslot.wake.runner import WakeRunner
from wake_helpers import configure, events

Box = Callable[[str | None], Mailbox]
SESSION = "1796193132568_9zecp"

_AGENT = """#!{python}
# A fake ACP agent: records every line it reads; {behaviour}.
import json, sys
record = open({record!r}, "a")
def send(message):
    sys.stdout.write(json.dumps({{"jsonrpc": "2.0", **message}}) + "\\n")
    sys.stdout.flush()
def read():
    line = sys.stdin.readline()
    if not line:
        sys.exit(0)
    record.write(line); record.flush()
    return json.loads(line)
record.write(json.dumps({{"argv": sys.argv[1:]}}) + "\\n"); record.flush()
while True:
    request = read()
    method, rid = request.get("method"), request.get("id")
    if {behaviour!r} == "exit" and method == "session/load":
        sys.stderr.write("cline: session store is locked\\n")
        sys.exit(3)
    if {behaviour!r} == "refuse" and method == "session/load":
        send({{"id": rid, "error": {{"code": -32603, "message": "unknown session\\nline two"}}}})
        continue
    if method == "session/prompt":
        send({{"method": "session/update", "params": {{"update": {{"text": "history"}}}}}})
        send({{"id": 900, "method": "session/request_permission",
               "params": {{"toolCall": {{"title": "run_commands"}}, "options": [
                   {{"optionId": "allow", "kind": "allow_once"}}]}}}})
        read()  # the answer to the permission request
        send({{"id": 901, "method": "fs/read_text_file", "params": {{"path": "/etc/hosts"}}}})
        read()
    send({{"id": rid, "result": {{"stopReason": "end_turn"}} if method == "session/prompt"
           else {{}}}})
"""


def fake_agent(bin_dir: Path, behaviour: str = "answer") -> Path:
    record = bin_dir / "cline.jsonl"
    program = bin_dir / "cline"
    program.write_text(_AGENT.format(python=sys.executable, record=str(record),
                                     behaviour=behaviour))
    program.chmod(0o755)
    return record


def lines(record: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in record.read_text().splitlines() if line.strip()]


def wake(box: Box, root: Path, project: Path) -> str:
    configure(root, {"quinn": {"wake_on_mail": True, "wake_method": "cline",
                               "session_id": SESSION, "cwd": str(project)}})
    message = box("bob").send("quinn", "Private subject", "secret body")
    WakeRunner(FileStore(root)).run_agent("quinn")
    return message.id


def test_cline_wake_loads_the_session_prompts_the_notice_and_approves_nothing(
        box: Box, root: Path, bin_dir: Path, tmp_path: Path) -> None:
    record = fake_agent(bin_dir)
    mid = wake(box, root, tmp_path)
    got = lines(record)
    assert got[0] == {"argv": ["--acp"]}
    asked = [m for m in got[1:] if "method" in m]
    assert [m["method"] for m in asked] == ["initialize", "session/load", "session/prompt"]
    assert asked[1]["params"] == {"sessionId": SESSION, "cwd": str(tmp_path), "mcpServers": []}
    (part,) = asked[2]["params"]["prompt"]
    assert part["type"] == "text" and part["text"].startswith("[mailslot] quinn")
    assert mid in part["text"] and "secret body" not in part["text"]
    answers = {m["id"]: m for m in got[1:] if "method" not in m}
    assert answers[900]["result"] == {"outcome": {"outcome": "cancelled"}}  # never "allow"
    assert answers[901]["error"]["code"] == -32601  # no files offered
    assert [e["event"] for e in events(root)] == ["wake_queued", "wake_attempt", "wake_ok"]


@pytest.mark.parametrize(("behaviour", "said"), [
    ("refuse", "cline refused session/load: unknown session line two"),
    ("exit", "cline exited with status 3 before answering session/load; "
             "stderr: cline: session store is locked"),
])
def test_an_agent_that_fails_is_one_line_of_reason(
        box: Box, root: Path, bin_dir: Path, tmp_path: Path, behaviour: str, said: str) -> None:
    fake_agent(bin_dir, behaviour)
    wake(box, root, tmp_path)
    (failed,) = [e for e in events(root) if e["event"] == "wake_failed"]
    assert failed["reason"] == said


@pytest.mark.parametrize(("cfg", "said"), [
    ({"session_id": "latest", "cwd": "/p"}, 'cannot be "latest" for cline'),
    ({"session_id": SESSION}, "agents.quinn.cwd must be the absolute folder"),
    ({"session_id": SESSION, "cwd": "project"}, "agents.quinn.cwd must be the absolute folder"),
    ({"session_id": "--yolo", "cwd": "/p"}, "agents.quinn.session_id is not a session id"),
])
def test_cline_config_is_checked(cfg: dict[str, Any], said: str) -> None:
    with pytest.raises(StoreError, match=said):
        method_for("quinn", "cline").from_config("quinn", cfg)


@pytest.mark.parametrize("argv", [
    ["cline", "--yolo", "{id}"], ["cline", "-y", "{id}"], ["cline", "--zen", "{id}"],
    ["cline", "-z", "{id}"], ["cline", "--auto-approve", "true", "{id}"],
    ["cline", "--auto-approve=true", "{id}"],
])
def test_clines_approval_skipping_flags_are_refused_in_a_command(argv: list[str]) -> None:
    with pytest.raises(StoreError, match="skip a host's permission prompts"):
        method_for("quinn", "command").from_config("quinn", {"command": argv})


def test_auto_approve_false_is_no_bypass() -> None:
    assert bypass_flag(["cline", "--auto-approve", "false", "{id}"]) is None
