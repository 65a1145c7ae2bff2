"""``mailslot config``: the config read and changed from the command line, on the file
store and on PostgreSQL, checked as ``watch --validate`` checks, never over a change made
since the version it was given."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Result
from mailslot import FileStore
from mailslot.backends import open_store
from mailslot.service.config_edit import parse_value
from mailslot.store import Store
from pgcluster import Cluster
from support import put_config

Cli = Callable[..., Result]


@pytest.fixture(params=["files", "postgres"])
def location(request: pytest.FixtureRequest, root: Path) -> str:
    """A mailbox with a config, in a folder or in a PostgreSQL database."""
    if request.param == "files":
        store: Store = FileStore(root)
        where = str(root)
    else:
        cluster: Cluster = request.getfixturevalue("pg_cluster")
        where = cluster.new_database()
        store = open_store(where)
    put_config(store, {"owner": "sarah", "custom": {"kept": True},
                       "agents": {"gemini": {"note": "mine"}}})
    return where


def config_of(location: str) -> dict[str, object]:
    return open_store(location).load_config()


def version_of(cli: Cli, location: str) -> str:
    shown = cli("config", "show", "--json", "--store", location)
    assert shown.code == 0, shown.err
    return str(json.loads(shown.out)["version"])


def test_set_get_unset_and_show_keep_every_other_key(cli: Cli, location: str) -> None:
    for key, value in [("agents.codex.command", '["notify-me", "{id}"]'),
                       ("agents.codex.wake_method", "command"),
                       ("agents.codex.wake_on_mail", "true"),
                       ("agents.codex.midturn_interval_seconds", "45")]:
        done = cli("config", "set", key, value, "--store", location)
        assert done.code == 0 and done.out.startswith(f"set {key} (config version "), done.err
    got = cli("config", "get", "agents.codex", "--store", location)
    assert json.loads(got.out) == {"command": ["notify-me", "{id}"], "wake_method": "command",
                                   "wake_on_mail": True, "midturn_interval_seconds": 45}
    assert got.err == ""  # the version is for --json (below) and for changes, not a note
    assert cli("config", "unset", "agents.gemini.note", "--store", location).code == 0
    shown = json.loads(cli("config", "show", "--store", location).out)
    assert shown == config_of(location)
    assert shown["custom"] == {"kept": True} and shown["owner"] == "sarah"
    assert shown["agents"]["gemini"] == {}  # type: ignore[index]
    missing = cli("config", "get", "agents.gemini.note", "--store", location)
    assert (missing.code, missing.err) == (
        1, "mailslot: error: agents.gemini.note is not set in the config\n")


@pytest.mark.parametrize(("key", "value", "said"), [
    ("agents.codex.wake_method", "bogus", "'bogus' is not a wake method"),
    ("max_body_bytes", "-1", "max_body_bytes must be a positive whole number"),
    ("owner", "Not A Name", "owner"),
    ("agents.codex.midturn_interval_seconds", "soon", "midturn_interval_seconds must be"),
    ("agents", "[]", "agents must be an object"),
])
def test_a_value_watch_validate_would_reject_is_refused_and_nothing_is_written(
        cli: Cli, location: str, key: str, value: str, said: str) -> None:
    before = config_of(location)
    refused = cli("config", "set", key, value, "--store", location)
    assert refused.code == 2 and refused.out == ""
    assert refused.err.startswith("mailslot: error: ") and refused.err.count("\n") == 1
    assert said in refused.err and refused.err.endswith("; nothing was changed\n")
    assert config_of(location) == before


def test_a_problem_already_there_does_not_block_fixing_another_key(
        cli: Cli, location: str) -> None:
    put_config(open_store(location), {"owner": "sarah", "max_body_bytes": "big"})
    assert cli("config", "set", "custom", "1", "--store", location).code == 0
    assert cli("config", "set", "max_body_bytes", "65536", "--store", location).code == 0
    assert config_of(location) == {"owner": "sarah", "max_body_bytes": 65536, "custom": 1}


def test_a_change_from_an_older_version_is_a_conflict(cli: Cli, location: str) -> None:
    seen = version_of(cli, location)
    # meanwhile the web page (or an editor, or install --wake) changes the config
    open_store(location).update_config(lambda raw: raw.update(meanwhile=True) is None)
    after = config_of(location)
    for argv in (["set", "custom", "2"], ["unset", "custom"]):
        refused = cli("config", *argv, "--if-version", seen, "--store", location)
        assert refused.code == 1, refused.err
        assert refused.err.startswith(f"mailslot: error: the config changed since version "
                                      f"{seen} (it is now ")
        assert config_of(location) == after
    now = version_of(cli, location)
    assert cli("config", "set", "custom", "2", "--if-version", now,
               "--store", location).code == 0
    assert config_of(location)["custom"] == 2


def test_export_and_import_the_whole_config(cli: Cli, location: str, tmp_path: Path) -> None:
    saved = tmp_path / "config.json"
    done = cli("config", "export", str(saved), "--store", location)
    assert done.code == 0, done.err
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    assert json.loads(saved.read_text()) == config_of(location)
    again = cli("config", "export", str(saved), "--store", location)
    assert again.code == 2 and "already exists; nothing was written" in again.err
    exported = config_of(location)
    seen = version_of(cli, location)
    assert cli("config", "set", "agents.codex.note", "later", "--store", location).code == 0
    conflict = cli("config", "import", str(saved), "--if-version", seen, "--store", location)
    assert conflict.code == 1 and "changed since version" in conflict.err
    assert cli("config", "import", str(saved), "--store", location).code == 0
    assert config_of(location) == exported
    piped = cli("config", "export", "--store", location)
    assert json.loads(piped.out) == exported


@pytest.mark.parametrize(("text", "said"), [
    ("[1, 2]", "must be a JSON object"),
    ("{not json", "is not valid JSON"),
    ('{"agents": {"codex": {"wake_on_mail": true, "wake_method": "bogus"}}}',
     "'bogus' is not a wake method"),
])
def test_an_import_that_would_not_validate_changes_nothing(
        cli: Cli, location: str, tmp_path: Path, text: str, said: str) -> None:
    before = config_of(location)
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    refused = cli("config", "import", str(bad), "--store", location)
    assert refused.code == 2 and said in refused.err and refused.err.count("\n") == 1
    assert config_of(location) == before


def test_changes_at_once_from_several_processes_all_land(location: str) -> None:
    env = {**os.environ, "MAILSLOT_STORE": location}
    setters = [subprocess.Popen([sys.executable, "-m", "mailslot", "config", "set",
                                 f"agents.a{n}.note", f"n{n}"], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
               for n in range(4)]
    outs = [s.communicate(timeout=60) for s in setters]
    assert [s.returncode for s in setters] == [0] * 4, outs
    agents = config_of(location)["agents"]
    assert {k: v for k, v in agents.items() if k.startswith("a")} == {  # type: ignore[union-attr]
        f"a{n}": {"note": f"n{n}"} for n in range(4)}


def test_an_agent_role_cannot_change_the_config_on_postgres(
        cli: Cli, pg_cluster: Cluster) -> None:
    url = pg_cluster.new_database()
    admin = open_store(url)
    put_config(admin, {"owner": "sarah"})
    admin.grant("codex")  # type: ignore[attr-defined]
    as_codex = url.replace("postgres@", "mailslot_codex@")
    refused = cli("config", "set", "owner", "codex", "--store", as_codex)
    assert refused.code == 1 and refused.err.count("\n") == 1, refused.err
    assert refused.err.startswith("mailslot: error: ") and "permission denied" in refused.err
    assert admin.load_config() == {"owner": "sarah"}
    shown = cli("config", "show", "--store", as_codex)  # reading is allowed
    assert json.loads(shown.out) == {"owner": "sarah"}


@pytest.mark.parametrize(("text", "value"), [
    ("true", True), ("30", 30), ("1.5", 1.5), ('["a", "b"]', ["a", "b"]),
    ('{"x": 1}', {"x": 1}), ("null", None), ("tmux", "tmux"), ('"30"', "30"),
    ("work:1.0", "work:1.0"), ("", ""),
])
def test_a_value_is_json_when_it_parses_and_text_otherwise(text: str, value: object) -> None:
    assert parse_value(text) == value


@pytest.mark.parametrize("argv", [["get"], ["set", "owner"], ["show", "x"],
                                  ["get", "agents..codex"], ["set", ".", "1"]])
def test_a_malformed_config_command_is_one_line_and_exit_2(
        cli: Cli, location: str, argv: list[str]) -> None:
    refused = cli("config", *argv, "--store", location)
    assert refused.code == 2 and refused.err.startswith("mailslot: error: ")
    assert refused.err.count("\n") == 1


# Settings only the owner changes ---------------------------------------------------------
GUARDED = {"owner": "sarah", "require_credentials": True,
           "governor": {"paused": ["alice"], "hop_limit": 10}}


def with_value(config: dict[str, object], key: str, text: str) -> dict[str, object]:
    """``config`` with ``key`` set as ``config set KEY TEXT`` sets it."""
    changed = json.loads(json.dumps(config))
    node = changed
    *above, last = key.split(".")
    for part in above:
        node = node.setdefault(part, {})
    node[last] = parse_value(text)
    return changed  # type: ignore[no-any-return]


@pytest.mark.parametrize(("key", "value"), [
    ("governor.paused", "[]"), ("governor.hop_limit", "null"), ("owner", "alice"),
    ("require_credentials", "false")])
def test_only_the_owner_or_no_identity_changes_the_governor_owner_and_credentials(
        cli: Cli, location: str, tmp_path: Path, key: str, value: str) -> None:
    """A paused agent cannot lift its own pause (or its limits), make itself the owner
    or let unregistered writers in: not by set, unset, merge or import; the owner and
    a process with no identity (the person at the mailbox) can."""
    put_config(open_store(location), GUARDED)
    wanted = with_value(GUARDED, key, value)
    lifted = tmp_path / "lifted.json"
    lifted.write_text(json.dumps(wanted))
    top = key.split(".")[0]
    for argv in (["set", key, value], ["unset", key], ["import", str(lifted)],
                 ["set", "--merge", json.dumps({top: wanted[top]})]):
        refused = cli("--agent", "alice", "config", *argv, "--store", location)
        assert refused.code == 1 and refused.err.count("\n") == 1, (argv, refused.err)
        assert refused.err == (f"mailslot: error: only the owner, sarah, may change {top} in "
                               "the config, and this process speaks as alice; nothing was "
                               "changed (run it as --agent sarah, or a process with no "
                               "agent identity: outside any git checkout, without --agent "
                               "or MAILSLOT_AGENT)\n")
        assert config_of(location) == GUARDED
    mine = cli("--agent", "alice", "config", "set", "agents.alice.note", "mine",
               "--store", location)
    assert mine.code == 0, mine.err  # the rest of the config is not the owner's alone
    for who in (["--agent", "sarah"], []):  # the owner; no identity at all
        put_config(open_store(location), GUARDED)
        done = cli(*who, "config", "set", key, value, "--store", location)
        assert done.code == 0, done.err
        assert config_of(location) == wanted


def test_a_new_user_in_a_checkout_is_told_how_to_name_the_owner(
        cli: Cli, location: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no owner yet, a person in a project's checkout speaks as the checkout: the
    refusal says how to set the owner, and doing what it says sets it."""
    put_config(open_store(location), {})
    project = tmp_path / "proj"
    (project / ".git").mkdir(parents=True)
    monkeypatch.chdir(project)
    monkeypatch.delenv("MAILSLOT_AGENT", raising=False)
    refused = cli("config", "set", "owner", "sarah", "--store", location)
    assert refused.code == 1 and refused.err.count("\n") == 1
    assert "this process speaks as proj" in refused.err
    assert "outside any git checkout, without --agent or MAILSLOT_AGENT" in refused.err
    monkeypatch.chdir(tmp_path)
    done = cli("config", "set", "owner", "sarah", "--store", location)
    assert done.code == 0, done.err
    assert config_of(location)["owner"] == "sarah"


