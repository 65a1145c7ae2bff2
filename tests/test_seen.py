"""The delivery ladder's ``seen`` rung: a showing carries a fingerprint, and the host's
own record of the session (real records of Claude Code, Codex and Gemini CLI, trimmed,
in tests/fixtures/records/) says whether the model was given it. Mail the record shows
was never given is shown again, once per session; ``who`` names agents whose mail was
surfaced and never seen."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import test_ladder
from mailslot import Mailbox
from mailslot import host_registry as hosts
from mailslot.access.identity import Identity
from mailslot.service.seen import LOST, MISSED, SEEN, WINDOW, Showing, judge
from mailslot.service.tool_marks import ToolMarks
from mailslot.store import Store

RECORDS = Path(__file__).parent / "fixtures" / "records"
MARK = re.compile(r"mslt-[0-9a-f]{12}")
TOKEN = re.compile(rb"mslt-[a-z0-9]+-[0-9a-f]{8}")
"""The research runs' fingerprints (mslt-<event>-<8 hex>), each put in by one hook,
the prompt or a tool's result."""


# What each host's record proves ------------------------------------------------------
def _tokens(record: Path) -> dict[str, int]:
    """Each fingerprint of a real record and where the line holding it first starts:
    the record's end when its hook ran (the hook's raw output is written first)."""
    data = record.read_bytes()
    found: dict[str, int] = {}
    for token in TOKEN.finditer(data):
        found.setdefault(token.group().decode(), data.rfind(b"\n", 0, token.start()) + 1)
    return found


def line(entry: dict[str, object]) -> str:
    """One line of a record, as hosts write them (compact JSON)."""
    return json.dumps(entry, separators=(",", ":")) + "\n"


def _host(record: Path) -> str:
    return record.name.split("-")[0]


@pytest.mark.parametrize("record", sorted(p.name for p in RECORDS.glob("*.jsonl")
                                          if "connection-refused" not in p.name
                                          and "http400" not in p.name))
def test_every_fingerprint_the_model_was_sent_is_seen(record: str) -> None:
    """Every hook's context, the prompt and the MCP result reached the provider in these
    runs (the research's request logs); the record shows each given and answered."""
    path = RECORDS / record
    host = hosts.host(_host(path))
    tokens = _tokens(path)
    assert len(tokens) >= 5
    for token, offset in tokens.items():
        verdict = judge(host, str(path), [Showing(token, offset, "start", ["x"])])
        assert verdict.get(token, ("waiting",))[0] == SEEN, token


@pytest.mark.parametrize("record", sorted(p.name for p in RECORDS.glob("*.jsonl")
                                          if "connection-refused" in p.name
                                          or "http400" in p.name))
def test_a_request_no_model_answered_proves_nothing(record: str) -> None:
    """Connection refused (the host notes an error of its own) or refused by the
    provider: the text was written into the record, and no model answered it."""
    path = RECORDS / record
    host = hosts.host(_host(path))
    showings = [Showing(t, o, "start", ["x"]) for t, o in _tokens(path).items()]
    assert judge(host, str(path), showings) == {}


@pytest.mark.parametrize("record", ["claude-2.1.332-p.jsonl", "codex-0.171.0-exec.jsonl",
                                    "gemini-0.61.0-p.jsonl", "claude-2.1.332-tui.jsonl"])
def test_a_fingerprint_never_sent_is_missed_once_a_model_answered(record: str) -> None:
    path = RECORDS / record
    verdict = judge(hosts.host(_host(path)), str(path),
                    [Showing("mslt-0123456789ab", 0, "start", ["x"])])
    assert verdict["mslt-0123456789ab"][0] == MISSED


def test_the_hooks_raw_output_in_the_record_is_no_proof(tmp_path: Path) -> None:
    """Claude Code keeps a hook's stdout (``hook_success``) even when a wrapper made
    nothing of it: a bare search would find the fingerprint there."""
    record = tmp_path / "t.jsonl"
    mark = "mslt-00112233aabb"
    lines: list[dict[str, object]] = [{"type": "attachment", "attachment": {"type": "hook_success",
                                                   "stdout": f"... {mark} ..."}},
             {"type": "user", "message": {"role": "user", "content": "go"}},
             {"type": "assistant", "message": {"model": "m", "content": []}}]
    record.write_text("".join(map(line, lines)))
    verdict = judge(hosts.host("claude"), str(record), [Showing(mark, 0, "start", [])])
    assert verdict[mark][0] == MISSED


