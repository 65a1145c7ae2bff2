"""Every CLI command through the real entry point."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from conftest import Result

Cli = Callable[..., Result]


def send(cli: Cli, sender: str, to: str, subject: str = "hello", body: str = "hi") -> str:
    r = cli("--agent", sender, "send", "--to", to, "--subject", subject, "--body", body, "--json")
    assert r.code == 0, r.err
    return str(json.loads(r.out)["id"])


def test_send_inbox_read_reply_round_trip(cli: Cli) -> None:
    mid = send(cli, "claude", "gemini", "Initial handshake", "Hello there")
    listed = json.loads(cli("--agent", "gemini", "inbox", "--json").out)
    assert [m["id"] for m in listed] == [mid]
    assert listed[0]["state"] == "unread" and "body" not in listed[0]

    shown = cli("--agent", "gemini", "read", mid)
    assert shown.code == 0 and "Hello there" in shown.out and "state:    read" in shown.out

    r = cli("--agent", "gemini", "reply", mid, "--body", "Thanks", "--json")
    reply = json.loads(r.out)
    assert reply["to"] == ["claude"] and reply["in_reply_to"] == mid and reply["thread"] == mid
    assert reply["subject"] == "Re: Initial handshake"

    status = json.loads(cli("status", mid, "--json").out)
    assert status["recipients"][0]["state"] == "done"
    assert status["replies"] == [reply["id"]]


def test_reply_reads_body_from_stdin(cli: Cli) -> None:
    mid = send(cli, "claude", "gemini")
    r = cli("--agent", "gemini", "reply", mid, "--json", stdin="from stdin\n")
    assert r.code == 0
    assert json.loads(r.out)["body"] == "from stdin\n"


def test_mark_read_and_done(cli: Cli) -> None:
    a, b = send(cli, "claude", "gemini", "one"), send(cli, "claude", "gemini", "two")
    assert cli("--agent", "gemini", "mark-read", a).code == 0
    listed = json.loads(cli("--agent", "gemini", "inbox", "--json").out)
    states = {m["id"]: m["state"] for m in listed}
    assert states == {a: "read", b: "unread"}
    assert cli("--agent", "gemini", "done", a, b).code == 0
    assert json.loads(cli("--agent", "gemini", "inbox", "--json").out) == []
    everything = json.loads(cli("--agent", "gemini", "inbox", "--all", "--json").out)
    assert {m["state"] for m in everything} == {"done"}


def test_done_unknown_id_exits_1(cli: Cli) -> None:
    r = cli("--agent", "gemini", "done", "2026-01-01_000000.000000_x_to_gemini_s_abcdef")
    assert r.code == 1 and r.err.startswith("mailslot: no message")


def test_inbox_newest_first_and_limit(cli: Cli) -> None:
    ids = [send(cli, "claude", "gemini", f"m{i}") for i in range(5)]
    page = json.loads(cli("--agent", "gemini", "inbox", "--limit", "3", "--json").out)
    assert [m["id"] for m in page] == ids[::-1][:3]


def test_broadcast_and_retract(cli: Cli) -> None:
    r = cli("--agent", "claude", "broadcast", "--subject", "freeze", "--body", "x", "--json")
    bid = json.loads(r.out)["id"]
    assert [m["id"] for m in json.loads(cli("--agent", "gemini", "inbox", "--json").out)] == [bid]
    assert json.loads(cli("--agent", "claude", "inbox", "--json").out) == []
    assert cli("--agent", "gemini", "retract", bid).code == 1  # not the sender
    assert cli("--agent", "claude", "retract", bid).code == 0
    assert json.loads(cli("--agent", "codex", "inbox", "--json").out) == []


def test_who_lists_agents_with_unread_counts(cli: Cli, root: Path) -> None:
    send(cli, "claude", "gemini")
    send(cli, "claude", "gemini")
    agents = {a["name"]: a for a in json.loads(cli("who", "--json").out)}
    assert agents["gemini"]["unread"] == 2
    assert agents["claude"]["unread"] == 0 and "messages" in agents["claude"]["known_from"]


def test_doctor_reports_and_fixes(cli: Cli, root: Path) -> None:
    send(cli, "claude", "gemini")
    assert cli("doctor").code == 0
    (root / "agents").chmod(0o755)
    r = cli("doctor")
    assert r.code == 1 and "open to other users" in r.out
    assert cli("doctor", "--fix").code == 0
    assert cli("doctor").code == 0