# Several keys in one change ---------------------------------------------------------------
def test_keys_that_need_each_other_are_set_in_one_command_and_a_refusal_says_how(
        cli: Cli, location: str) -> None:
    """``wake_on_mail`` needs ``wake_method``, and ``tmux`` needs its pane and program:
    one at a time each is refused, saying which command sets them together; that
    command, its placeholders filled in, sets them all at once."""
    before = config_of(location)
    alone = cli("config", "set", "agents.bob.wake_on_mail", "true", "--store", location)
    assert alone.code == 2 and alone.err.count("\n") == 1
    assert alone.err.endswith(
        "nothing was changed; set them together: mailslot config set "
        "agents.bob.wake_on_mail true agents.bob.wake_method WAKE_METHOD\n")
    tmux = cli("config", "set", "agents.bob.wake_method", "tmux", "--store", location)
    assert tmux.code == 2 and tmux.err.endswith(
        "; set them together: mailslot config set agents.bob.wake_method tmux "
        "agents.bob.tmux_target TMUX_TARGET agents.bob.tmux_program TMUX_PROGRAM\n")
    assert config_of(location) == before
    advised = shlex.split(tmux.err.split("set them together: mailslot ")[1])
    filled = {"TMUX_TARGET": "work:1", "TMUX_PROGRAM": "claude"}
    done = cli(*[filled.get(w, w) for w in advised], "agents.bob.wake_on_mail", "true",
               "--store", location)
    assert done.code == 0, done.err
    assert done.out.startswith("set agents.bob.wake_method, agents.bob.tmux_target, "
                               "agents.bob.tmux_program, agents.bob.wake_on_mail (config "
                               "version ")
    assert config_of(location)["agents"]["bob"] == {  # type: ignore[index]
        "wake_method": "tmux", "tmux_target": "work:1", "tmux_program": "claude",
        "wake_on_mail": True}


