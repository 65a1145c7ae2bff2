"""Every recorded host input through the real entry point; the output JSON exactly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Result
from hookkit import HEADER, MARK, expected, fixture, mark_of, sender
from mailslot import Message
from mailslot import host_registry as hosts

Cli = Callable[..., Result]
START = "waiting for gemini"
LATER = "for gemini not shown before in this session"


def context(event: str) -> Callable[[str], object]:
    return lambda text: {"hookSpecificOutput": {"hookEventName": event,
                                                "additionalContext": text}}


def decision(word: str) -> Callable[[str], object]:
    return lambda text: {"decision": word, "reason": text}


def field(name: str) -> Callable[[str], object]:
    return lambda text: {name: text}


def nothing(text: str) -> object:
    return {}


SPELLING = {"claude": "mcp__mailslot__{}", "gemini": "mcp_mailslot_{}",
            "copilot": "mailslot-{}", "droid": "mailslot___{}", "pi": "mailslot_{}",
            "qwen": "mcp__mailslot__{}"}
"""How each host's model is shown mailslot's tools (as seen in its requests; docs/hosts.md):
the hook text names them so, for the host that really runs the hook (the fixture's)."""

# fixture, HOST, EVENT, the scope line it counts with, the JSON it must print
CASES = [
    ("claude-session-start", "claude", "session-start", START, context("SessionStart")),
    ("claude-session-start-resume", "claude", "session-start", START, context("SessionStart")),
    ("claude-user-prompt-submit", "claude", "user-prompt-submit", LATER,
     context("UserPromptSubmit")),
    ("claude-stop", "claude", "stop", LATER, decision("block")),
    ("claude-stop-active", "claude", "stop", LATER, nothing),
    ("codex-session-start", "codex", "session-start", START, context("SessionStart")),
    ("codex-user-prompt-submit", "codex", "user-prompt-submit", LATER,
     context("UserPromptSubmit")),
    ("codex-stop", "codex", "stop", LATER, decision("block")),
    ("codex-stop-active", "codex", "stop", LATER, nothing),
    ("gemini-session-start", "gemini", "session-start", START, context("SessionStart")),
    ("gemini-before-agent", "gemini", "before-agent", LATER, context("BeforeAgent")),
    ("gemini-after-agent", "gemini", "after-agent", LATER, decision("deny")),
    ("qwen-user-prompt-submit", "qwen", "user-prompt-submit", LATER,
     context("UserPromptSubmit")),
    ("qwen-stop", "qwen", "stop", LATER, decision("block")),
    ("cursor-session-start", "cursor", "session-start", START, field("additional_context")),
    ("cursor-stop", "cursor", "stop", LATER, field("followup_message")),
    ("copilot-session-start", "copilot", "session-start", START, field("additionalContext")),
    ("copilot-session-start-pascal", "copilot", "session-start", START,
     field("additionalContext")),
    ("copilot-agent-stop", "copilot", "stop", LATER, decision("block")),
    ("copilot-stop-pascal", "copilot", "stop", LATER, decision("block")),
    ("droid-session-start", "droid", "session-start", START, context("SessionStart")),
    ("droid-session-start-resume", "droid", "session-start", START, context("SessionStart")),
    ("droid-user-prompt-submit", "droid", "user-prompt-submit", LATER,
     context("UserPromptSubmit")),
    ("droid-stop", "droid", "stop", LATER, decision("block")),
    ("droid-stop-active", "droid", "stop", LATER, nothing),
    # Droid runs a PostToolUse hook under `droid exec` but drops what it adds: nothing
    # is shown (or recorded as shown) there
    ("droid-post-tool-use", "droid", "post-tool-use", LATER, nothing),
    # ZCode's hooks answer as Claude Code's (its inputs are assumed, not recorded):
    ("zcode-session-start", "zcode", "session-start", START, context("SessionStart")),
    ("zcode-user-prompt-submit", "zcode", "user-prompt-submit", LATER,
     context("UserPromptSubmit")),
    ("zcode-stop", "zcode", "stop", LATER, decision("block")),
    # Cursor and Copilot CLI also run the hooks in .claude/settings.json:
    ("cursor-session-start", "claude", "session-start", START, context("SessionStart")),
    ("cursor-stop", "claude", "stop", LATER, decision("block")),
    ("copilot-session-start-pascal", "claude", "session-start", START,
     field("additionalContext")),
    ("copilot-stop-pascal", "claude", "stop", LATER, decision("block")),
]


@pytest.fixture
def mail(root: Path) -> list[Message]:
    """A directed message and a broadcast for gemini, and gemini opted in to stop hooks."""
    direct = sender(root, "claude").send("gemini", "Schema change", "users.name is\n\nfull_name")
    news = sender(root, "codex").broadcast("Main is frozen", "until 17:00")
    (root / "config.json").write_text(
        json.dumps({"agents": {"gemini": {"auto_continue_on_stop": True}}}))
    return [direct, news]


@pytest.mark.parametrize(("name", "host", "event", "scope", "shape"), CASES,
                         ids=[f"{c[1]}-{c[0]}" for c in CASES])
def test_host_input_gets_exact_output(
    cli: Cli, mail: list[Message], name: str, host: str, event: str, scope: str,
    shape: Callable[[str], object],
) -> None:
    r = cli("--agent", "gemini", "hook", host, event, stdin=fixture(name))
    assert (r.code, r.err) == (0, "")
    caller = name.split("-")[0]
    tools = SPELLING.get(caller, "{}")
    found = MARK.search(r.out)
    keeps = hosts.host(host).events[event] in hosts.host(caller).record_holds \
        and b"transcript_path" in fixture(name)
    assert (found is not None) == (keeps and r.out != "{}")  # only hosts whose record holds it
    assert json.loads(r.out) == shape(expected(mail, scope, agent="gemini", tools=tools,
                                               host=caller, mark=found.group() if found else ""))


@pytest.mark.parametrize(("name", "host", "event"), [
    ("cursor-session-start", "cursor", "session-start"),
    ("claude-user-prompt-submit", "claude", "user-prompt-submit"),
    ("claude-stop", "claude", "stop"),
])
def test_nothing_pending_prints_an_empty_object(
    cli: Cli, root: Path, name: str, host: str, event: str
) -> None:
    root.mkdir()
    r = cli("--agent", "gemini", "hook", host, event, stdin=fixture(name))
    assert (r.code, r.out, r.err) == (0, "{}", "")


def test_prompt_hook_borrowed_by_cursor_or_copilot_shows_nothing_and_records_nothing(
    cli: Cli, mail: list[Message], root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Cursor's beforeSubmitPrompt and Copilot's userPromptSubmitted drop hook output: what
    # was "shown" there would never reach the model, so nothing may be recorded.
    copilot = json.dumps({"hook_event_name": "UserPromptSubmit", "session_id": "s1",
                          "timestamp": "2026-05-20T10:16:02.000Z", "prompt": "hi"})
    r = cli("--agent", "gemini", "hook", "claude", "user-prompt-submit", stdin=copilot)
    assert (r.code, r.out) == (0, "{}")
    monkeypatch.setenv("CURSOR_VERSION", "2.4.21")
    r = cli("--agent", "gemini", "hook", "claude", "user-prompt-submit",
            stdin=fixture("claude-user-prompt-submit"))
    assert (r.code, r.out) == (0, "{}")
    assert not (root / "broadcast" / "seen").exists()
    assert not (root / "sessions").exists()


def test_cursor_stop_does_not_continue_a_followup_or_an_aborted_turn(
    cli: Cli, mail: list[Message]
) -> None:
    data = json.loads(fixture("cursor-stop"))
    for change in ({"loop_count": 1}, {"status": "aborted"}):
        r = cli("--agent", "gemini", "hook", "cursor", "stop", stdin=json.dumps(data | change))
        assert (r.code, r.out) == (0, "{}")


def test_answer_commands_name_the_agent_and_the_mailbox_whatever_the_identity_came_from(
    cli: Cli, mail: list[Message], monkeypatch: pytest.MonkeyPatch, root: Path
) -> None:
    # The model's shell may lack MAILSLOT_AGENT and MAILSLOT_DIR (a host's hook got them,
    # not the shell tool): every command shown carries both.
    monkeypatch.setenv("MAILSLOT_AGENT", "gemini")
    r = cli("hook", "claude", "session-start", stdin=fixture("claude-session-start"))
    text = json.loads(r.out)["hookSpecificOutput"]["additionalContext"]
    assert text == expected(mail, START, tools=SPELLING["claude"], host="claude",
                            mark=mark_of(text))
    assert f" --agent gemini --dir {root} reply ID`" in text


def test_real_process_with_git_identity(mail: list[Message], isolated: Path) -> None:
    checkout = isolated / "work" / "gemini"
    (checkout / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(checkout)], check=True)
    exe = Path(sys.executable).parent / "mailslot"
    done = subprocess.run([str(exe), "hook", "codex", "session-start"],
                          input=fixture("codex-session-start"), capture_output=True,
                          cwd=checkout / "src", env=os.environ, timeout=60, check=False)
    assert (done.returncode, done.stderr) == (0, b"")
    assert json.loads(done.stdout) == {"hookSpecificOutput": {
        "hookEventName": "SessionStart",
        "additionalContext": expected(mail, START, mark=mark_of(done.stdout.decode()))}}
    assert done.stdout.decode("ascii").startswith('{"hookSpecificOutput"')


def test_output_header_is_the_framing_header(cli: Cli, mail: list[Message]) -> None:
    r = cli("--agent", "gemini", "hook", "gemini", "session-start",
            stdin=fixture("gemini-session-start"))
    text = json.loads(r.out)["hookSpecificOutput"]["additionalContext"]
    assert text.startswith(HEADER + "\n\n")


@pytest.mark.parametrize(("name", "host", "event", "shape"), [
    ("claude-post-tool-use", "claude", "post-tool-use", context("PostToolUse")),
    ("codex-post-tool-use", "codex", "post-tool-use", context("PostToolUse")),
    ("gemini-after-tool", "gemini", "after-tool", context("AfterTool")),
    ("copilot-post-tool-use", "copilot", "post-tool-use", field("additionalContext")),
])
def test_post_tool_input_gets_directed_mail_mid_turn(
    cli: Cli, mail: list[Message], name: str, host: str, event: str,
    shape: Callable[[str], object],
) -> None:
    r = cli("--agent", "gemini", "hook", host, event, stdin=fixture(name))
    assert (r.code, r.err) == (0, "")
    tools = SPELLING.get(host, "{}")
    assert json.loads(r.out) == shape(expected(mail[:1], LATER, agent="gemini",  # no broadcast
                                               tools=tools, host=host, mark=mark_of(r.out)))


def test_post_tool_hook_borrowed_by_cursor_shows_nothing(
    cli: Cli, mail: list[Message], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CURSOR_VERSION", "2.4.21")
    r = cli("--agent", "gemini", "hook", "claude", "post-tool-use",
            stdin=fixture("claude-post-tool-use"))
    assert (r.code, r.out) == (0, "{}")


@pytest.mark.parametrize(("event", "scope", "shown"), [
    ("session-start", START, slice(None)), ("before-agent", LATER, slice(None)),
    ("tool-result", LATER, slice(0, 1)),  # mid-turn: directed mail only
])
def test_pi_extension_input_gets_additional_context(
    cli: Cli, mail: list[Message], event: str, scope: str, shown: slice
) -> None:
    # What the extension `install pi --hooks` writes sends: the session id only.
    r = cli("--agent", "gemini", "hook", "pi", event, stdin='{"session_id": "pi-1"}')
    assert (r.code, r.err) == (0, "")
    assert json.loads(r.out) == {"additionalContext": expected(mail[shown], scope,
                                                               agent="gemini",
                                                               tools=SPELLING["pi"])}
