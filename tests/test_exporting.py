"""Export through the real CLI: every message with each recipient's state, readable by
ordinary mail programs (checked with Python's own mailbox module), private files."""

from __future__ import annotations

import json
import mailbox
import stat
import subprocess
import sys
from collections.abc import Callable
from email.header import decode_header, make_header
from pathlib import Path
from typing import Any

from mailslot import Mailbox

Box = Callable[[str | None], Mailbox]


def _mail(box: Box) -> dict[str, Any]:
    first = box("claude").send(["gemini", "codex"], "Plan: ünïcode", "line one\nFrom here on")
    answer = box("gemini").reply(first.id, "agreed")
    news = box("sarah").broadcast("Freeze", "no deploys")
    box("codex").read(news.id)
    box("sarah").retract(news.id)
    return {"first": first, "answer": answer, "news": news}


def test_jsonl_holds_every_message_with_states(cli: Callable[..., Any], box: Box,
                                               tmp_path: Path) -> None:
    sent = _mail(box)
    out = tmp_path / "mail.jsonl"
    result = cli("export", "--output", str(out))
    assert result.code == 0 and "exported 3 message(s)" in result.out
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    by_id = {r["id"]: r for r in rows}
    first = by_id[sent["first"].id]
    assert first["body"] == "line one\nFrom here on" and first["subject"] == "Plan: ünïcode"
    assert first["states"] == {"gemini": "done", "codex": "unread"}
    assert by_id[sent["answer"].id]["in_reply_to"] == sent["first"].id
    assert by_id[sent["news"].id]["retracted"] is True
    assert by_id[sent["news"].id]["states"] == {"codex": "read"}
    assert [r["id"] for r in rows] == sorted(by_id)  # oldest first
    again = cli("export", "--output", str(out))
    assert again.code == 2 and "never overwrites" in again.err
    stdout = cli("export", "--for", "gemini")
    assert len(stdout.out.splitlines()) == 3  # to it, from it, and the broadcast


def test_mbox_and_maildir_read_by_a_mail_library(cli: Callable[..., Any], box: Box,
                                                  tmp_path: Path) -> None:
    sent = _mail(box)
    assert cli("export", "--format", "mbox", "--output", str(tmp_path / "m.mbox")).code == 0
    mbox = mailbox.mbox(tmp_path / "m.mbox")
    mails = {m["X-Mailslot-Id"]: m for m in mbox}
    mbox.close()
    first = mails[sent["first"].id]
    assert first["From"] == "claude@mailslot.invalid"
    assert str(make_header(decode_header(first["Subject"]))) == "Plan: ünïcode"  # RFC 2047
    assert first["X-Mailslot-State"] == "codex=unread, gemini=done"
    # a body with a line starting "From " goes in base64, which no mbox quotes: a mail
    # program shows it as it was, and `mailslot import mbox` gives it back exactly
    assert first["Content-Transfer-Encoding"] == "base64"
    assert first.get_payload(decode=True).decode() == "line one\nFrom here on\n"
    assert mails[sent["answer"].id]["In-Reply-To"] == f"<{sent['first'].id}@mailslot.invalid>"
    assert stat.S_IMODE((tmp_path / "m.mbox").stat().st_mode) == 0o600

    folder = tmp_path / "gemini-mail"
    assert cli("export", "--format", "maildir", "--for", "gemini", "--output",
               str(folder)).code == 0
    box_ = mailbox.Maildir(folder, create=False)
    flags = {m["X-Mailslot-Id"]: (m.get_subdir(), m.get_flags()) for m in box_}
    assert flags[sent["first"].id] == ("cur", "S")  # done for gemini
    assert flags[sent["answer"].id] == ("new", "")
    for path in folder.rglob("*"):
        assert stat.S_IMODE(path.stat().st_mode) == (0o700 if path.is_dir() else 0o600)


def test_since_filters_and_bad_input_is_one_line(cli: Callable[..., Any], box: Box) -> None:
    _mail(box)
    assert cli("export", "--since", "2999-01-01").out == ""
    assert cli("export", "--since", "soon").code == 2
    assert cli("export", "--format", "mbox").code == 2  # needs a file


def _many(box: Box) -> None:
    for n in range(30):  # 150 KB: more than a pipe holds, so the writer meets its end
        box("claude").send(["gemini"], f"Plan {n}", "x" * 5000)


def test_export_takes_its_file_as_backup_does(cli: Callable[..., Any], box: Box,
                                              tmp_path: Path) -> None:
    _many(box)
    path = tmp_path / "mail.jsonl"
    made = cli("export", str(path))
    assert made.code == 0 and made.out == f"exported 30 message(s) to {path}\n", made.err
    assert len(path.read_text().splitlines()) == 30
    assert cli("export", "--output", str(tmp_path / "b.jsonl")).code == 0  # still works
    both = cli("export", str(tmp_path / "c.jsonl"), "--output", str(tmp_path / "d.jsonl"))
    assert (both.code, both.err.count("\n")) == (2, 1), both.err


def test_a_reader_that_goes_away_ends_the_export_quietly(box: Box) -> None:
    _many(box)
    reader = subprocess.Popen([sys.executable, "-m", "mailslot", "export"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert reader.stdout is not None and reader.stderr is not None
    assert reader.stdout.read(10) == b'{"id": "20'  # as `mailslot export | head -c 10`
    reader.stdout.close()
    with reader.stderr:
        err = reader.stderr.read()
    assert (reader.wait(timeout=60), err) == (0, b"")