def test_a_json_object_is_merged_in_one_change(cli: Cli, location: str) -> None:
    merged = cli("config", "set", "--merge", json.dumps({"agents": {"codex": {
        "wake_on_mail": True, "wake_method": "command", "command": ["notify", "{id}"]}},
        "custom": {"more": 1}}), "--store", location)
    assert merged.code == 0, merged.err
    assert merged.out.startswith("set agents.codex.wake_on_mail, agents.codex.wake_method, "
                                 "agents.codex.command, custom.more (config version ")
    config = config_of(location)
    assert config["custom"] == {"kept": True, "more": 1}  # other keys kept
    assert config["agents"] == {"gemini": {"note": "mine"}, "codex": {  # type: ignore[comparator-overlap]
        "wake_on_mail": True, "wake_method": "command", "command": ["notify", "{id}"]}}


@pytest.mark.parametrize("argv", [
    ["set", "custom.a", "1", "agents.codex.wake_method", "bogus"],  # the second refused
    ["set", "custom.a", "1", "custom.b"],  # a key without its value
    ["set", "--merge", "[1]"], ["set", "--merge", "{}"], ["set", "--merge", "{nope"],
    ["set", "--merge", '{"custom": 1}', "custom", "2"], ["get", "custom", "--merge", "{}"]])
def test_a_change_of_several_keys_is_whole_or_nothing(cli: Cli, location: str,
                                                      argv: list[str]) -> None:
    before = config_of(location)
    refused = cli("config", *argv, "--store", location)
    assert refused.code == 2 and refused.err.count("\n") == 1, refused.err
    assert refused.err.startswith("mailslot: error: ")
    assert config_of(location) == before
