"""``mailslot install HOST``: each host's files, in temporary home and project folders."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import Result
from mailslot import host_registry as hosts
from pgcluster import Cluster
from support import fake_program

Cli = Callable[..., Result]
EXE = str(Path(sys.executable).parent / "mailslot")
HOST_NAMES = hosts.NAMES
HOSTS = {h.name: h for h in hosts.every()}
HOOKED = [h for h in HOST_NAMES if HOSTS[h].hook_file is not None]
MCP_FILES = [h for h in HOST_NAMES if HOSTS[h].mcp_format != "extension"]
"""The hosts whose MCP settings mailslot merges into (Pi gets a file of its own)."""


def where(rel: str, home: Path, project: Path) -> Path:
    return home / rel[2:] if rel.startswith("~/") else project / rel


def mcp_file(host: str, scope: str, home: Path, project: Path) -> Path:
    return where(HOSTS[host].mcp_path[scope], home, project)  # type: ignore[index]


def hook_file(host: str, scope: str, home: Path, project: Path) -> Path:
    spec = HOSTS[host].hook_file
    assert spec is not None
    return where(spec.path[scope], home, project)  # type: ignore[index]


def load(path: Path) -> dict[str, Any]:
    text = path.read_text()
    return tomllib.loads(text) if path.suffix == ".toml" else dict(json.loads(text))


def servers_in(doc: dict[str, Any], host: str) -> dict[str, Any]:
    """The host's MCP servers in its settings (``a.b``: ``doc[a][b]``)."""
    for part in HOSTS[host].mcp_container.split("."):
        doc = doc[part]
    return doc


def server_of(doc: dict[str, Any], host: str = "claude") -> dict[str, Any]:
    return dict(servers_in(doc, host)["mailslot"])


def serve_args(agent: str = "ada") -> list[str]:
    return ["serve", "--agent", agent, "--dir", os.environ["MAILSLOT_DIR"]]


def hook_command(host: str, event: str, agent: str = "ada") -> str:
    return shlex.join([EXE, "hook", host, event, "--agent", agent,
                       "--dir", os.environ["MAILSLOT_DIR"]])


def install(cli: Cli, host: str, *options: str, agent: str = "ada") -> Result:
    return cli("--agent", agent, "install", host, *options)


@pytest.fixture
def claude_on_path(bin_dir: Path) -> Path:
    """A ``claude`` recent enough for the waiter (``install --wake`` reads its version)."""
    return fake_program(bin_dir, "claude", "2.1.332 (Claude Code)")


@pytest.mark.parametrize("scope", ["project", "user"])
@pytest.mark.parametrize("host", MCP_FILES)
def test_fresh_file(cli: Cli, host: str, scope: str, home: Path, project: Path) -> None:
    r = install(cli, host, "--scope", scope)
    assert r.code == 0, r.err
    path = mcp_file(host, scope, home, project)
    assert f"created: {path}" in r.out
    entry = server_of(load(path), host)
    written = {"opencode": {"command": [EXE, *serve_args()]},
               "kilo": {"command": [EXE, *serve_args()]},
               "cline": {"transport": {"type": "stdio", "command": EXE,
                                       "args": serve_args()}}}.get(
        host, {"command": EXE, "args": serve_args()})
    assert entry == {**HOSTS[host].mcp_fields, **written}


@pytest.mark.parametrize("host", MCP_FILES)
def test_other_servers_and_settings_are_kept(cli: Cli, host: str, home: Path,
                                             project: Path) -> None:
    path = mcp_file(host, "project", home, project)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".toml":
        path.write_text('# my settings\nmodel = "o3"\n\n[mcp_servers.other]\n'
                        'command = "other-server"  # keep me\n')
    else:
        servers: Any = {"other": {"command": "other-server", "args": ["x"]}}
        for part in reversed(HOSTS[host].mcp_container.split(".")):
            servers = {part: servers}
        path.write_text(json.dumps({"theme": "dark", **servers}, indent=4) + "\n")
    before = load(path)
    assert install(cli, host, "--scope", "project").code == 0
    after = load(path)
    container = HOSTS[host].mcp_container.split(".")[0]
    found = servers_in(after, host)
    assert found["other"] == servers_in(before, host)["other"]
    assert list(found) == ["other", "mailslot"]
    assert {k: v for k, v in after.items() if k != container} == {
        k: v for k, v in before.items() if k != container}
    if path.suffix == ".toml":
        assert "# my settings" in path.read_text() and "# keep me" in path.read_text()
    else:
        assert '\n    "theme": "dark"' in path.read_text()  # the file's own indent


