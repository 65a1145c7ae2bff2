"""Deliver until done, new mail once per session, broadcasts once per agent, stop opt-in."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest

from conftest import Result
from hookkit import WHEN, fixture, run_as, sender
from mailslot.access.identity import Identity
from mailslot.backends.files.file_store import FileStore
from mailslot.core.message import Message, State
from mailslot.frontends.hooks.host_io import CONTEXT_LIMIT
from mailslot.service.delivery import MIDTURN, Delivery

Cli = Callable[..., Result]
ID = r"\d{4}-\d{2}-\d{2}_\S+_[0-9a-f]{6,8}"


def payload(event: str, session: str, **extra: object) -> str:
    return json.dumps({"session_id": session, "hook_event_name": event, **extra})


def shown(r: Result) -> list[str]:
    """The ids an injection shows, in order ([] for an empty object)."""
    assert r.code == 0, r.err
    data = json.loads(r.out)
    text = (data.get("hookSpecificOutput", {}).get("additionalContext")
            or data.get("reason") or "")
    return re.findall(rf"^\[mailslot\] message ({ID})$", text, re.M)


def start(cli: Cli, session: str, agent: str = "gemini") -> list[str]:
    return shown(cli("--agent", agent, "hook", "claude", "session-start",
                     stdin=payload("SessionStart", session, source="startup")))


def prompt(cli: Cli, session: str, agent: str = "gemini") -> list[str]:
    return shown(cli("--agent", agent, "hook", "claude", "user-prompt-submit",
                     stdin=payload("UserPromptSubmit", session, prompt="go on")))


def stop(cli: Cli, session: str, *, active: bool = False) -> Result:
    return cli("--agent", "gemini", "hook", "claude", "stop",
               stdin=payload("Stop", session, stop_hook_active=active))


def test_directed_mail_comes_at_every_session_start_until_done(cli: Cli, root: Path) -> None:
    one = sender(root, "claude").send("gemini", "first", "x").id
    assert start(cli, "a") == [one]
    assert start(cli, "a") == []  # resumed or compacted: one line counts it (below)
    assert prompt(cli, "a") == []
    assert cli("--agent", "gemini", "read", one).code == 0
    assert start(cli, "b") == [one]  # read is not done
    assert cli("--agent", "gemini", "done", one).code == 0
    assert start(cli, "c") == []
    assert cli("--agent", "gemini", "hook", "claude", "session-start",
               stdin=payload("SessionStart", "d")).out == "{}"


def test_prompt_shows_only_what_this_session_has_not_seen(cli: Cli, root: Path) -> None:
    one = sender(root, "claude").send("gemini", "first", "x").id
    assert start(cli, "a") == [one]
    two = sender(root, "codex").send("gemini", "second", "y").id
    assert prompt(cli, "a") == [two]
    assert prompt(cli, "a") == []
    assert prompt(cli, "b") == [one, two]  # another session never saw either
    assert prompt(cli, "b") == []
    assert start(cli, "b") == []  # nor at its next start
    assert start(cli, "c") == [one, two]  # a new session is shown everything not done


def test_a_restarted_session_is_told_in_one_line_of_mail_it_was_shown(cli: Cli,
                                                                      root: Path) -> None:
    """A resumed or compacted session (the same session id) is never injected
    mail it was shown before; one line says how much of it is still not done."""
    one = sender(root, "claude").send("gemini", "first", "x").id
    assert start(cli, "a") == [one]
    two = sender(root, "codex").send("gemini", "second", "y").id
    again = cli("--agent", "gemini", "hook", "claude", "session-start",
                stdin=payload("SessionStart", "a"))
    text = json.loads(again.out)["hookSpecificOutput"]["additionalContext"]
    assert "[mailslot] 1 message was shown earlier in this session and is not done: " in text
    assert "> second" in text and "> first" not in text and one not in text
    assert text.count("[mailslot] message ") == 1 and two in text
    assert cli("--agent", "gemini", "done", two).code == 0
    text = json.loads(cli("--agent", "gemini", "hook", "claude", "session-start",
                          stdin=payload("SessionStart", "a")).out)[
        "hookSpecificOutput"]["additionalContext"]
    assert text.startswith("[mailslot] 1 message was shown earlier") and "\n" not in text


def test_hook_does_not_change_message_state(cli: Cli, root: Path) -> None:
    one = sender(root, "claude").send("gemini", "first", "x").id
    start(cli, "a")
    listed = json.loads(cli("--agent", "gemini", "inbox", "--json").out)
    assert [(m["id"], m["state"]) for m in listed] == [(one, "unread")]


def test_broadcast_is_served_once_per_agent_never_to_its_sender(cli: Cli, root: Path) -> None:
    news = sender(root, "claude").broadcast("Main is frozen", "until 17:00").id
    assert start(cli, "a") == [news]
    assert start(cli, "a") == []
    assert start(cli, "b") == []
    assert prompt(cli, "c") == []
    assert start(cli, "x", agent="codex") == [news]
    assert prompt(cli, "y", agent="cursor") == [news]
    assert start(cli, "z", agent="claude") == []
    events = [json.loads(line) for line in (root / "log" / "events.jsonl").read_text().split()]
    served = [(e["agent"], e["via"]) for e in events if e["event"] == "read"]
    assert served == [("gemini", "hook"), ("codex", "hook"), ("cursor", "hook")]


def test_retracted_broadcast_is_not_served(cli: Cli, root: Path) -> None:
    news = sender(root, "claude").broadcast("oops", "never mind").id
    assert cli("--agent", "claude", "retract", news).code == 0
    assert start(cli, "a") == []


def test_stop_continues_only_when_opted_in(cli: Cli, root: Path) -> None:
    config = root / "config.json"
    one = sender(root, "claude").send("gemini", "first", "x").id
    assert stop(cli, "a").out == "{}"  # not opted in
    for value in ("true", 1, {"yes": True}):
        config.write_text(json.dumps({"agents": {"gemini": {"auto_continue_on_stop": value}}}))
        assert stop(cli, "a").out == "{}"
    config.write_text(json.dumps({"agents": {"gemini": {"auto_continue_on_stop": True}}}))
    assert stop(cli, "a", active=True).out == "{}"  # the turn is already continuing
    r = stop(cli, "a")
    assert shown(r) == [one] and json.loads(r.out)["decision"] == "block"
    assert stop(cli, "a").out == "{}"  # already shown in this session
    assert prompt(cli, "a") == []
    start(cli, "b")
    assert stop(cli, "b").out == "{}"  # shown at this session's start
    two = sender(root, "codex").send("gemini", "second", "y").id
    assert shown(stop(cli, "b")) == [two]


def test_stop_revisits_an_open_request_shown_earlier_once_per_session(
        cli: Cli, root: Path) -> None:
    asked = sender(root, "claude").send("gemini", "review this?", "x", expect_reply=True).id
    told = sender(root, "codex").send("gemini", "fyi", "y").id
    (root / "config.json").write_text(
        json.dumps({"agents": {"gemini": {"auto_continue_on_stop": True}}}))
    assert start(cli, "a") == [asked, told]
    r = stop(cli, "a")
    said = json.loads(r.out)
    assert said["decision"] == "block"
    assert "Before you stop: 1 message shown earlier in this session asked for a reply" \
        in said["reason"]
    assert f"[mailslot] message {asked}" in said["reason"] and told not in said["reason"]
    assert "> review this?" in said["reason"] and "body:" not in said["reason"]
    assert stop(cli, "a", active=True).out == "{}"  # the host's loop guard
    assert stop(cli, "a").out == "{}"  # once per session
    assert start(cli, "b") == [asked, told]
    assert json.loads(stop(cli, "b").out)["decision"] == "block"  # a new session: once more
    assert cli("--agent", "gemini", "reply", asked, stdin="done it").code == 0
    assert start(cli, "c") == [told]
    assert stop(cli, "c").out == "{}"  # answered: nothing left open


def test_stop_does_not_revisit_a_request_this_session_never_saw(cli: Cli, root: Path) -> None:
    sender(root, "codex").send("gemini", "fyi", "y")
    (root / "config.json").write_text(
        json.dumps({"agents": {"gemini": {"auto_continue_on_stop": True}}}))
    start(cli, "a")
    asked = sender(root, "claude").send("gemini", "review this?", "x", expect_reply=True).id
    assert shown(stop(cli, "a")) == [asked]  # new mail: shown as new, not as a reminder
    assert "Before you stop" in json.loads(stop(cli, "a").out)["reason"]
    assert stop(cli, "a").out == "{}"


def test_malformed_config_never_continues_a_turn(cli: Cli, root: Path) -> None:
    sender(root, "claude").send("gemini", "first", "x")
    (root / "config.json").write_text("{not json")
    r = stop(cli, "a")
    assert (r.code, r.out) == (0, "{}")
    assert r.err.startswith("mailslot hook: ") and r.err.count("\n") == 1
    (root / "config.json").write_text(json.dumps({"agents": [1]}))
    assert stop(cli, "a").out == "{}"


def test_many_messages_stay_under_the_limit_newest_first_rest_counted(
    cli: Cli, root: Path
) -> None:
    ids = [sender(root, "claude", at=WHEN + timedelta(seconds=n))
           .send("gemini", f"note {n}", f"line {n}\n" * 100).id for n in range(40)]
    r = cli("--agent", "gemini", "hook", "claude", "session-start",
            stdin=fixture("claude-session-start"))
    text = json.loads(r.out)["hookSpecificOutput"]["additionalContext"]
    assert len(text) < CONTEXT_LIMIT
    first = re.findall(rf"^\[mailslot\] message ({ID})$", text, re.M)
    assert 2 < len(first) < 40 and first == ids[-len(first):]  # the newest, oldest first
    rest = 40 - len(first)
    assert (f"[mailslot] 40 messages waiting for gemini; {len(first)} shown below, oldest "
            f"first. {rest} older ones are not shown: `{run_as('gemini')} inbox "
            f"--limit 40` lists them, `{run_as('gemini')} read ID` shows one.") in text
    # The session was told of the rest in that line: later prompts do not inject it
    # (a prompt with nothing new costs no bytes), new mail they do.
    session = "3f2c9a1e-7b4d-4e8a-9c21-5d6f0a8b7e34"
    assert prompt(cli, session) == []
    late = sender(root, "codex", at=WHEN + timedelta(seconds=99)).send("gemini", "late", "x")
    assert prompt(cli, session) == [late.id]


def test_long_body_is_cut_with_the_command_that_shows_it(cli: Cli, root: Path) -> None:
    big = sender(root, "claude").send("gemini", "log", "".join(f"row {n}\n" for n in range(5000)))
    small = sender(root, "codex").send("gemini", "short", "ok")
    r = cli("--agent", "gemini", "hook", "claude", "session-start",
            stdin=fixture("claude-session-start"))
    text = json.loads(r.out)["hookSpecificOutput"]["additionalContext"]
    assert len(text) < CONTEXT_LIMIT
    assert shown(r) == [big.id, small.id]
    note = (f"[mailslot] body cut here ({len(big.body)} characters in all); "
            f"`{run_as('gemini')} read {big.id}` shows it whole.")
    assert note in text.split("\n")
    before = text.split(note)[0].split("body:\n")[1]
    assert all(line.startswith("> row ") for line in before.split("\n") if line)


@pytest.mark.parametrize("session", ["../../escape", "a/b", ".hidden", "x" * 300, "é"])
def test_odd_session_ids_never_become_paths(cli: Cli, root: Path, session: str) -> None:
    one = sender(root, "claude").send("gemini", "first", "x").id
    assert start(cli, session) == [one]
    assert prompt(cli, session) == []
    records = [p for p in root.parent.rglob("*") if p.is_file() and "sessions" in p.parts]
    assert [p.parent for p in records] == [root / "sessions" / "gemini"]
    assert records[0].name.startswith("h-") and not (root.parent / "escape").exists()


def midturn(cli: Cli, session: str, agent: str = "gemini") -> list[str]:
    return shown(cli("--agent", agent, "hook", "claude", "post-tool-use",
                     stdin=payload("PostToolUse", session, tool_name="Bash")))


def age_session(root: Path, session: str, seconds: float, agent: str = "gemini") -> None:
    """Make the session's last showing ``seconds`` old (instead of sleeping)."""
    record = root / "sessions" / agent / session
    when = record.stat().st_mtime - seconds
    os.utime(record, (when, when))


