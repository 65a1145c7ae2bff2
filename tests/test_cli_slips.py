"""What a user's slip meets: a mistyped mailbox folder or own name, an empty body piped
by an agent's shell, an unknown option, a checkout whose name would be reserved. Each
is said in one line and writes nothing; nothing is silently accepted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Result
from mailslot.frontends.cli.command import declared
from support import snapshot

Cli = Callable[..., Result]
AN_ID = "2026-09-21_144808.123456_claude_to_gemini_7f3a9c2e"


def send(cli: Cli, sender: str, to: str, subject: str = "hello", *extra: str) -> str:
    r = cli("--agent", sender, "send", "--to", to, "--subject", subject, "--body", "b",
            "--json", *extra)
    assert r.code == 0, r.err
    return str(json.loads(r.out)["id"])


def no_mailbox(where: Path) -> str:
    return (f"mailslot: error: no mailbox at {where}: mailslot init {where}, or check "
            "--dir/MAILSLOT_DIR\n")


# A mistyped mailbox folder ------------------------------------------------------------
READING = [
    ["inbox"], ["inbox", "--for", "all"], ["sent"], ["read", AN_ID], ["mark-read", AN_ID],
    ["done", AN_ID], ["done", "--all"], ["reply", AN_ID, "--body", "x"], ["retract", AN_ID],
    ["status", AN_ID], ["stats"], ["who"], ["agent", "list"], ["agent", "show", "gemini"],
    ["doctor"],
    ["doctor", "--deep"], ["doctor", "--fix"], ["pending"], ["sessions"],
    ["sessions", "--started"], ["gate"], ["config", "show"], ["config", "get", "owner"],
    ["config", "export"], ["search", "hello"], ["thread", AN_ID], ["index", "--rebuild"],
    ["archive", "--list"], ["export"], ["backup", "mail.tar.gz"], ["watch", "--validate"],
    ["peer", "list"], ["peer", "remove", "b"], ["peer", "sync"],
]
"""A line of every command that only reads, checks or acts on what a mailbox holds."""


@pytest.mark.parametrize("argv", READING, ids=" ".join)
def test_a_reading_command_on_a_missing_mailbox_says_so_and_creates_nothing(
        cli: Cli, isolated: Path, argv: list[str]) -> None:
    typo = isolated / "mailbxo"
    r = cli("--dir", str(typo), "--agent", "gemini", *argv)
    assert (r.code, r.out, r.err) == (1, "", no_mailbox(typo))
    assert not typo.exists() and not (isolated / "work" / "mail.tar.gz").exists()


def test_every_command_declared_reading_is_in_that_list() -> None:
    """A new reading command is declared so (``existing=``) and tried above."""
    tried = {argv[0] for argv in READING}
    declaring = {c.name for c in declared() if c._existing}
    assert declaring == tried


def test_the_refusal_is_json_with_json(cli: Cli, isolated: Path) -> None:
    r = cli("--dir", str(isolated / "typo"), "who", "--json")
    assert r.code == 1 and json.loads(r.err)["code"] == "not_found"


def test_a_folder_of_other_files_is_no_mailbox(cli: Cli, isolated: Path) -> None:
    project = isolated / "project"
    project.mkdir()
    (project / "README.md").write_text("mine\n")
    before = snapshot(project)
    for argv in (["doctor"], ["--agent", "gemini", "inbox"], ["who"]):
        r = cli("--dir", str(project), *argv)
        assert (r.code, r.err) == (1, no_mailbox(project)), argv
    assert snapshot(project) == before
    assert cli("init", str(project)).code == 0  # asked for: now it is one
    assert cli("--dir", str(project), "--agent", "gemini", "inbox").out == "no messages\n"


def test_an_empty_folder_is_a_mailbox_as_init_makes_it(cli: Cli, root: Path) -> None:
    assert cli("init").out == f"{root} is now a mailbox (files)\n"
    assert os.listdir(root) == []
    assert cli("doctor").code == 0 and cli("who").out == "no agents known yet\n"


def test_a_send_and_init_still_create_the_mailbox(cli: Cli, isolated: Path) -> None:
    first = isolated / "new-box"
    assert cli("--dir", str(first), "--agent", "claude", "send", "--to", "gemini",
               "--subject", "s", "--body", "b").code == 0
    assert cli("--dir", str(first), "--agent", "gemini", "inbox").out.startswith("* ")
    second = isolated / "other-box"
    assert cli("init", str(second)).code == 0 and second.is_dir()


def test_whoami_names_a_missing_mailbox_and_creates_nothing(cli: Cli, isolated: Path) -> None:
    typo = isolated / "mailbxo"
    r = cli("--dir", str(typo), "--agent", "gemini", "whoami")
    assert r.code == 0 and r.out.splitlines()[-1] == (
        f"note:    no mailbox at {typo}: mailslot init {typo}, or check --dir/MAILSLOT_DIR")
    assert json.loads(cli("--dir", str(typo), "--agent", "gemini", "whoami", "--json")
                      .out)["mailbox_missing"].startswith(f"no mailbox at {typo}")
    assert not typo.exists()


@pytest.mark.parametrize("event", ["session-start", "user-prompt-submit", "stop"])
def test_a_hook_pointed_at_no_mailbox_stays_silent_and_creates_nothing(
        isolated: Path, event: str) -> None:
    project = isolated / "project"
    project.mkdir()
    (project / "notes.txt").write_text("mine\n")
    before = snapshot(project)
    payload = json.dumps({"session_id": "s-1", "source": "startup", "prompt": "go",
                          "cwd": str(isolated)}).encode()
    for where in (isolated / "typo", project):
        done = subprocess.run([sys.executable, "-m", "mailslot", "--dir", str(where),
                               "--agent", "gemini", "hook", "claude", event], input=payload,
                              capture_output=True, timeout=60, check=False)
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), where
    assert not (isolated / "typo").exists() and snapshot(project) == before


# A mistyped own name ------------------------------------------------------------------
def test_a_mistyped_own_name_beside_a_known_one_gets_did_you_mean(cli: Cli) -> None:
    send(cli, "claude", "alice")
    typo = cli("--agent", "alcie", "inbox")
    assert typo.out == "no messages\n"
    assert typo.err == ("mailslot: note: this mailbox knows no agent alcie (your name, from "
                        "--agent): did you mean alice?\n")
    assert "did you mean alice?" in cli("--agent", "alcie", "sent").err
    assert cli("--agent", "alice", "inbox").err == ""  # known: nothing to say
    assert cli("--agent", "zed", "inbox").err == ""  # new, and no name near it
    send(cli, "alcie", "claude")  # a name that sent is known
    assert cli("--agent", "alcie", "inbox").err == ""


def test_the_own_name_check_costs_an_inbox_with_mail_nothing(
        cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    send(cli, "claude", "alice")
    from mailslot.service import recipients

    def never(*args: object) -> list[str]:
        raise AssertionError("the roster was read for a known name with mail")

    monkeypatch.setattr(recipients, "known", never)
    r = cli("--agent", "alice", "inbox")
    assert r.code == 0 and r.err == "" and "claude: hello" in r.out


# An empty body ------------------------------------------------------------------------
@pytest.mark.parametrize("piped", ["", " \n\n"])
def test_an_empty_stdin_is_no_body_for_send_reply_and_broadcast(cli: Cli, piped: str) -> None:
    first = send(cli, "claude", "gemini")
    lines = {"send": ["--agent", "claude", "send", "--to", "gemini", "--subject", "s"],
             "reply": ["--agent", "gemini", "reply", first],
             "broadcast": ["--agent", "claude", "broadcast", "--subject", "s"]}
    for argv in lines.values():
        r = cli(*argv, stdin=piped)
        assert (r.code, r.out) == (2, ""), argv
        assert r.err == ("mailslot: error: no body: stdin was empty; pass --body TEXT or "
                         "pipe the body (--body '' sends an empty one); nothing was sent\n")
    listed = json.loads(cli("--agent", "gemini", "inbox", "--json").out)
    assert [m["id"] for m in listed] == [first]  # no reply, no broadcast, nothing new
    assert json.loads(cli("--agent", "claude", "inbox", "--json").out) == []


def test_an_empty_body_is_sent_when_asked_for(cli: Cli) -> None:
    r = cli("--agent", "claude", "send", "--to", "gemini", "--subject", "s", "--body", "",
            "--json")
    assert r.code == 0 and json.loads(r.out)["body"] == ""


def test_an_agents_shell_with_nothing_on_stdin_sends_nothing(root: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "mailslot", "--agent", "claude", "send",
                           "--to", "gemini", "--subject", "s"], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and done.stderr.startswith("mailslot: error: no body")
    assert not root.exists()


# One CLI, one way -----------------------------------------------------------------------
def test_json_short_is_the_tail_in_inbox_read_search_and_mark_read(cli: Cli) -> None:
    first, second = send(cli, "claude", "gemini", "alpha one"), send(cli, "claude", "gemini",
                                                                     "alpha two")
    tails = {first: first.rsplit("_", 1)[1], second: second.rsplit("_", 1)[1]}

    def shorts(*argv: str) -> dict[str, str]:
        shown = json.loads(cli("--agent", "gemini", *argv, "--json").out)
        return {m["id"]: m["short"] for m in (shown if isinstance(shown, list) else [shown])}

    assert shorts("inbox") == tails
    assert shorts("read", first, "--peek") == {first: tails[first]}
    assert shorts("read", tails[second]) == {second: tails[second]}
    assert shorts("search", "alpha") == tails
    assert shorts("mark-read", first) == {first: tails[first]}
    assert "· " + tails[first] in cli("--agent", "gemini", "search", "alpha").out


def test_a_listing_of_other_mailboxes_shows_one_form_of_id(cli: Cli) -> None:
    """``inbox --for`` lists mail the caller also sent, or sent to several: counted
    once, it is its tail like every other line, not its whole id."""
    mine = send(cli, "claude", "gemini")
    both = json.loads(cli("--agent", "codex", "send", "--to", "gemini,qwen", "--subject", "s",
                          "--body", "b", "--json").out)["id"]
    for argv in (["--for", "gemini"], ["--for", "all"]):
        listed = json.loads(cli("--agent", "claude", "inbox", *argv, "--json").out)
        assert {m["short"] for m in listed} == {mine.rsplit("_", 1)[1],
                                                both.rsplit("_", 1)[1]}, argv
        text = cli("--agent", "claude", "inbox", *argv).out
        assert mine not in text and both not in text


@pytest.mark.parametrize("argv", [["send", "--to", "x", "--subject", "s", "--bogus"],
                                  ["--bogus", "inbox"], ["inbox", "--limit"]])
def test_a_usage_error_points_at_the_commands_help(cli: Cli, argv: list[str]) -> None:
    r = cli(*argv)
    assert r.code == 2 and r.err.endswith(f"(see 'mailslot {argv[argv[0] == '--bogus']} "
                                          "--help')\n")


def test_init_takes_the_mailbox_as_its_word(cli: Cli, isolated: Path) -> None:
    box = isolated / "team"
    assert cli("init", str(box)).out == f"{box} is now a mailbox (files)\n"
    assert cli("init", str(box)).out == f"{box} was already a mailbox (files)\n"
    clash = cli("--dir", str(isolated / "other"), "init", str(box))
    assert clash.code == 2 and "name two mailboxes" in clash.err
    assert not (isolated / "other").exists()


def test_config_show_and_get_print_the_value_alone(cli: Cli) -> None:
    assert cli("config", "set", "owner", "sarah").code == 0
    for argv in (["show"], ["get", "owner"]):
        r = cli("config", *argv)
        assert r.code == 0 and r.err == "", argv
        assert json.loads(cli("config", *argv, "--json").out)["version"]


# Hooks and derived names ----------------------------------------------------------------
def test_a_hook_given_an_unknown_argument_warns_and_runs(cli: Cli, root: Path) -> None:
    send(cli, "claude", "gemini", "Schema ready")
    for n, extra in enumerate((["--bogus"], ["--bogus", "value"], ["--bogus=1"])):
        payload = json.dumps({"session_id": f"s-{n}", "source": "startup"})
        done = subprocess.run([sys.executable, "-m", "mailslot", "--agent", "gemini", "hook",
                               "claude", "session-start", *extra], input=payload,
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stderr == (f"mailslot hook: ignored unknown argument(s): "
                               f"{' '.join(extra)}\n")
        shown = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        assert "> Schema ready" in shown


def checkout(tmp_path: Path, name: str) -> Path:
    top = tmp_path / name
    (top / ".git").mkdir(parents=True)
    os.chdir(top)
    return top


def test_a_checkout_whose_name_would_be_reserved_is_refused_as_agent_would_be(
        cli: Cli, tmp_path: Path, root: Path) -> None:
    top = checkout(tmp_path, "_under")
    r = cli("send", "--to", "gemini", "--subject", "s", "--body", "b")
    assert r.code == 2 and r.err == (
        "mailslot: error: the git checkout's name '_under' does not make an agent name "
        "(agent name '_under' is reserved); pass --agent NAME (a-z, 0-9 and '-') or set "
        "MAILSLOT_AGENT\n")
    explicit = cli("--agent", "_under", "send", "--to", "gemini", "--subject", "s",
                   "--body", "b")
    assert (explicit.code, explicit.err) == (
        2, "mailslot: error: agent name (from --agent) '_under' is reserved\n")
    me = json.loads(cli("whoami", "--json").out)
    assert me["name"] is None and me["git_toplevel"] == str(top)
    assert not root.exists()  # nothing was sent as "under"


def test_a_hook_in_such_a_checkout_stays_out_of_the_way(cli: Cli, tmp_path: Path,
                                                       root: Path) -> None:
    send(cli, "claude", "under")
    top = checkout(tmp_path, "_under")
    done = subprocess.run([sys.executable, "-m", "mailslot", "hook", "claude",
                           "session-start"], input='{"session_id": "s-1"}', cwd=top,
                          capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == "mailslot hook: agent name (from git) '_under' is reserved\n"
    assert not (root / "hook-sessions").exists()