def test_our_entrys_own_settings_are_kept(cli: Cli, home: Path, project: Path) -> None:
    path = mcp_file("claude", "project", home, project)
    path.write_text(json.dumps({"mcpServers": {"mailslot": {
        "command": "/old/mailslot", "args": ["serve", "--agent", "ada"], "env": {"X": "1"}}}}))
    assert install(cli, "claude").code == 0
    assert server_of(load(path)) == {"command": EXE, "args": serve_args(), "env": {"X": "1"},
                                     "type": "stdio"}


@pytest.mark.parametrize("host", HOST_NAMES)
def test_second_run_changes_nothing(cli: Cli, host: str, home: Path, project: Path) -> None:
    options = ["--hooks"] if host in HOOKED or host == "pi" else []
    assert install(cli, host, *options).code == 0
    written = {p: p.read_bytes() for p in (home, project) for p in p.rglob("*") if p.is_file()}
    again = install(cli, host, *options)
    assert (again.code, again.err) == (0, "")
    # one line: the notes the first run showed are not repeated
    assert again.out == f"{HOSTS[host].title} already runs mailslot as agent 'ada': nothing " \
        "changed.\n"
    assert {p: p.read_bytes() for p in written} == written


@pytest.mark.parametrize("host", MCP_FILES)
def test_malformed_file_is_an_error_and_left_untouched(cli: Cli, host: str, home: Path,
                                                       project: Path) -> None:
    path = mcp_file(host, HOSTS[host].default_scope, home, project)
    path.parent.mkdir(parents=True, exist_ok=True)
    broken = "[mcp_servers\ncommand = " if path.suffix == ".toml" else '{"mcpServers": {,}'
    path.write_text(broken)
    r = install(cli, host, *(["--hooks"] if host in HOOKED else []))
    kind = "TOML" if path.suffix == ".toml" else "JSON"
    assert r.code == 2 and r.out == ""
    assert r.err.startswith(f"mailslot: error: {path} is not valid {kind} (")
    assert r.err.endswith("nothing was changed\n") and r.err.count("\n") == 1
    assert path.read_text() == broken
    assert [p for d in (home, project) for p in d.rglob("*") if p.is_file()] == [path]


@pytest.mark.parametrize("shape", ['["a list"]', '{"mcpServers": []}',
                                   '{"mcpServers": {"mailslot": "x"}}'])
def test_wrong_shapes_are_errors(cli: Cli, shape: str, home: Path, project: Path) -> None:
    path = mcp_file("cursor", "project", home, project)
    path.parent.mkdir(parents=True)
    path.write_text(shape)
    r = install(cli, "cursor")
    assert r.code == 2 and "nothing was changed" in r.err and path.read_text() == shape


def test_dry_run_prints_the_diff_and_writes_nothing(cli: Cli, home: Path,
                                                    project: Path) -> None:
    r = install(cli, "gemini", "--hooks", "--dry-run")
    path = mcp_file("gemini", "project", home, project)
    assert r.code == 0 and not path.exists()
    assert f"--- /dev/null\n+++ {path}\n" in r.out
    assert '+  "mcpServers": {' in r.out and '+  "hooks": {' in r.out
    assert r.out.rstrip().endswith("dry run: nothing was written")
    assert install(cli, "gemini", "--hooks").code == 0
    r = install(cli, "gemini", "--hooks", "--dry-run")
    assert f"unchanged: {path}" in r.out and "---" not in r.out