def test_midturn_shows_new_directed_mail_once_and_waits_out_the_interval(
    cli: Cli, root: Path
) -> None:
    one = sender(root, "claude").send("gemini", "first", "x").id
    assert midturn(cli, "a") == [one]  # nothing shown to this session yet: no interval
    assert midturn(cli, "a") == []  # once per message
    two = sender(root, "codex").send("gemini", "second", "y").id
    assert midturn(cli, "a") == []  # shown something under 30 s ago
    age_session(root, "a", 31)
    assert midturn(cli, "a") == [two]
    assert prompt(cli, "a") == []  # the prompt does not repeat it


def test_midturn_interval_counts_from_any_showing_and_is_configurable(
    cli: Cli, root: Path
) -> None:
    sender(root, "claude").send("gemini", "first", "x")
    start(cli, "a")
    two = sender(root, "codex").send("gemini", "second", "y").id
    assert midturn(cli, "a") == []  # the session start showed mail just now
    (root / "config.json").write_text(
        json.dumps({"agents": {"gemini": {"midturn_interval_seconds": 5}}}))
    age_session(root, "a", 6)
    assert midturn(cli, "a") == [two]


def test_midturn_never_shows_broadcasts(cli: Cli, root: Path) -> None:
    sender(root, "claude").broadcast("freeze", "x")
    assert midturn(cli, "a") == []
    assert not (root / "broadcast" / "seen").exists()
    assert len(prompt(cli, "a")) == 1


