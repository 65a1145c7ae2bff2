"""``mailslot import mbox|maildir`` reads exactly what ``mailslot export --format
mbox|maildir`` writes: the same messages, ids and states in a fresh mailbox, and a second
import adds nothing."""

from __future__ import annotations

import json
import mailbox
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mailslot import Mailbox

Box = Callable[[str | None], Mailbox]
BODIES = {
    "From lines": "From the start of a line\nand From inside\n>From quoted already",
    "spaces": "trailing spaces   \n\ttab first\n\n\nthree blank lines before",
    "long line": "word " * 600,
    "unicode": "ünïcode ✓ 日本語 \u2028 a line separator",
    "frontmatter": "---\nnot: a header\n---",
    "empty": "",
    "one newline": "\n",
}


def exported(cli: Callable[..., Any]) -> list[dict[str, Any]]:
    result = cli("export")
    assert result.code == 0, result.err
    return [json.loads(line) for line in result.out.split("\n") if line]


def every_kind(box: Box) -> None:
    """Mail of every shape an export holds: bodies an e-mail must encode, a long
    non-ASCII subject, a reply in a thread, every optional field, each state, a
    broadcast served and one retracted."""
    for subject, body in BODIES.items():
        box("claude").send(["gemini"], subject, body)
    long = box("claude").send(["gemini", "codex"], "Ünïcode subject " + "long " * 35,
                              "body", re_issue="owner/repo#12", expect_reply=True,
                              wake=True, notify_when="read")
    answer = box("gemini").reply(long.id, "agreed")
    box("claude").read(answer.id)
    box("gemini").done([long.id])
    news = box("sarah").broadcast("Freeze", "no deploys")
    box("codex").read(news.id)
    old = box("sarah").broadcast("Old", "gone")
    box("sarah").retract(old.id)


@pytest.mark.parametrize("fmt", ["mbox", "maildir"])
def test_what_export_writes_import_reads_back_exactly_and_once(
        fmt: str, cli: Callable[..., Any], box: Box, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    every_kind(box)
    before = exported(cli)
    assert {r["subject"] for r in before} >= set(BODIES)
    path = tmp_path / f"mail.{fmt}"
    assert cli("export", "--format", fmt, str(path)).code == 0
    monkeypatch.setenv("MAILSLOT_DIR", str(tmp_path / "fresh"))
    first = cli("import", fmt, str(path), "--json")
    assert first.code == 0, first.err
    assert json.loads(first.out)["unmapped"] == []
    assert exported(cli) == before
    again = cli("import", fmt, str(path), "--json")
    assert json.loads(again.out)["added"] == {}
    assert exported(cli) == before


def test_mail_another_program_wrote_is_named_and_left_out(
        cli: Callable[..., Any], box: Box, tmp_path: Path) -> None:
    box("claude").send(["gemini"], "Plan", "x")
    path = tmp_path / "mail.mbox"
    assert cli("export", "--format", "mbox", str(path)).code == 0
    other = mailbox.mbox(str(path))
    other.add(b"From: someone@example.com\nTo: me@example.com\nSubject: hi\n\nhello\n")
    other.flush()
    other.close()
    result = cli("import", "mbox", str(path), "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["unmapped"] == [
        "message 2: no X-Mailslot-Id (not a mailslot export's message); not imported"]


def test_a_file_that_is_not_an_mbox_is_one_line_and_imports_nothing(
        cli: Callable[..., Any], root: Path, tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("just some notes\n")
    result = cli("import", "mbox", str(path))
    assert (result.code, result.err.count("\n")) == (2, 1), result.err
    assert "is not an mbox" in result.err and not root.exists()
