"""Qwen Code's door, mailslot's side (the real program: tests/hosts/test_qwen_peer.py):
the checks a session's record must pass, the receipt's token, the bridge's token."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mailslot.hosts.qwen import bridge, cross_session
from mailslot.wake.line_socket import DoorError, UnknownShape


def record(folder: Path, **changes: object) -> int:
    """A record of this test process, as Qwen Code writes one (0600)."""
    pid = os.getpid()
    data = {"schemaVersion": 1, "pid": pid, "procStart": cross_session.proc_start(pid),
            "pidNs": cross_session.pid_ns(), "sessionId": "s-1", "kind": "tui",
            "qwenVersion": "0.24.4", **changes}
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = folder / f"{pid}.json"
    path.write_text(json.dumps(data))
    path.chmod(0o600)
    return pid


def test_a_record_passes_only_when_it_is_this_process_now(tmp_path: Path) -> None:
    pid = record(tmp_path)
    assert cross_session.checked_record(str(tmp_path), pid)["sessionId"] == "s-1"
    record(tmp_path, procStart="boot:1")  # a stale record of a reused pid
    with pytest.raises(DoorError, match="stale"):
        cross_session.checked_record(str(tmp_path), pid)
    record(tmp_path, pidNs=1)
    with pytest.raises(DoorError, match="pid namespace"):
        cross_session.checked_record(str(tmp_path), pid)
    record(tmp_path, schemaVersion=2)
    with pytest.raises(UnknownShape, match="schemaVersion 2"):
        cross_session.checked_record(str(tmp_path), pid)
    record(tmp_path)
    (tmp_path / f"{pid}.json").chmod(0o644)  # others may read its token
    with pytest.raises(DoorError):
        cross_session.checked_record(str(tmp_path), pid)


def test_a_receipt_counts_only_with_the_token_sent_with_the_notice() -> None:
    auth = json.dumps({"msgV": 1, "type": "auth", "token": "ours"})
    said = json.dumps({"msgV": 1, "type": "control", "action": "delivery_status",
                       "status": "delivered", "origMsgId": "m1"})
    assert cross_session.receipt_status([auth, said], "m1", "ours") == "delivered"
    with pytest.raises(DoorError, match="without our token"):
        cross_session.receipt_status([said], "m1", "ours")
    with pytest.raises(DoorError, match="without our token"):
        cross_session.receipt_status([auth.replace("ours", "theirs"), said], "m1", "ours")
    with pytest.raises(UnknownShape):
        cross_session.receipt_status([auth, said.replace("delivery_status", "x")], "m1",
                                     "ours")


def test_the_bridge_drops_a_connection_without_its_records_token(tmp_path: Path) -> None:
    shapes = bridge.bridge()
    env = {"HOME": str(tmp_path), "XDG_RUNTIME_DIR": ""}
    (tmp_path / ".qwen" / "sessions").mkdir(parents=True, mode=0o700)
    path = shapes.announce("codex", str(tmp_path / "s.sock"), "/box", env)
    written = json.loads(Path(path).read_text())
    assert written["kind"] == "external" and written["ipcToken"] == shapes.token
    assert os.stat(path).st_mode & 0o077 == 0
    frame = json.dumps({"msgV": 1, "msgId": "m1", "type": "user", "from": "/x.sock",
                        "message": {"role": "user", "content": "hi"}})
    auth = json.dumps({"msgV": 1, "type": "auth", "token": shapes.token})
    assert shapes.admit([auth, frame]) == [frame]
    for first in ([frame], [json.dumps({"type": "auth", "token": "0" * 64}), frame], []):
        with pytest.raises(DoorError, match="without this record's token"):
            shapes.admit(first)
    assert shapes.bridges("/box", env) == [("codex", os.getpid())]