@pytest.mark.parametrize("value", [0, "30", -1, True, None])
def test_midturn_is_off_at_zero_or_with_a_malformed_interval(
    cli: Cli, root: Path, value: object
) -> None:
    sender(root, "claude").send("gemini", "first", "x")
    (root / "config.json").write_text(
        json.dumps({"agents": {"gemini": {"midturn_interval_seconds": value}}}))
    r = cli("--agent", "gemini", "hook", "claude", "post-tool-use",
            stdin=payload("PostToolUse", "a"))
    assert (r.code, r.out) == (0, "{}")
    assert ("midturn_interval_seconds" in r.err) == (value != 0)


def test_midturn_without_a_session_shows_nothing(cli: Cli, root: Path) -> None:
    sender(root, "claude").send("gemini", "first", "x")
    r = cli("--agent", "gemini", "hook", "claude", "post-tool-use", stdin="{}")
    assert (r.code, r.out) == (0, "{}")


class NoParsing(FileStore):
    """The hooks' store, failing the test if a message is read or the config misread."""

    def load(self, agent: str, message_id: str) -> tuple[Message, State]:
        raise AssertionError(f"parsed {message_id}")


def test_midturn_common_case_parses_no_message(cli: Cli, root: Path) -> None:
    sender(root, "claude").send("gemini", "first", "x")
    assert len(midturn(cli, "a")) == 1
    delivery = Delivery(NoParsing(str(root)), "gemini", Identity("gemini", "--agent"))
    assert delivery.plan(MIDTURN, "a", limit=CONTEXT_LIMIT) is None  # nothing new
    sender(root, "codex").send("gemini", "second", "y")
    assert delivery.plan(MIDTURN, "a", limit=CONTEXT_LIMIT) is None  # inside the interval
    assert delivery.problems == []


