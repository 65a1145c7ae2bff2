"""Import through the real CLI: each format on its fixture (tests/fixtures/import, the
pip-installable peers' made by the real packages with the make_*.py scripts there),
twice (the second adds nothing), with what could not be mapped reported; and a mailslot
export imported into an empty mailbox gives the same messages and states."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mailslot import FileStore, Mailbox

Box = Callable[[str | None], Mailbox]
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "import"


def exported(cli: Callable[..., Any]) -> list[dict[str, Any]]:
    result = cli("export")
    assert result.code == 0, result.err
    return [json.loads(line) for line in result.out.splitlines()]


def imported_twice(cli: Callable[..., Any], fmt: str, path: Path) -> dict[str, Any]:
    first = cli("import", fmt, str(path), "--json")
    assert first.code == 0, first.err
    again = cli("import", fmt, str(path), "--json")
    assert again.code == 0, again.err
    assert json.loads(again.out)["added"] == {}  # idempotent
    report: dict[str, Any] = json.loads(first.out)
    return report


def by_subject(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["subject"]: r for r in rows}


def test_an_export_imported_into_an_empty_mailbox_is_the_same(
        cli: Callable[..., Any], box: Box, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    first = box("claude").send(["gemini", "codex"], "Plan", "line one\nline two")
    box("gemini").reply(first.id, "agreed")
    news = box("sarah").broadcast("Freeze", "no deploys")
    box("codex").read(news.id)
    old = box("sarah").broadcast("Old", "gone")
    box("sarah").retract(old.id)
    before = exported(cli)
    dump = tmp_path / "mail.jsonl"
    dump.write_text("".join(json.dumps(r) + "\n" for r in before))
    monkeypatch.setenv("MAILSLOT_DIR", str(tmp_path / "other"))
    report = imported_twice(cli, "jsonl", dump)
    assert report["unmapped"] == []
    assert exported(cli) == before


def test_a_number_as_re_issue_is_refused_not_written(cli: Callable[..., Any], box: Box,
                                                      tmp_path: Path) -> None:
    row = {"id": "2026-09-21_144808.123456_claude_to_gemini_7f3a9c2e",
           "date": "2026-09-21T14:48:08+00:00", "from": "claude", "to": ["gemini"],
           "subject": "s", "body": "b", "states": {"gemini": "unread"}}
    dump = tmp_path / "mail.jsonl"
    dump.write_text(json.dumps({**row, "re_issue": 42}) + "\n"
                    + json.dumps({**row, "id": row["id"][:-8] + "00000001",
                                  "re_issue": "042"}) + "\n")
    result = cli("import", "jsonl", str(dump))
    assert result.code == 0, result.err
    assert "line 1" in result.out + result.err and "re_issue must be text" in \
        result.out + result.err
    assert [i.message.re_issue for i in box("gemini").inbox()] == ["042"]
    assert cli("doctor", "--deep").code == 0


def test_letterbox(cli: Callable[..., Any]) -> None:
    report = imported_twice(cli, "letterbox", FIXTURES / "letterbox")
    rows = by_subject(exported(cli))
    assert len(rows) == 3
    draft = rows["Schema draft is in PR 12; please review."]
    review = rows["Reviewed: two nits, otherwise fine."]
    merged = rows["Nits fixed. Merging at 18:00."]
    assert (draft["from"], draft["to"], draft["states"]) == ("gemini", ["claude"],
                                                             {"claude": "read"})
    assert review["in_reply_to"] == draft["id"] and merged["thread"] == draft["id"]
    assert merged["states"] == {"claude": "unread"}  # above claude's read mark
    assert draft["date"] == "2026-09-21T14:48:00.123456+00:00"
    assert any("instance_id" in u for u in report["unmapped"])


def test_agent_mailbox(cli: Callable[..., Any]) -> None:
    report = imported_twice(cli, "agent-mailbox", FIXTURES / "agent-mailbox" / "home")
    rows = by_subject(exported(cli))
    assert rows["Schema ready"]["to"] == ["gemini"] and rows["Schema ready"]["from"] == "claude"
    assert rows["Re: Schema ready"]["in_reply_to"] == rows["Schema ready"]["id"]
    assert rows["Freeze"]["to"] == ["all"]  # to the whole project: a broadcast
    assert rows["From the owner"]["from"] == "owner"
    assert any("no read state" in u for u in report["unmapped"])


def test_mcp_agent_mail(cli: Callable[..., Any]) -> None:
    report = imported_twice(cli, "mcp-agent-mail", FIXTURES / "mcp-agent-mail")
    rows = by_subject(exported(cli))
    ready = rows["Schema ready"]
    assert ready["from"] == "greencastle" and ready["to"] == ["bluelake", "redstone"]
    assert ready["states"] == {"bluelake": "unread", "redstone": "read"}
    assert ready["expect_reply"] is True and ready["body"] == "See **PR 12**."
    assert rows["Re: Schema ready"]["thread"] == ready["id"]
    assert any("cc recipients" in u for u in report["unmapped"])


def test_dead_drop(cli: Callable[..., Any], root: Path) -> None:
    report = imported_twice(cli, "dead-drop", FIXTURES / "dead-drop")
    rows = by_subject(exported(cli))
    welcome = rows["Welcome"]
    assert welcome["from"] == "sarah-smith"
    assert welcome["states"] == {"gemini": "read", "claude": "unread"}
    assert rows["Schema ready"]["body"] == "See PR 12.\n\nThe migration is in `db/0012.sql`."
    assert rows["Re: Schema ready"]["in_reply_to"] == rows["Schema ready"]["id"]
    assert rows["Re: Schema ready"]["states"] == {"claude": "done"}
    assert rows["Re: Schema ready"]["date"] == "2026-09-21T17:02:00+02:00"  # its own offset
    config = FileStore(root).load_config()
    assert set(config["agents"]) == {"claude", "gemini", "sarah-smith"}
    assert config["agents"]["claude"] == {}  # a foreign setting never becomes mailslot's
    assert any("priority" in u for u in report["unmapped"])
    assert any("'Sarah Smith' became 'sarah-smith'" in u for u in report["unmapped"])


def test_repo_mailbox(cli: Callable[..., Any]) -> None:
    imported_twice(cli, "repo-mailbox", FIXTURES / "repo-mailbox")
    rows = by_subject(exported(cli))
    assert rows["Need a /health endpoint"]["states"] == {"api": "read"}  # in the seen set
    assert rows["CORS for staging"]["states"] == {"api": "unread"}
    assert rows["Hello"]["states"] == {"api": "done"}  # archived
    live = rows["/health is live"]
    assert live["in_reply_to"] == rows["Need a /health endpoint"]["id"]
    assert live["to"] == ["web"]


def test_a2a_mailbox(cli: Callable[..., Any], root: Path) -> None:
    report = imported_twice(cli, "a2a-mailbox", FIXTURES / "a2a-mailbox")
    rows = by_subject(exported(cli))
    assert rows["Plan"]["states"] == {"codex": "done"}  # acknowledged
    assert rows["Re: Plan"]["states"] == {"claude": "read"}  # in the history
    assert rows["Re: Plan"]["in_reply_to"] == rows["Plan"]["id"]
    assert rows["Tests are red"]["states"] == {"codex": "unread"}  # still queued
    assert set(FileStore(root).load_config()["agents"]) == {"claude", "codex"}
    assert any("cwd" in u for u in report["unmapped"])


def test_bad_sources_are_one_line_and_write_nothing(cli: Callable[..., Any], root: Path,
                                                    tmp_path: Path) -> None:
    missing = cli("import", "letterbox", str(tmp_path / "nowhere"))
    assert missing.code == 2 and len(missing.err.splitlines()) == 1
    not_db = tmp_path / "storage.sqlite3"
    not_db.write_text("hello")
    assert cli("import", "mcp-agent-mail", str(not_db)).code == 2
    assert not root.exists()
    copy = tmp_path / "lb"
    shutil.copytree(FIXTURES / "letterbox", copy)
    next((copy / "channels" / "schema-review").glob("msg-*.json")).write_text("{broken")
    partial = cli("import", "letterbox", str(copy))
    assert partial.code == 0 and "unreadable" in partial.out


def test_mail_imported_into_a_gated_inbox_stays_readable(cli: Callable[..., Any],
                                                        box: Box) -> None:
    assert cli("--agent", "claude", "gate", "on").code == 0
    imported_twice(cli, "letterbox", FIXTURES / "letterbox")
    inbox = cli("--agent", "claude", "inbox", "--all", "--json")
    assert inbox.code == 0, inbox.err
    subjects = {m["subject"] for m in json.loads(inbox.out)}
    assert "Nits fixed. Merging at 18:00." in subjects


def test_the_cli_offers_exactly_the_formats_the_importer_reads() -> None:
    """The CLI lists the formats itself (importing the importer would slow every command),
    so its list must not drift from the importer's."""
    import argparse

    from mailslot import importing
    from mailslot.cli import build_parser

    commands = next(a for a in build_parser(only="import")._actions
                    if isinstance(a, argparse._SubParsersAction))
    fmt = next(a for a in commands.choices["import"]._actions if a.dest == "format")
    assert tuple(fmt.choices or ()) == importing.FORMATS
