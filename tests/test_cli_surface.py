"""The CLI surface (identity, short ids, typos, paging, errors, completion)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Result
from mailslot import Mailbox, __version__

Cli = Callable[..., Result]


def send(cli: Cli, sender: str, to: str, subject: str = "hello", *extra: str) -> str:
    r = cli("--agent", sender, "send", "--to", to, "--subject", subject, "--body", "b",
            "--json", *extra)
    assert r.code == 0, r.err
    return str(json.loads(r.out)["id"])


# Identity ---------------------------------------------------------------------------------
def test_whoami_says_who_and_from_where(cli: Cli, root: Path) -> None:
    me = json.loads(cli("whoami", "--agent", "Claude", "--json").out)
    assert me["name"] == "claude" and me["source"] == "--agent"
    assert me["mailbox"] == str(root) and me["store"] == "FileStore"
    r = cli("whoami")
    assert r.code == 1 and "agent:   none (no identity" in r.out


@pytest.mark.parametrize(("folder", "name"), [("My_App", "my-app"), ("foo.js", "foo-js"),
                                              ("Über Tool", "uber-tool")])
def test_a_git_folder_name_is_made_an_agent_name(cli: Cli, tmp_path: Path, folder: str,
                                                 name: str) -> None:
    top = tmp_path / folder
    (top / ".git").mkdir(parents=True)
    os.chdir(top)
    me = json.loads(cli("whoami", "--json").out)
    assert (me["name"], me["source"], me["git_toplevel"]) == (name, "git", str(top))


def test_a_git_folder_name_that_makes_no_name_says_which_option(cli: Cli,
                                                                tmp_path: Path) -> None:
    top = tmp_path / "___"
    (top / ".git").mkdir(parents=True)
    os.chdir(top)
    r = cli("send", "--to", "gemini", "--subject", "s", "--body", "b")
    assert r.code == 2 and "'___' does not make an agent name (" in r.err
    assert "; pass --agent NAME" in r.err


# Global options -------------------------------------------------------------------------
def test_global_options_before_or_after_and_in_help(cli: Cli) -> None:
    mid = send(cli, "claude", "gemini")
    before = cli("--json", "--agent", "gemini", "inbox").out
    after = cli("inbox", "--agent", "gemini", "--json").out
    assert json.loads(before) == json.loads(after) and json.loads(after)[0]["id"] == mid
    top = cli("--help").out
    for option in ("--dir", "--agent", "--json", "--no-color", "--version"):
        assert option in top
    assert cli("--version").out == f"mailslot {__version__}\n"


def test_server_commands_do_not_claim_a_git_default(cli: Cli) -> None:
    for command in ("serve", "install"):
        text = " ".join(cli(command, "--help").out.split())
        assert "the git checkout's name is not used" in text
        assert "then the git toplevel" not in text
    assert "examples:" in cli("send", "--help").out


def test_a_mistyped_command_gets_did_you_mean(cli: Cli) -> None:
    r = cli("--agent", "claude", "sedn", "--to", "x")
    assert r.code == 2 and r.err == ("mailslot: error: unknown command 'sedn': did you mean "
                                     "send? (see 'mailslot --help')\n")


def test_errors_are_json_with_json(cli: Cli) -> None:
    assert cli("init").code == 0
    r = cli("--agent", "gemini", "read", "999999", "--json")
    assert r.code == 1 and r.out == ""
    assert json.loads(r.err) == {"error": "no message '999999' for gemini",
                                 "code": "not_found", "exit": 1}
    usage = cli("--json", "inbox", "--limit", "x")
    assert usage.code == 2 and json.loads(usage.err)["code"] == "usage"


# Recipients -------------------------------------------------------------------------------
def test_a_typo_in_a_recipient_is_refused_and_new_sends_anyway(cli: Cli, root: Path) -> None:
    send(cli, "claude", "gemini")
    r = cli("--agent", "claude", "send", "--to", "gemnii", "--subject", "s", "--body", "b")
    assert r.code == 2 and "did you mean gemini?" in r.err and "known agents: gemini" in r.err
    assert not (root / "agents" / "gemnii").exists()
    r = cli("--agent", "claude", "send", "--to", "gemnii", "--subject", "s", "--body", "b",
            "--new")
    assert r.code == 0 and "gemnii had no mailbox; a new one was made" in r.err


def test_a_new_name_is_accepted_with_a_note(cli: Cli) -> None:
    r = cli("--agent", "claude", "send", "--to", "reviewer", "--subject", "s", "--body", "b")
    assert r.code == 0 and r.err == ("mailslot: note: reviewer had no mailbox; a new one "
                                     "was made\n")


def test_send_to_all_points_to_broadcast(cli: Cli) -> None:
    r = cli("--agent", "claude", "send", "--to", "all", "--subject", "s", "--body", "b")
    assert r.code == 2 and "broadcast" in r.err


def test_wake_to_an_agent_not_opted_in_says_so_at_once(cli: Cli) -> None:
    send(cli, "claude", "gemini")
    r = cli("--agent", "claude", "send", "--to", "gemini", "--subject", "s", "--body", "b",
            "--wake")
    assert r.code == 0 and "gemini will not be woken: its config does not allow" in r.err


def test_agent_remove_archives_the_mailbox(cli: Cli, root: Path) -> None:
    mid = send(cli, "claude", "gemnii", "s", "--new")
    r = cli("agent", "remove", "gemnii", "--json")
    assert r.code == 0
    archived = Path(json.loads(r.out)["archived"])
    assert archived.parent == root / "archive" and (archived / "new" / f"{mid}.md").is_file()
    assert "gemnii" not in [a["name"] for a in json.loads(cli("who", "--json").out)]
    assert cli("agent", "remove", "gemnii").code == 1


# Ids and lists ---------------------------------------------------------------------------
def test_short_ids_work_wherever_an_id_does(cli: Cli) -> None:
    mid = send(cli, "claude", "gemini")
    tail = mid.rsplit("_", 1)[1]
    assert json.loads(cli("--agent", "gemini", "inbox", "--json").out)[0]["short"] == tail
    assert "state:    read" in cli("--agent", "gemini", "read", tail).out
    assert json.loads(cli("status", mid[:17], "--json").out)["id"] == mid
    assert cli("--agent", "gemini", "done", mid[:20]).out == f"done: {mid}\n"


def test_an_ambiguous_prefix_lists_the_candidates(cli: Cli) -> None:
    a, b = send(cli, "claude", "gemini", "one"), send(cli, "claude", "gemini", "two")
    r = cli("--agent", "gemini", "read", a[:8])
    assert r.code == 2 and "ambiguous" in r.err and a in r.err and b in r.err


def test_sent_lists_what_i_sent_with_states(cli: Cli) -> None:
    a = send(cli, "claude", "gemini", "one")
    b = send(cli, "claude", "gemini,codex", "two")
    send(cli, "gemini", "claude", "not mine")
    cli("--agent", "gemini", "done", a)
    listed = json.loads(cli("--agent", "claude", "sent", "--json").out)
    assert [m["id"] for m in listed] == [b, a]
    assert {r["agent"]: r["state"] for r in listed[0]["recipients"]} == {
        "gemini": "unread", "codex": "unread"}
    assert listed[1]["recipients"][0]["state"] == "done"
    assert {r["agent"]: r["rung"] for r in listed[0]["recipients"]} == {
        "gemini": "stored", "codex": "stored"}
    text = cli("--agent", "claude", "sent").out
    waits = "(no live session and no wake (off): it waits for the agent's next session)"
    assert f"gemini stored {waits}, codex stored {waits}" in text


def test_inbox_pages_and_says_how_many_more(cli: Cli) -> None:
    ids = [send(cli, "claude", "gemini", f"m{i}") for i in range(5)]
    text = cli("--agent", "gemini", "inbox", "--limit", "2").out
    last = ids[3].rsplit("_", 1)[1]
    assert text.splitlines()[-1] == f"3 more: mailslot inbox --before {last}"
    second = json.loads(cli("--agent", "gemini", "inbox", "--limit", "2", "--page", "2",
                            "--json").out)
    after = json.loads(cli("--agent", "gemini", "inbox", "--limit", "2", "--before", last,
                           "--json").out)
    assert [m["id"] for m in second] == [m["id"] for m in after] == [ids[2], ids[1]]


def test_inbox_with_only_done_mail_points_to_all(cli: Cli) -> None:
    mid = send(cli, "claude", "gemini")
    cli("--agent", "gemini", "done", mid)
    assert cli("--agent", "gemini", "inbox").out == (
        "no unread or open mail (1 done; 'mailslot inbox --all' shows them)\n")


def test_dates_are_stored_in_utc_and_shown_with_a_zone(cli: Cli,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    mid = send(cli, "claude", "gemini")
    stored = json.loads(cli("--agent", "gemini", "read", mid, "--json").out)["date"]
    assert stored.endswith("+00:00")
    import time
    time.tzset()
    try:
        shown = cli("--agent", "gemini", "read", mid).out
        assert "IST" in next(line for line in shown.splitlines() if line.startswith("date:"))
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


# Completion --------------------------------------------------------------------------------
def test_bash_completion_completes_commands_agents_and_ids(cli: Cli, tmp_path: Path) -> None:
    mid = send(cli, "claude", "gemini")
    script = tmp_path / "complete.bash"
    script.write_text(cli("completion", "bash").out)
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "mailslot").exists()

    def complete(line: str) -> list[str]:
        words = line.split(" ")
        program = (f"source {script}; COMP_WORDS=({' '.join(repr(w) for w in words)}); "
                   f"COMP_CWORD={len(words) - 1}; _mailslot; printf '%s\\n' \"${{COMPREPLY[@]}}\"")
        env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
        out = subprocess.run([shutil.which("bash") or "bash", "-c", program], env=env,
                             capture_output=True, text=True, timeout=30, check=True).stdout
        return out.split()

    assert complete("mailslot se") == ["send", "sent", "serve", "sessions", "search"]
    assert complete("mailslot send --to gem") == ["gemini"]
    assert complete("mailslot --agent gemini read ") == [mid.rsplit("_", 1)[1]]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_other_shells_get_a_script(cli: Cli, shell: str) -> None:
    text = cli("completion", shell).out
    assert "completion --words" in text and "agents" in text and "ids" in text
    assert "send inbox sent read" in text  # the command names are baked in


def test_a_removed_agent_gets_a_fresh_mailbox_in_the_same_process(
        box: Callable[[str | None], Mailbox], root: Path) -> None:
    claude = box("claude")
    claude.send("reviewer", "one", "x")
    where = claude.remove_agent("reviewer")
    second = claude.send("reviewer", "two", "y")
    assert (root / "agents" / "reviewer" / "new" / f"{second.id}.md").is_file()
    assert len(list((Path(where) / "new").iterdir())) == 1


def test_sent_includes_broadcasts_with_who_was_served(cli: Cli) -> None:
    send(cli, "gemini", "claude")
    bid = json.loads(cli("--agent", "claude", "broadcast", "--subject", "b", "--body", "x",
                         "--json").out)["id"]
    cli("--agent", "gemini", "read", bid)
    listed = json.loads(cli("--agent", "claude", "sent", "--json").out)
    assert listed[0]["id"] == bid and listed[0]["to"] == ["all"]
    assert listed[0]["recipients"] == [{"agent": "gemini", "state": "read",
                                        "read_at": listed[0]["recipients"][0]["read_at"],
                                        "done_at": None, "rung": "read", "surfaced": None,
                                        "wake": None, "replied_at": None, "waiting": None,
                                        "seen": None, "woken_at": None,
                                        "timing": listed[0]["recipients"][0]["timing"]}]
    assert set(listed[0]["recipients"][0]["timing"]) == {"read"}