def test_claude_hooks_and_wake(cli: Cli, home: Path, project: Path,
                               claude_on_path: Path) -> None:
    path = hook_file("claude", "project", home, project)
    assert path.name == "settings.local.json"
    r = install(cli, "claude", "--hooks", "--wake")
    assert r.code == 0, r.err
    hooks = load(path)["hooks"]
    assert hooks["SessionStart"] == [{"matcher": "startup|resume|clear|compact", "hooks": [
        {"type": "command", "command": hook_command("claude", "session-start"), "timeout": 10}]}]
    assert hooks["UserPromptSubmit"][0]["hooks"][0]["command"] == hook_command(
        "claude", "user-prompt-submit")
    assert hooks["PostToolUse"] == [{"hooks": [  # no matcher: after every tool call
        {"type": "command", "command": hook_command("claude", "post-tool-use"), "timeout": 10}]}]
    stop, wait = hooks["Stop"]
    assert stop["hooks"][0]["command"] == hook_command("claude", "stop")
    assert wait["hooks"] == [{"type": "command", "command": hook_command("claude", "wait"),
                              "asyncRewake": True, "timeout": 86400}]
    assert "approve" in r.out and "Cursor and Copilot CLI also run" in r.out
    config = json.loads((isolated_mailbox() / "config.json").read_text())
    assert config["agents"]["ada"] == {"wake_on_mail": True, "wake_method": "claude-peer"}
    assert 'wake_method "claude-peer"' in r.out
    assert "wake: claude-peer, chosen: Claude Code 2.1.332 (≥ 2.1.224)" in r.out
    again = install(cli, "claude", "--hooks")  # without --wake: the waiter goes
    assert again.code == 0 and len(load(path)["hooks"]["Stop"]) == 1
    config = json.loads((isolated_mailbox() / "config.json").read_text())
    assert config["agents"]["ada"] == {"wake_on_mail": False, "wake_method": "unsupported"}
    assert 'wake_method "unsupported"' in again.out


@pytest.mark.parametrize("with_credential", [False, True])
def test_an_install_without_the_wake_takes_the_waiter_hook_out(
        cli: Cli, home: Path, project: Path, with_credential: bool,
        claude_on_path: Path) -> None:
    path = hook_file("claude", "project", home, project)
    assert install(cli, "claude", "--hooks", "--wake").code == 0
    options: tuple[str, ...] = ()
    if with_credential:
        assert cli("agent", "add", "ada", "--yes").code == 0
        options = ("--credential", str(home / ".config" / "mailslot" / "credentials" /
                                       "ada.json"))
    again = install(cli, "claude", *options)  # no --hooks: the hooks there follow it
    assert again.code == 0, again.err
    hooks = load(path)["hooks"]
    assert [h["command"] for g in hooks["Stop"] for h in g["hooks"]] == [
        hook_command("claude", "stop")]
    assert hooks["SessionStart"][0]["hooks"][0]["command"] == hook_command(
        "claude", "session-start")
    config = json.loads((isolated_mailbox() / "config.json").read_text())
    assert config["agents"]["ada"] == {"wake_on_mail": False, "wake_method": "unsupported"}
    assert f"updated: {path}" in again.out and "background waiter" in again.out
    assert 'wake_method "unsupported"' in again.out


def test_a_store_url_is_registered_as_it_is(cli: Cli, home: Path, project: Path,
                                           pg_cluster: Cluster) -> None:
    url = pg_cluster.new_database()
    assert cli("init", "--store", url).code == 0
    r = cli("--dir", url, "--agent", "ada", "install", "claude", "--hooks")
    assert r.code == 0, r.err
    command = load(hook_file("claude", "project", home, project))["hooks"]["Stop"][0]["hooks"][0]
    assert shlex.split(command["command"])[-2:] == ["--dir", url]
    assert server_of(load(mcp_file("claude", "project", home, project)))["args"][-2:] == [
        "--dir", url]
    secret = url.replace("postgres@", "postgres:hunter2@")
    refused = cli("--dir", secret, "--agent", "ada", "install", "codex", "--hooks")
    assert refused.code == 2 and "password" in refused.err and "hunter2" not in refused.err
    assert not mcp_file("codex", "project", home, project).exists()


