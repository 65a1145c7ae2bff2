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
from support import put_config

Box = Callable[[str | None], Mailbox]
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "import"


def exported(cli: Callable[..., Any]) -> list[dict[str, Any]]:
    result = cli("export")
    assert result.code == 0, result.err
    return [json.loads(line) for line in result.out.splitlines()]



def assert_round_trip(cli: Callable[..., Any], before: list[dict[str, Any]], tmp_path: Path,
                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``before`` (an export) imported into a fresh mailbox, twice, exports the same."""
    dump = tmp_path / "mail.jsonl"
    dump.write_text("".join(json.dumps(r) + "\n" for r in before))
    monkeypatch.setenv("MAILSLOT_DIR", str(tmp_path / "other"))
    report = imported_twice(cli, "jsonl", dump)
    assert report["unmapped"] == []
    assert exported(cli) == before

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
    assert_round_trip(cli, before, tmp_path, monkeypatch)


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
    assert result.code == 2 and result.out == ""
    assert result.err.count("\n") == 1 and "line 1" in result.err \
        and "'re_issue'" in result.err and "nothing was imported" in result.err
    assert box("gemini").inbox() == []  # all or nothing: the good line waits for a fixed file
    dump.write_text(dump.read_text().splitlines()[1] + "\n")
    assert cli("import", "jsonl", str(dump)).code == 0
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
    """The fixture is the layout github.com/forgeaura/deaddrop writes (see its README)."""
    report = imported_twice(cli, "dead-drop", FIXTURES / "dead-drop")
    rows = exported(cli)
    assert len(rows) == 4
    welcome = by_subject(rows)["Welcome"]
    assert (welcome["from"], welcome["to"]) == ("sarah", ["all"])  # to all: a broadcast
    ready = by_subject(rows)["Schema ready"]
    assert (ready["from"], ready["to"], ready["re_issue"]) == ("claude", ["antigravity"], "12")
    assert ready["states"] == {"antigravity": "read"}  # read: true
    assert ready["body"] == "See PR 12.\n\nThe migration is in `db/0012.sql`."
    assert ready["date"] == "2026-09-21T16:48:08+02:00"  # its own offset
    answers = [r for r in rows if r["subject"] == "Re: Schema ready"]
    assert len(answers) == 2  # the same second: Dead Drop's _3fa1 suffix keeps both
    assert all(r["states"] == {"claude": "unread"} for r in answers)
    config = FileStore(root).load_config()
    assert config["agents"] == {  # Dead Drop's wake settings mean the same in mailslot
        "antigravity": {"wake_on_mail": True, "wake_method": "agentapi",
                        "conversation_id": "4f9c2e7a-1b3d-4c5e-8f60-9a7b2c1d0e3f"},
        "claude": {"wake_on_mail": False, "wake_method": "unsupported"}}
    assert report["unmapped"] == ["dead-drop read_at (when a message was read) is not "
                                  "kept: the message arrives read"]


def test_dead_drop_settings_never_overwrite_and_the_rest_is_named(
        cli: Callable[..., Any], root: Path, tmp_path: Path) -> None:
    drop = tmp_path / "deaddrop"
    shutil.copytree(FIXTURES / "dead-drop", drop)
    config = json.loads((drop / ".config.json").read_text())
    config["agents"]["antigravity"]["agentapi_path"] = "/opt/evil/agentapi"
    config["agents"]["codex"] = {"wake_on_mail": True, "wake_method": "command"}
    config["agents"]["gemini"] = {"wake_on_mail": True, "wake_method": "agentapi",
                                  "conversation_id": ""}  # Dead Drop's default: none yet
    config["theme"] = "dark"
    (drop / ".config.json").write_text(json.dumps(config))
    mine = {"owner": "sarah", "agents": {"claude": {"wake_on_mail": "requested",
                                                    "wake_method": "command",
                                                    "command": ["/bin/true"]}}}
    put_config(FileStore(root), mine)
    result = cli("import", "dead-drop", str(drop))
    assert result.code == 0, result.err
    agents = FileStore(root).load_config()["agents"]
    assert agents["claude"] == mine["agents"]["claude"]  # the user's own: never changed
    assert agents["antigravity"] == {"wake_on_mail": True, "wake_method": "agentapi",
                                     "conversation_id": "4f9c2e7a-1b3d-4c5e-8f60-9a7b2c1d0e3f"}
    assert agents["codex"] == {}  # wakes by a command it does not name: refused
    assert agents["gemini"] == {}  # agentapi with no conversation: refused as config set
    lines = result.out.splitlines()
    assert lines[0].startswith("3 messages and 1 broadcast imported, 0 already here (")
    named = [line for line in lines if line.startswith("not mapped: ")]
    assert "not mapped: .config.json: agents.antigravity.agentapi_path not taken (mailslot " \
        "never runs a program another tool's file names; it finds the program itself, and " \
        "a wake method's `executable` names another)" in named
    assert "not mapped: .config.json: theme = \"dark\" has no mailslot setting; not " \
        "taken" in named
    assert "not mapped: agents.claude has wake settings already: kept (the source's " \
        "wake_method, wake_on_mail not taken)" in named
    assert any(line.startswith("not mapped: agents.gemini: the source's wake_method, "
                               "wake_on_mail not taken (") for line in named)
    assert any(line.startswith("not mapped: agents.codex: the source's wake_method, "
                               "wake_on_mail not taken (") for line in named)
    again = cli("import", "dead-drop", str(drop))
    assert again.out.splitlines()[0] == "0 messages imported, 4 already here"


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

    from mailslot.frontends.cli.parser import build_parser
    from mailslot.keep import importing

    commands = next(a for a in build_parser(only="import")._actions
                    if isinstance(a, argparse._SubParsersAction))
    fmt = next(a for a in commands.choices["import"]._actions if a.dest == "format")
    assert tuple(fmt.choices or ()) == importing.FORMATS


def test_an_export_holding_mailslot_notices_imports_whole(
        cli: Callable[..., Any], root: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli("--agent", "claude", "gate", "on").code == 0
    assert cli("--agent", "gemini", "join", "claude", "--note", "may I?").code == 0
    assert cli("--agent", "claude", "admit", "gemini").code == 0
    before = exported(cli)
    assert any(r["from"] == "mailslot" for r in before)  # the admission notice
    assert_round_trip(cli, before, tmp_path, monkeypatch)


def test_a_yaml_alias_bomb_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    """The 510-byte kind: nine levels of nine aliases, 387 million strings if expanded.
    Run with its address space capped at 1 GiB, so expanding it cannot take the machine."""
    import os
    import subprocess
    import sys

    drop = tmp_path / "drop"
    drop.mkdir()
    lines = ["---", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level, name in enumerate("bcdefgh"):
        below = "abcdefgh"[level]
        lines.append(f"{name}: &{name} [{','.join([f'*{below}'] * 9)}]")
    lines += [f"to: [{','.join(['*h'] * 9)}]", "from: claude", "subject: boom", "---", "",
              "boom"]
    (drop / "2026-09-21_164808_claude_to_all_boom.md").write_text("\n".join(lines) + "\n")
    assert len((drop / "2026-09-21_164808_claude_to_all_boom.md").read_bytes()) < 600
    script = ("import resource, sys\n"
              "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
              "from mailslot.frontends.cli.main import main\n"
              "sys.exit(main(sys.argv[1:]))\n")
    env = {**os.environ, "MAILSLOT_DIR": str(tmp_path / "box")}
    done = subprocess.run([sys.executable, "-c", script, "import", "dead-drop", str(drop)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.startswith("mailslot: error: ") and len(done.stderr.splitlines()) == 1
    assert "YAML alias" in done.stderr
    assert not (tmp_path / "box").exists()


def _deep_yaml(drop: Path) -> None:
    (drop / "2026-09-21_164808_claude_to_gemini_deep.md").write_text(
        "---\nfrom: claude\nto: gemini\nsubject: deep\nx: " + "[" * 20_000
        + "]" * 20_000 + "\n---\n\nbody\n")


def _export_line(cli: Callable[..., Any], **changes: Any) -> str:
    row = {"id": "2026-09-21_144808.123456_claude_to_gemini_7f3a9c0e",
           "date": "2026-09-21T14:48:08.123456+00:00", "from": "claude", "to": ["gemini"],
           "subject": "Plan", "body": "fine", "states": {"gemini": "read"}}
    return json.dumps({**row, **changes}) + "\n"


HOSTILE_LINES = {
    "nested too deep (RecursionError)":
        '{"id": "x", "in_reply_to": ' + "[" * 100_000 + "]" * 100_000 + "}\n",
    "a lone surrogate in the subject (UnicodeEncodeError)":
        '{"id": "2026-09-21_144808.123456_claude_to_gemini_7f3a9c0f", "date": "2026-09-21",'
        ' "from": "claude", "to": ["gemini"], "subject": "x\\udc80", "body": "b"}\n',
    "a lone surrogate in the body (UnicodeEncodeError)":
        '{"id": "2026-09-21_144808.123456_claude_to_gemini_7f3a9c0f", "date": "2026-09-21",'
        ' "from": "claude", "to": ["gemini"], "subject": "s", "body": "\\ud800"}\n',
    "states that are a list (TypeError)": "states",
    "in_reply_to that is an object (TypeError)": "in_reply_to",
    "to that is a number (TypeError)": "to",
}


@pytest.mark.parametrize("case", sorted(HOSTILE_LINES))
def test_a_hostile_export_line_is_one_line_and_writes_nothing(
        case: str, cli: Callable[..., Any], root: Path, tmp_path: Path) -> None:
    line = HOSTILE_LINES[case]
    wrong: dict[str, Any] = {"states": [1, 2], "in_reply_to": {"a": 1}, "to": 5}
    if line in wrong:
        line = _export_line(cli, id="2026-09-21_144808.123456_claude_to_gemini_7f3a9c0f",
                            **{line: wrong[line]})
    dump = tmp_path / "mail.jsonl"
    dump.write_text(_export_line(cli) + line)  # a good line first: it must not land
    result = cli("import", "jsonl", str(dump))
    assert result.code == 2, result.err
    assert result.err.startswith("mailslot: error: ") and len(result.err.splitlines()) == 1
    assert "nothing was imported" in result.err
    assert not root.exists()


def test_a_broken_database_is_one_line_and_writes_nothing(cli: Callable[..., Any],
                                                          root: Path,
                                                          tmp_path: Path) -> None:
    import sqlite3

    half = tmp_path / "storage.sqlite3"  # the messages table, none of the others
    with sqlite3.connect(half) as db:
        db.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, subject TEXT)")
        db.execute("INSERT INTO messages VALUES (1, 'hi')")
    db.close()
    result = cli("import", "mcp-agent-mail", str(half))
    assert result.code == 2, result.err
    assert result.err.startswith("mailslot: error: ") and len(result.err.splitlines()) == 1
    assert not root.exists()
    corrupt = tmp_path / "corrupt" / "storage.sqlite3"
    corrupt.parent.mkdir()
    data = bytearray((FIXTURES / "mcp-agent-mail" / "storage.sqlite3").read_bytes())
    for at in range(4096, len(data), 4096):  # every page but the first: garbage
        data[at + 8:at + 200] = b"\xff" * 192
    corrupt.write_bytes(bytes(data))
    result = cli("import", "mcp-agent-mail", str(corrupt))
    assert result.code == 2, result.err
    assert result.err.startswith("mailslot: error: ") and len(result.err.splitlines()) == 1
    assert not root.exists()


def test_deep_yaml_in_a_folder_source_is_one_line_and_writes_nothing(
        cli: Callable[..., Any], root: Path, tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    shutil.copytree(FIXTURES / "dead-drop", drop)
    _deep_yaml(drop)
    result = cli("import", "dead-drop", str(drop))
    assert result.code == 2, result.err
    assert result.err.startswith("mailslot: error: ") and len(result.err.splitlines()) == 1
    assert not root.exists()


def test_import_honours_max_body_bytes(cli: Callable[..., Any], root: Path,
                                       tmp_path: Path) -> None:
    root.mkdir(parents=True)
    (root / "config.json").write_text('{"max_body_bytes": 64}')
    dump = tmp_path / "mail.jsonl"
    dump.write_text(_export_line(cli, body="x" * 65))
    result = cli("import", "jsonl", str(dump))
    assert result.code == 2, result.err
    assert "the limit is 64" in result.err and len(result.err.splitlines()) == 1
    assert sorted(p.name for p in root.iterdir()) == ["config.json"]
    drop = tmp_path / "drop"
    shutil.copytree(FIXTURES / "dead-drop", drop)
    (drop / "2026-09-22_100000_claude_to_gemini_big.md").write_text(
        "---\nfrom: claude\nto: gemini\nsubject: big\n---\n\n" + "y" * 70_000 + "\n")
    result = cli("import", "dead-drop", str(drop))
    assert result.code == 2 and "max_body_bytes" in result.err, result.err
    assert sorted(p.name for p in root.iterdir()) == ["config.json"]


def test_a_subject_of_only_spaces_and_controls_becomes_no_subject(
        cli: Callable[..., Any], tmp_path: Path) -> None:
    drop = tmp_path / "drop"
    drop.mkdir()
    (drop / "2026-09-21_164808_claude_to_gemini_x.md").write_text(
        '---\nfrom: claude\nto: gemini\nsubject: "\\x01 \\t\\x7f"\n---\n\nhello\n')
    assert cli("import", "dead-drop", str(drop)).code == 0
    assert [r["subject"] for r in exported(cli)] == ["(no subject)"]


def test_an_older_dead_drop_config_wakes_its_app_in_the_named_conversation(
        cli: Callable[..., Any], root: Path, tmp_path: Path) -> None:
    """Dead Drop's README config: one top-level conversation id (and a program path)."""
    drop = tmp_path / "deaddrop"
    shutil.copytree(FIXTURES / "dead-drop", drop)
    (drop / ".config.json").write_text(json.dumps({
        "antigravity_conversation_id": "4f9c2e7a-1b3d", "agentapi_path": "/opt/agentapi"}))
    result = cli("import", "dead-drop", str(drop), "--json")
    assert result.code == 0, result.err
    assert FileStore(root).load_config()["agents"] == {"antigravity": {
        "wake_on_mail": True, "wake_method": "agentapi", "conversation_id": "4f9c2e7a-1b3d"}}
    assert any(u.startswith(".config.json: agentapi_path not taken")
               for u in json.loads(result.out)["unmapped"])