def injected(r: Result) -> str:
    assert r.code == 0, r.err
    return str(json.loads(r.out)["hookSpecificOutput"]["additionalContext"])


def test_an_injection_keeps_to_the_configured_byte_budget(cli: Cli, root: Path) -> None:
    """Each injection holds at most ``context_budget_bytes`` (per agent, or for
    every agent; 6 KB by default), one line counting what did not fit; a value that is
    not a number of bytes keeps the default and is said on stderr."""
    box = sender(root, "claude")
    ids = [box.send("gemini", f"note {n}", "ü" * 400).id for n in range(40)]

    def session_start(session: str) -> Result:
        return cli("--agent", "gemini", "hook", "claude", "session-start",
                   stdin=payload("SessionStart", session, source="startup"))

    text = injected(session_start("a"))
    assert 5000 < len(text.encode()) <= 6144 and text.count("To answer") == 1
    assert len([line for line in text.splitlines() if "not shown" in line]) == 1
    config = root / "config.json"
    config.write_text(json.dumps({"context_budget_bytes": 3000}))
    assert len(injected(session_start("b")).encode()) <= 3000
    config.write_text(json.dumps({"context_budget_bytes": 3000,
                                  "agents": {"gemini": {"context_budget_bytes": 9000}}}))
    text = injected(session_start("c"))
    assert 6144 < len(text.encode()) <= 9000
    config.write_text(json.dumps({"context_budget_bytes": "big"}))
    bad = session_start("d")
    assert len(injected(bad).encode()) <= 6144
    assert "context_budget_bytes must be a whole number of bytes" in bad.err
    # What did not fit was counted, so no later prompt injects it: nothing new, no bytes
    assert prompt(cli, "a") == []
    assert max(ids) in text  # the newest