def test_users_own_hooks_are_kept_in_place(cli: Cli, home: Path, project: Path) -> None:
    path = hook_file("claude", "user", home, project)
    path.parent.mkdir(parents=True)
    mine = {"type": "command", "command": "notify-send done"}
    path.write_text(json.dumps({"model": "opus", "hooks": {
        "Stop": [{"hooks": [mine]}, {"hooks": [{"type": "command",
                                                "command": "/old/bin/mailslot hook claude stop"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [mine]}]}}))
    assert install(cli, "claude", "--hooks", "--scope", "user").code == 0
    doc = load(path)
    assert doc["model"] == "opus" and doc["hooks"]["PreToolUse"][0]["hooks"] == [mine]
    stop = doc["hooks"]["Stop"]
    assert stop[0] == {"hooks": [mine]}
    assert [h["command"] for g in stop[1:] for h in g["hooks"]] == [
        hook_command("claude", "stop")]


@pytest.mark.parametrize("host, events", [
    ("codex", {"SessionStart": "session-start", "UserPromptSubmit": "user-prompt-submit",
               "Stop": "stop", "PostToolUse": "post-tool-use"}),
    ("gemini", {"SessionStart": "session-start", "BeforeAgent": "before-agent",
                "AfterAgent": "after-agent", "AfterTool": "after-tool"}),
    ("qwen", {"SessionStart": "session-start", "UserPromptSubmit": "user-prompt-submit",
              "Stop": "stop", "PostToolUse": "post-tool-use"}),
])
def test_group_style_hook_hosts(cli: Cli, host: str, events: dict[str, str], home: Path,
                                project: Path) -> None:
    assert install(cli, host, "--hooks").code == 0
    hooks = load(hook_file(host, "project", home, project))["hooks"]
    assert set(hooks) == set(events)
    for event, ours in events.items():
        (handler,) = hooks[event][0]["hooks"]
        assert handler["command"] == hook_command(host, ours)
        assert handler["timeout"] == (10 if host == "codex" else 10_000)  # Qwen: ms too
        if host == "qwen":  # no matcher: Qwen runs it for every source
            assert "matcher" not in hooks[event][0]
        if host == "gemini":
            assert handler["name"] == f"mailslot-{ours}"
            # Gemini compares lifecycle matchers as exact strings: none, so every source
            # (startup, resume, clear) runs the hook.
            assert "matcher" not in hooks[event][0]
    assert hook_file("codex", "project", home, project).name == "hooks.json"


def test_cursor_and_copilot_hooks(cli: Cli, home: Path, project: Path) -> None:
    assert install(cli, "cursor", "--hooks").code == 0
    cursor = load(hook_file("cursor", "project", home, project))
    assert cursor == {"hooks": {
        "sessionStart": [{"command": hook_command("cursor", "session-start"), "timeout": 10}],
        "stop": [{"command": hook_command("cursor", "stop"), "timeout": 10}]}, "version": 1}
    assert install(cli, "copilot", "--hooks").code == 0
    copilot = load(hook_file("copilot", "user", home, project))
    assert copilot["hooks"]["agentStop"] == [
        {"type": "command", "bash": hook_command("copilot", "stop"), "timeoutSec": 10}]


def test_cursor_warns_when_claude_hooks_would_run_twice(cli: Cli) -> None:
    assert install(cli, "claude", "--hooks").code == 0
    r = install(cli, "cursor", "--hooks")
    assert "Cursor also runs Claude Code's hooks in" in r.out and "settings.local.json" in r.out


@pytest.mark.parametrize("options, message", [
    (["claude", "--wake"], "no wake is possible for Claude Code here: claude-peer: "
                           "needs --hooks"),
    (["codex", "--hooks", "--wake"], "no wake is possible for Codex CLI here: codex-queue: "
                                     "codex is not on PATH"),
    (["antigravity", "--hooks"], "Antigravity has no documented hook that can show mail"),
    (["grok", "--hooks"], "Grok Build has no documented hook that can show mail"),
])
def test_refused_options(cli: Cli, options: list[str], message: str, project: Path) -> None:
    r = install(cli, *options)
    assert r.code == 2 and message in r.err
    assert not any(project.iterdir())


def test_install_needs_an_explicit_identity(cli: Cli, project: Path) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    r = cli("install", "claude")
    assert r.code == 2 and r.err.startswith("mailslot: error: no identity")
    assert not (project / ".mcp.json").exists()


def test_moving_a_registration_to_another_agent_is_refused(cli: Cli, home: Path,
                                                           project: Path) -> None:
    assert install(cli, "claude", "--hooks").code == 0
    before = (project / ".mcp.json").read_text()
    r = install(cli, "copilot", "--scope", "project", agent="bob")
    assert r.code == 1
    assert r.err.startswith(f"mailslot: error: {project / '.mcp.json'} already registers mailslot "
                            "as agent 'ada'")
    assert (project / ".mcp.json").read_text() == before
    r = install(cli, "claude", "--hooks", agent="bob")
    assert r.code == 1 and (project / ".mcp.json").read_text() == before


def test_claude_and_copilot_share_the_project_mcp_json(cli: Cli, project: Path) -> None:
    assert install(cli, "claude").code == 0
    assert install(cli, "copilot", "--scope", "project").code == 0
    assert install(cli, "claude").out.endswith("nothing changed.\n")
    assert server_of(load(project / ".mcp.json"))["tools"] == ["*"]


def test_gitignore_advice(cli: Cli, project: Path) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    r = install(cli, "cursor")
    assert "note: .cursor/mcp.json holds paths on this machine: add it to .gitignore" in r.out
    (project / ".gitignore").write_text(".cursor/\n")
    r = install(cli, "cursor")
    assert "note: .cursor/mcp.json holds paths on this machine; git already ignores it" in r.out
    assert "note:" not in install(cli, "cursor", "--scope", "user").out


def test_project_is_the_git_checkout(cli: Cli, project: Path) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "sub").mkdir()
    os.chdir(project / "sub")
    assert install(cli, "claude").code == 0
    assert (project / ".mcp.json").exists() and not (project / "sub" / ".mcp.json").exists()


def isolated_mailbox() -> Path:
    return Path(os.environ["MAILSLOT_DIR"])


def test_claude_channel_serves_with_channel_and_chooses_it(cli: Cli, home: Path,
                                                             project: Path) -> None:
    mailbox = isolated_mailbox()
    mailbox.mkdir()
    (mailbox / "config.json").write_text(json.dumps(
        {"owner": "sam", "agents": {"ada": {"wake_on_mail": "requested", "note": "mine"}}}))
    r = install(cli, "claude", "--channel")
    assert r.code == 0, r.err
    args = server_of(load(mcp_file("claude", "project", home, project)))["args"]
    assert args[:2] == ["serve", "--channel"]
    assert "--dangerously-load-development-channels server:mailslot" in r.out
    config = json.loads((mailbox / "config.json").read_text())
    assert config == {"owner": "sam", "agents": {"ada": {
        "wake_on_mail": "requested", "note": "mine", "wake_method": "claude-channel"}}}


@pytest.mark.parametrize("options", [("--channel",), ("--hooks", "--wake", "--channel")])
def test_channel_is_claude_only_and_excludes_wake(cli: Cli, options: tuple[str, ...]) -> None:
    host = "codex" if options == ("--channel",) else "claude"
    r = install(cli, host, *options)
    assert r.code == 2 and r.err.startswith("mailslot: error:")
    assert not isolated_mailbox().exists()


def test_dry_run_wake_changes_no_config(cli: Cli, claude_on_path: Path) -> None:
    r = install(cli, "claude", "--hooks", "--wake", "--dry-run")
    assert r.code == 0 and 'would set agents.ada.wake_method "claude-peer"' in r.out
    assert not (isolated_mailbox() / "config.json").exists()


def test_a_project_link_leading_out_of_the_project_is_refused_unless_named(
        cli: Cli, home: Path, project: Path) -> None:
    """A cloned repository whose ``.claude`` links to ``~/.claude`` must not make a
    project install rewrite the user's own settings (hooks for every project)."""
    user = home / ".claude"
    user.mkdir(parents=True)
    target = hook_file("claude", "project", home, project).name
    (user / target).write_text('{"theme": "dark"}\n')
    (project / ".claude").symlink_to(user)
    before = (user / target).read_text()
    r = install(cli, "claude", "--hooks")
    assert r.code == 2 and "leads out of the project" in r.err
    assert str((user / target).resolve()) in r.err
    assert (user / target).read_text() == before
    assert not (project / ".mcp.json").exists()  # nothing at all was written
    r = install(cli, "claude", "--hooks", "--allow-outside", str(user / target))
    assert r.code == 0, r.err
    assert f"-> {(user / target).resolve()}" in r.out  # the real target, printed
    assert "hooks" in load(user / target)


@pytest.mark.parametrize("host", ["opencode", "kilo", "cline"])
def test_nested_server_shapes_keep_their_agent(cli: Cli, host: str) -> None:
    assert install(cli, host).code == 0
    assert install(cli, host).code == 0  # the same again changes nothing
    r = install(cli, host, agent="bob")
    assert r.code != 0 and "already registers mailslot as agent 'ada'" in r.err


def test_pi_gets_an_extension_of_its_own(cli: Cli, home: Path, project: Path) -> None:
    r = install(cli, "pi", "--hooks")
    assert r.code == 0, r.err
    path = project / ".pi" / "extensions" / "mailslot.ts"
    text = path.read_text()
    assert text.startswith("// Written by `mailslot install pi`")
    assert f"const MAILSLOT: string = {json.dumps(EXE)};" in text
    bound = json.dumps(["--agent", "ada", "--dir", os.environ["MAILSLOT_DIR"]])
    assert f"const BOUND: string[] = {bound};" in text
    assert "const HOOKS: boolean = true;" in text
    assert install(cli, "pi").code == 0  # without --hooks: the tools only
    assert "const HOOKS: boolean = false;" in path.read_text()
    other = install(cli, "pi", agent="bob")
    assert other.code != 0 and "as agent 'ada'" in other.err


def test_pi_never_overwrites_a_file_it_did_not_write(cli: Cli, project: Path) -> None:
    path = project / ".pi" / "extensions" / "mailslot.ts"
    path.parent.mkdir(parents=True)
    path.write_text("export default function () {}\n")
    r = install(cli, "pi")
    assert r.code == 2 and "was not written by mailslot" in r.err
    assert path.read_text() == "export default function () {}\n"


def test_copilot_warns_when_project_files_would_make_it_another_agent(
        cli: Cli, home: Path, project: Path) -> None:
    # Copilot CLI also uses the project's .mcp.json and Claude Code's hooks, as whatever
    # agent they name: installing it as 'ada' there must say so, loudly, naming both.
    assert install(cli, "claude", "--hooks", agent="bob").code == 0
    r = install(cli, "copilot", "--hooks")
    assert r.code == 0
    warnings = [line for line in r.err.splitlines() if line.startswith("mailslot: warning:")]
    assert len(warnings) == 2
    assert str(project / ".mcp.json") in warnings[0] and "'bob'" in warnings[0]
    assert str(project / ".claude" / "settings.local.json") in warnings[1]
    assert all("not as 'ada'" in w for w in warnings)


def test_copilot_says_nothing_when_project_files_name_the_same_agent(
        cli: Cli, home: Path, project: Path) -> None:
    assert install(cli, "claude", "--hooks").code == 0
    assert install(cli, "copilot", "--hooks").err == ""


def test_the_agent_a_project_file_registers_is_found_in_every_server_shape() -> None:
    # What warns that a host reading another host's file would speak as another agent.
    from mailslot.frontends.install.entries import registered_agents

    argv = ["serve", "--agent", "Bob"]
    assert registered_agents({"mcpServers": {"mailslot": {"command": EXE, "args": argv}}}) \
        == {"bob"}
    assert registered_agents({"mcp": {"mailslot": {"type": "local",
                                                   "command": [EXE, *argv]}}}) == {"bob"}
    assert registered_agents({"mcpServers": {"mailslot": {"transport": {
        "type": "stdio", "command": EXE, "args": argv}}}}) == {"bob"}
    assert registered_agents({"mcp": {"other": {"command": [EXE, *argv]}}}) == set()


def test_kilo_warns_when_a_project_opencode_json_names_another_agent(
        cli: Cli, home: Path, project: Path) -> None:
    # Kilo Code CLI reads a project's opencode.json too (proven against the real program).
    assert install(cli, "opencode", agent="bob").code == 0
    r = install(cli, "kilo")
    assert r.code == 0
    (warning,) = [line for line in r.err.splitlines() if line.startswith("mailslot: warning:")]
    assert str(project / "opencode.json") in warning and "'bob'" in warning
    assert "not as 'ada'" in warning
    same = install(cli, "kilo", "--scope", "user", agent="bob")  # bob too: nothing to say
    assert same.code == 0 and "warning" not in same.err


def test_kilo_writes_no_permission_and_says_which_rule_to_add(
        cli: Cli, home: Path, project: Path) -> None:
    r = install(cli, "kilo")
    assert r.code == 0, r.err
    doc = load(project / ".kilo" / "kilo.json")
    assert list(doc) == ["mcp"]  # no "permission": approving is the person's
    assert '"permission": {"mailslot_*": "allow"}' in r.out + r.err
    refused = install(cli, "kilo", "--hooks")
    assert refused.code != 0


@pytest.mark.parametrize("scope", ["project", "user"])
def test_droid_hooks_sit_at_the_top_of_hooks_json_and_no_approval_is_written(
        cli: Cli, home: Path, project: Path, scope: str) -> None:
    path = hook_file("droid", scope, home, project)
    path.parent.mkdir(parents=True, exist_ok=True)
    mine = {"matcher": "Execute", "hooks": [{"type": "command", "command": "/bin/true"}]}
    path.write_text(json.dumps({"PreToolUse": [mine]}))
    r = install(cli, "droid", "--hooks", "--scope", scope)
    assert r.code == 0, r.err
    doc = load(path)
    assert "hooks" not in doc  # Droid reads the events at the top level of hooks.json
    assert doc["PreToolUse"] == [mine]
    assert list(doc) == ["PreToolUse", "SessionStart", "UserPromptSubmit", "Stop"]
    for event, ours in (("SessionStart", "session-start"),
                        ("UserPromptSubmit", "user-prompt-submit"), ("Stop", "stop")):
        assert doc[event] == [{"hooks": [{"type": "command", "timeout": 10,
                                          "command": hook_command("droid", ours)}]}]
    servers = load(mcp_file("droid", scope, home, project))
    assert list(servers) == ["mcpServers"]  # no persistentPermissions: approving is theirs
    assert server_of(servers, "droid") == {"type": "stdio", "disabled": False,
                                           "command": EXE, "args": serve_args()}
    assert "install writes no approval" in r.out + r.err
    assert ("asks once to trust the folder" in r.out + r.err) == (scope == "project")


def config_now() -> dict[str, Any]:
    return dict(json.loads((isolated_mailbox() / "config.json").read_text()))


def test_install_claude_bridge_turns_the_bridge_on_once_and_takes_it_back(
        cli: Cli, home: Path, project: Path) -> None:
    dry = install(cli, "claude", "--hooks", "--bridge", "--dry-run")
    assert dry.code == 0 and 'would set agents.ada.bridge "claude", "claude" in bridges' \
        in dry.out, dry.out
    r = install(cli, "claude", "--hooks", "--bridge")
    assert r.code == 0, r.err
    assert 'bridge: set agents.ada.bridge "claude", "claude" in bridges' in r.out, r.out
    assert config_now()["bridges"] == ["claude"]
    assert config_now()["agents"]["ada"]["bridge"] == "claude"
    again = install(cli, "claude", "--hooks", "--bridge")  # idempotent
    assert 'bridge: kept agents.ada.bridge "claude"' in again.out, again.out
    assert config_now()["bridges"] == ["claude"]
    # a second agent asks too: the bridge stays on until the last ask is taken back
    assert install(cli, "claude", "--scope", "user", "--bridge", agent="bea").code == 0
    assert config_now()["bridges"] == ["claude"]
    off = install(cli, "claude", "--hooks")  # a registration without --bridge
    assert "bridge: removed agents.ada.bridge in" in off.out, off.out
    assert config_now()["bridges"] == ["claude"] and "bridge" not in config_now()["agents"]["ada"]
    undone = cli("--agent", "bea", "install", "claude", "--undo", "--scope", "user")
    assert undone.code == 0, undone.err
    assert ('bridge: removed agents.bea.bridge, "claude" from bridges (no agent asks for it '
            "now)") in undone.out, undone.out
    assert "bridges" not in config_now() and "bea" not in config_now()["agents"]


def test_install_bridge_is_refused_where_there_is_none(cli: Cli, home: Path,
                                                       project: Path) -> None:
    r = install(cli, "codex", "--bridge")
    assert (r.code, r.err) == (2, "mailslot: error: --bridge works only for claude or qwen\n")
    assert not (isolated_mailbox() / "config.json").exists()
