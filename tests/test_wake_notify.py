"""Notifiers: run on every arrival, beside wakes, with the wakes' retries."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from mailslot import FileStore, Mailbox
from mailslot.backends import open_store
from mailslot.core.errors import StoreError
from mailslot.frontends.watcher import Watcher
from mailslot.wake.bank import BankNotifier
from mailslot.wake.claims import notifier_queue
from mailslot.wake.notify import NotifyRunner
from mailslot.wake.report import as_text, validate
from test_wake_watcher import watcher
from wake_helpers import calls, configure, events, fake_host, wait_until

Box = Callable[[str | None], Mailbox]


def run_once(root: Path) -> str:
    """``watch --once``: every wake and notice due now; what the watcher printed."""
    out = io.StringIO()
    watcher = Watcher(FileStore(root), out)
    try:
        watcher.run_once()
    finally:
        watcher.close()
    return out.getvalue()


def test_a_command_notifier_runs_on_an_ordinary_arrival_without_a_wake(
        box: Box, root: Path, bin_dir: Path) -> None:
    record = fake_host(bin_dir, "tell-me")
    woken = fake_host(bin_dir, "wake-me")
    configure(root, {"grok": {  # not opted in to wakes
        "wake_method": "command", "command": [str(bin_dir / "wake-me"), "{id}"],
        "notify": [{"kind": "command", "command": [str(bin_dir / "tell-me"), "{from}", "{id}"]}],
    }})
    m = box("claude").send("grok", "Private subject", "secret body")
    printed = run_once(root)
    [call] = calls(record)
    assert call["argv"] == ["claude", m.id]
    assert call["env"]["MAILSLOT_AGENT"] == "grok"
    assert calls(woken) == []
    assert f"notified grok (notify[0]:command) for {m.id}" in printed
    assert [e["event"] for e in events(root, "notify_")] == [
        "notify_queued", "notify_attempt", "notify_ok"]
    assert events(root, "wake_") == []
    assert notifier_queue(FileStore(root), 0).agents() == []


def test_a_desktop_notifier_gets_no_subject_or_body(box: Box, root: Path, bin_dir: Path) -> None:
    record = fake_host(bin_dir, "notify-send")
    configure(root, {"grok": {"notify": [{"kind": "desktop"}]}})
    first = box("claude").send("grok", "Private subject", "secret body")
    second = box("codex").send("grok", "<b>Other</b> subject", "another body")
    run_once(root)
    [call] = calls(record)  # one notification for both messages
    assert call["argv"][:2] == ["--app-name=mailslot", "mailslot: mail for grok"]
    text = " ".join(call["argv"]) + call["stdin"]
    assert f"claude sent message {first.id}" in text and f"codex sent message {second.id}" in text
    assert "subject" not in text.lower() and "body" not in text and call["stdin"] == ""


def test_a_desktop_notifier_shows_subjects_only_when_allowed(
        box: Box, root: Path, bin_dir: Path) -> None:
    record = fake_host(bin_dir, "notify-send")
    configure(root, {"grok": {"notify": [{"kind": "desktop", "subjects": True}]}})
    box("claude").send("grok", "<b>Schema</b> & more", "secret body")
    run_once(root)
    [call] = calls(record)
    assert call["argv"][-1].endswith(": &lt;b&gt;Schema&lt;/b&gt; &amp; more")
    assert "secret body" not in json.dumps(call)


def bank_rows(bank: Path) -> list[str]:
    return [line for line in (bank / "INDEX.md").read_text().splitlines()
            if line.startswith("| 20")]


def test_the_bank_holds_one_entry_per_arrival_and_done_mail_leaves_it(
        box: Box, root: Path) -> None:
    configure(root, {"grok": {"notify": [{"kind": "bank"}]}})
    first = box("claude").send("grok", "Private subject", "secret body")
    second = box("codex").send("grok", "Other", "x")
    run_once(root)
    bank = root / "bank" / "grok"
    assert (bank.stat().st_mode & 0o777) == 0o700
    assert sorted(p.name for p in bank.iterdir()) == sorted(
        ["INDEX.md", f"{first.id}.md", f"{second.id}.md"])
    entry = (bank / f"{first.id}.md").read_text()
    assert "- from: claude" in entry and f"read {first.id}" in entry
    assert ((bank / f"{first.id}.md").stat().st_mode & 0o777) == 0o600
    rows = bank_rows(bank)
    assert len(rows) == 2 and "| claude | unread |" in rows[0] and "| codex | unread |" in rows[1]
    everything = "".join(p.read_text() for p in bank.iterdir())
    assert "Private subject" not in everything and "secret body" not in everything

    box("grok").read(second.id)
    box("grok").done([first.id])
    run_once(root)
    assert {p.name for p in bank.iterdir()} == {"INDEX.md", f"{second.id}.md"}
    [row] = bank_rows(bank)
    assert second.id in row and "| read |" in row


def test_a_bank_folder_can_be_put_elsewhere(box: Box, root: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "grok-bank"
    configure(root, {"grok": {"notify": [{"kind": "bank", "folder": str(elsewhere)}]}})
    m = box("claude").send("grok", "s", "x")
    run_once(root)
    assert (elsewhere / f"{m.id}.md").exists() and not (root / "bank").exists()


def test_a_planted_link_is_not_used_as_a_bank(box: Box, root: Path, tmp_path: Path) -> None:
    configure(root, {"grok": {"notify": [{"kind": "bank"}]}})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / "bank").mkdir(mode=0o700)
    (root / "bank" / "grok").symlink_to(elsewhere)
    box("claude").send("grok", "s", "x")
    printed = run_once(root)
    assert list(elsewhere.iterdir()) == []
    assert "is not a folder of yours; not used as a bank" in printed


def test_a_failing_notifier_is_retried_and_logged_without_the_body_and_the_wake_happens_once(
        box: Box, root: Path, bin_dir: Path) -> None:
    broken = fake_host(bin_dir, "tell-me", code=4)
    woken = fake_host(bin_dir, "wake-me")
    configure(root, {"grok": {
        "wake_on_mail": True, "wake_method": "command",
        "command": [str(bin_dir / "wake-me"), "{id}"],
        "notify": [{"kind": "command", "command": [str(bin_dir / "tell-me"), "{id}"]}],
    }}, wake_retry={"attempts": 2, "backoff_seconds": 0, "backoff_factor": 1})
    m = box("claude").send("grok", "Private subject", "secret body")
    run_once(root)
    run_once(root)  # the retry is due at once (backoff 0)
    assert [c["argv"] for c in calls(woken)] == [[m.id]]
    assert len(calls(broken)) == 2
    failed = [e for e in events(root, "notify_") if e["event"] == "notify_failed"]
    assert [(e["attempt"], e["final"]) for e in failed] == [(1, False), (2, True)]
    assert failed[0]["reason"] == "tell-me exited with status 4"
    log = (root / "log" / "events.jsonl").read_text()
    assert "Private subject" not in log and "secret body" not in log
    assert [e["event"] for e in events(root, "wake_")] == ["wake_queued", "wake_attempt",
                                                           "wake_ok"]
    assert box("claude").inbox() == []  # a notifier's failure tells nobody
    assert notifier_queue(FileStore(root), 0).agents() == []


def test_mail_already_read_is_not_announced(box: Box, root: Path, bin_dir: Path) -> None:
    record = fake_host(bin_dir, "tell-me")
    configure(root, {"grok": {"notify": [
        {"kind": "command", "command": [str(bin_dir / "tell-me")]}]}})
    m = box("claude").send("grok", "s", "x")
    box("grok").read(m.id)
    done = NotifyRunner(FileStore(root), 0).run_agent("grok")
    assert done.results[0].skipped and calls(record) == []


def test_a_malformed_notify_list_names_the_field_and_delivery_still_works(
        box: Box, root: Path) -> None:
    configure(root, {"grok": {"notify": [{"kind": "pager"}]}})
    m = box("claude").send("grok", "s", "x")
    assert [i.message.id for i in box("grok").inbox()] == [m.id]
    [skipped] = events(root, "notify_")
    assert skipped["reason"] == ("config.json: agents.grok.notify[0].kind must be one of: "
                                 "command, desktop, bank")


def test_validate_and_who_show_each_agents_notifiers(box: Box, root: Path, bin_dir: Path) -> None:
    fake_host(bin_dir, "notify-send")
    configure(root, {"grok": {"notify": [{"kind": "desktop"}, {"kind": "bank"}]},
                     "codex": {"notify": [{"kind": "command", "command": "not a list"}]}})
    report = validate(FileStore(root))
    text = as_text(report)
    assert "notify[0]: desktop" in text and "notify[1]: bank" in text
    assert "config.json: agents.codex.notify[0].command must be a list" in text
    assert not report.ok
    who = {a.name: a.notify for a in box("claude").who()}
    assert who["grok"] == "desktop, bank" and who["sarah"] == "none"
    assert who["codex"] == "command"  # its shape; watch --validate checks its fields


def test_a_running_watcher_notifies_and_wakes_each_arrival_once(
        box: Box, root: Path, bin_dir: Path, tmp_path: Path) -> None:
    desktop = fake_host(bin_dir, "notify-send")
    woken = fake_host(bin_dir, "wake-me")
    configure(root, {"grok": {"wake_on_mail": True, "wake_method": "command",
                              "command": [str(bin_dir / "wake-me"), "{id}"],
                              "notify": [{"kind": "desktop"}, {"kind": "bank"}]}})
    with watcher(tmp_path) as log:
        sent = [box("claude").send("grok", f"m{n}", "x").id for n in range(5)]
        wait_until(lambda: len(calls(woken)) == 5 and all(
            (root / "bank" / "grok" / f"{i}.md").exists() for i in sent), 60,
            what="five wakes and five bank entries")
        wait_until(lambda: sum(c["argv"][-1].count("claude sent") for c in calls(desktop)) >= 5,
                   what="the desktop notices")
        assert "notified grok (notify[1]:bank)" in log.read_text()
    shown = " ".join(c["argv"][-1] for c in calls(desktop))
    assert all(shown.count(i) == 1 for i in sent)
    assert sorted(c["argv"][0] for c in calls(woken)) == sorted(sent)


def test_watch_json_names_notifier_outcomes(box: Box, root: Path, bin_dir: Path) -> None:
    fake_host(bin_dir, "tell-me", code=2)
    configure(root, {"grok": {"notify": [
        {"kind": "command", "command": [str(bin_dir / "tell-me")]}]}},
        wake_retry={"attempts": 1})
    m = box("claude").send("grok", "s", "x")
    out = io.StringIO()
    watcher = Watcher(FileStore(root), out, as_json=True)
    try:
        watcher.run_once()
    finally:
        watcher.close()
    [event] = [json.loads(line) for line in out.getvalue().splitlines()]
    assert (event["event"], event["method"], event["message_id"]) == (
        "notify_gave_up", "notify[0]:command", m.id)
    assert event["reason"] == "tell-me exited with status 2" and event["told"] is None


def test_doctor_reports_a_malformed_notifier(box: Box, root: Path) -> None:
    configure(root, {"grok": {"notify": [{"kind": "bank", "folder": "relative/path"}]}})
    report = box("claude").doctor()
    assert "wake: grok: config.json: agents.grok.notify[0].folder must be an absolute path" \
        in report.problems


def test_on_macos_the_text_reaches_osascript_as_data_not_as_script(root: Path) -> None:
    from mailslot.core.message import Message
    from mailslot.wake.methods import Job
    from mailslot.wake.notify import DesktopNotifier

    message = Message(id="2026-09-21_144808.123456_claude_to_grok_7f3a9c2e", date="",
                      sender="claude", to=("grok",), subject='" & do shell script "x')
    job = Job("grok", (message,), "", FileStore(root), 1)
    argv = DesktopNotifier("grok", "osascript", True, mac=True).argv(job)
    script = [argv[i + 1] for i, a in enumerate(argv) if a == "-e"]
    assert script == ["on run argv",
                      "display notification (item 2 of argv) with title (item 1 of argv)",
                      "end run"]
    assert argv[-2:] == ["mailslot: mail for grok",
                         f'claude sent message {message.id}: " & do shell script "x']


def test_a_bank_needs_its_own_folder_when_the_mailbox_is_not_a_folder() -> None:
    """The store says whether it is a folder; a database's bank lives where it is told."""
    store = open_store("postgresql://agent@localhost/mail")  # opening does not connect
    with pytest.raises(StoreError, match="the mailbox is not a folder"):
        BankNotifier(None).where_for(store, "grok")
    assert BankNotifier("/srv/banks/grok").where_for(store, "grok") == "/srv/banks/grok"


def test_a_banks_default_folder_is_inside_the_mailbox_folder(root: Path) -> None:
    assert BankNotifier(None).where_for(FileStore(root), "grok") == str(root / "bank" / "grok")