def test_a_check_reads_only_a_window_of_the_record(tmp_path: Path) -> None:
    """A showing whose record grew past the window with no answer is given up (lost);
    one that shrank (rewritten) is looked for at its end."""
    record = tmp_path / "t.jsonl"
    filler = line({"type": "progress", "pad": "x" * 1000})
    record.write_text(filler * (WINDOW // len(filler) + 10))
    claude = hosts.host("claude")
    assert judge(claude, str(record), [Showing("mslt-aaaaaaaaaaaa", 0, "start", [])]) == {
        "mslt-aaaaaaaaaaaa": (LOST, "")}
    given = {"type": "user", "message": {"content": "mslt-bbbbbbbbbbbb"}}
    answer = {"type": "assistant", "message": {"model": "m"}, "timestamp": "T"}
    record.write_text(filler + line(given) + line(answer))
    far = Showing("mslt-bbbbbbbbbbbb", 10 * WINDOW, "start", [])  # past the end now
    assert judge(claude, str(record), [far]) == {"mslt-bbbbbbbbbbbb": (SEEN, "T")}


# A session's hooks (on both stores: test_ladder's fixtures) --------------------------
location, store, as_agent = test_ladder.location, test_ladder.store, test_ladder.as_agent
EVENTS = {"session-start": {"hook_event_name": "SessionStart", "source": "startup"},
          "user-prompt-submit": {"hook_event_name": "UserPromptSubmit", "prompt": "go"}}


def hook(location: str, record: Path, event: str = "session-start") -> str:
    """``mailslot --agent bob hook claude EVENT`` as a real process, its output to a
    pipe (as the host reads it), in session s-1 whose transcript is ``record``."""
    payload = {"session_id": "s-1", "transcript_path": str(record), "cwd": os.getcwd(),
               **EVENTS[event]}
    done = subprocess.run([sys.executable, "-m", "mailslot", "--agent", "bob", "hook",
                           "claude", event], input=json.dumps(payload).encode(),
                          capture_output=True, env={**os.environ, "MAILSLOT_DIR": location},
                          timeout=60, check=True)
    assert done.stderr == b""
    return done.stdout.decode()


def host_writes(record: Path, *lines: dict[str, object]) -> None:
    """The host appends to its transcript, as Claude Code does."""
    with record.open("a", encoding="utf-8") as out:
        out.writelines(map(line, lines))


def context_of(out: str) -> str:
    return str(json.loads(out)["hookSpecificOutput"]["additionalContext"])


def sent_with(text: str) -> dict[str, object]:
    """The host's note that the hook's text went into the next request."""
    return {"type": "attachment", "attachment": {"type": "hook_additional_context",
                                                 "content": [text]}}


PROMPT = {"type": "user", "message": {"role": "user", "content": "go"}}
ANSWER = {"type": "assistant", "requestRef": "r-1", "timestamp": "2026-12-06T01:09:15Z",
          "message": {"model": "claude", "content": [{"type": "text", "text": "ok"}]}}


def ladder(box: Mailbox, message_id: str) -> dict[str, object]:
    return next(r.__dict__ for r in box.status(message_id).recipients if r.agent == "bob")


def test_mail_is_seen_once_the_record_shows_the_model_was_given_it(
        location: str, as_agent: Callable[[str], Mailbox], tmp_path: Path) -> None:
    alice = as_agent("alice")
    sent = alice.send("bob", "Schema", "ready")
    record = tmp_path / "transcript.jsonl"  # Claude Code writes it after the first request
    text = context_of(hook(location, record))
    mark = MARK.findall(text)
    assert len(mark) == 1 and text.index(mark[0]) < 600  # first, before any message
    assert ladder(alice, sent.id)["rung"] == "surfaced"
    host_writes(record, sent_with(text), PROMPT)
    assert hook(location, record, "user-prompt-submit") == "{}"  # no answer yet: waits
    assert ladder(alice, sent.id)["rung"] == "surfaced"
    host_writes(record, ANSWER)
    assert hook(location, record, "user-prompt-submit") == "{}"
    step = ladder(alice, sent.id)
    assert step["rung"] == "seen" and step["state"] == "unread"
    seen = step["seen"]
    assert isinstance(seen, dict) and (seen["host"], seen["how"], seen["session"]) == (
        "claude", "start", "s-1")
    timing = step["timing"]
    assert isinstance(timing, dict) and timing["seen"] >= timing["surfaced"] >= 0
    as_agent("bob").read(sent.id)
    assert ladder(alice, sent.id)["rung"] == "read"


def test_an_injection_the_host_never_sent_is_shown_again_once(
        location: str, as_agent: Callable[[str], Mailbox], tmp_path: Path) -> None:
    """A wrapper threw the hook's output away: the host kept its raw output, sent the
    prompt and got an answer, and no request held the mail."""
    alice = as_agent("alice")
    sent = alice.send("bob", "Schema", "ready")
    record = tmp_path / "transcript.jsonl"
    first = hook(location, record)
    raw = {"type": "attachment", "attachment": {"type": "hook_success", "stdout": first}}
    host_writes(record, raw, PROMPT, ANSWER)
    again = context_of(hook(location, record, "user-prompt-submit"))
    assert sent.id in again and "shown again" in again
    assert MARK.search(again) and MARK.findall(again) != MARK.findall(first)
    step = ladder(alice, sent.id)
    surfaced = step["surfaced"]
    assert step["rung"] == "surfaced" and isinstance(surfaced, dict)
    assert (surfaced["times"], surfaced["again"], surfaced["missed"]) == (2, 1, 1)
    host_writes(record, PROMPT, ANSWER)  # thrown away again: shown again only once
    assert hook(location, record, "user-prompt-submit") == "{}"
    assert ladder(alice, sent.id)["surfaced"]["again"] == 1  # type: ignore[index]


def test_a_host_without_a_record_stays_at_surfaced(
        location: str, as_agent: Callable[[str], Mailbox]) -> None:
    sent = as_agent("alice").send("bob", "Schema", "ready")
    payload = {"conversation_id": "c-1", "hook_event_name": "sessionStart"}
    done = subprocess.run([sys.executable, "-m", "mailslot", "--agent", "bob", "hook",
                           "cursor", "session-start"], input=json.dumps(payload).encode(),
                          capture_output=True, env={**os.environ, "MAILSLOT_DIR": location},
                          timeout=60, check=True)
    assert sent.id in done.stdout.decode() and not MARK.search(done.stdout.decode())
    assert ladder(as_agent("alice"), sent.id)["surfaced"]["marked"] is False  # type: ignore[index]


def test_who_names_an_agent_whose_mail_was_surfaced_and_never_seen(
        location: str, store: Store, tmp_path: Path) -> None:
    then = datetime.now(UTC) - timedelta(hours=2)
    old = Mailbox(store, Identity("alice", "--agent"), clock=lambda: then)
    old.send("bob", "Schema", "ready")
    old.send("carol", "Schema", "ready")
    record = tmp_path / "transcript.jsonl"
    hook(location, record)  # bob's session was shown it; its record never shows it given
    box = Mailbox(store, Identity("alice", "--agent"))
    found = {a.name: a for a in box.who()}
    assert (found["bob"].unseen, found["bob"].unsurfaced) == (1, 0)
    assert (found["carol"].unseen, found["carol"].unsurfaced) == (0, 1)


# An MCP server's read results ------------------------------------------------------------
def test_a_read_result_is_seen_once_the_record_shows_it_given(
        store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server finds its host's record from what the host gives it (Claude Code:
    the session id and the project's folder) and looks at it at the next call."""
    config = tmp_path / "claude-config"
    env = {"CLAUDE_CODE_SESSION_ID": "0f5e", "CLAUDE_PROJECT_DIR": "/work/a b",
           "CLAUDE_CONFIG_DIR": str(config)}
    record = config / "projects" / "-work-a-b" / "0f5e.jsonl"
    record.parent.mkdir(parents=True)
    marks = ToolMarks()
    mark = marks.begin(env, {}, "/elsewhere")
    assert mark is not None and MARK.fullmatch(mark) and marks.record == str(record)
    marks.shown(store, "bob", None, Showing(mark, marks.offset(), "tool", ["m-1"]))
    marks.check()
    assert marks.waiting  # nothing written yet
    host_writes(record, {"type": "user", "message": {"content": [
        {"type": "tool_result", "content": f"[mailslot] delivery {mark}"}]}}, ANSWER)
    marks.check()
    assert not marks.waiting
    seen = [e for e in store.events() if e.get("event") == "seen"]
    assert [(e["ids"], e["agent"], e["how"], e["mark"]) for e in seen] == [
        (["m-1"], "bob", "tool", mark)]
    assert ToolMarks().begin({}, {}, "/elsewhere") is None  # no host says it is its server
