"""``mailslot install --undo HOST``: everything install did is taken back, from its record,
and nothing it reads or writes in a project is followed through a planted link."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Result
from mailslot import Mailbox
from pgcluster import Cluster
from test_install import claude_on_path  # noqa: F401 (a fixture)

Cli = Callable[..., Result]
EXE = str(Path(sys.executable).parent / "mailslot")
SECRET = "s3cr3t-0f-ada-do-not-leak"


@pytest.fixture
def mailbox(root: Path) -> Path:
    return root


def install(cli: Cli, host: str, *options: str, agent: str = "ada") -> Result:
    done = cli("--agent", agent, "install", host, *options)
    assert done.code == 0, done.err
    return done


def undo(cli: Cli, host: str, *options: str) -> Result:
    return cli("install", "--undo", host, *options)


def tree(*places: Path) -> dict[str, bytes | str]:
    """Every file, link and folder at or under ``places``: what a person would see
    (a FIFO is never opened)."""
    out: dict[str, bytes | str] = {}
    for top in places:
        inside = sorted(top.rglob("*")) if top.is_dir() else []
        for path in [top, *inside] if top.exists() or top.is_symlink() else []:
            if path.is_symlink():
                out[str(path)] = f"-> {os.readlink(path)}"
            elif path.is_dir():
                out[str(path)] = "folder"
            elif path.is_fifo():
                out[str(path)] = "fifo"
            else:
                out[str(path)] = path.read_bytes()
    return out


def records(isolated: Path) -> list[Path]:
    return sorted((isolated / "state" / "mailslot" / "installs").glob("*.json"))


def one_refusal(r: Result, naming: Path) -> str:
    assert (r.code, r.out) == (1, ""), r
    assert r.err.startswith("mailslot: error: ") and r.err.count("\n") == 1, r.err
    assert str(naming) in r.err and "nothing was changed" in r.err, r.err
    return r.err


# Taking back everything ----------------------------------------------------------------
def test_undo_after_a_fresh_install_removes_what_it_created(
        cli: Cli, home: Path, project: Path, isolated: Path) -> None:
    before = tree(project, home)
    install(cli, "claude", "--hooks")
    assert (project / ".mcp.json").exists() and (project / ".claude").is_dir()
    undone = undo(cli, "claude")
    assert undone.code == 0, undone.err
    assert f"removed {project / '.mcp.json'} (install created it)" in undone.out
    assert tree(project, home) == before  # the .claude folder it made is gone too
    assert records(isolated) == []


@pytest.mark.parametrize("host, rel, text", [
    ("claude", ".mcp.json", '{"mcpServers": {"other": {"command": "x"}},  "theme": "dark"}\n'),
    ("codex", ".codex/config.toml", 'model = "o3"  # mine\n'),
])
def test_undo_puts_back_the_files_install_changed_and_removes_its_copies(
        cli: Cli, project: Path, home: Path, host: str, rel: str, text: str) -> None:
    path = project / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    before = tree(project, home)
    done = install(cli, host, "--hooks")
    copy = path.with_name(path.name + ".mailslot-backup")
    assert copy.read_text() == text and stat.S_IMODE(copy.stat().st_mode) == 0o600
    assert f"kept the previous {path} as {copy}" in done.out
    undone = undo(cli, host)
    assert undone.code == 0, undone.err
    assert f"restored {path} as it was before install" in undone.out
    assert f"removed the copy {copy}" in undone.out
    assert tree(project, home) == before


def config_of(mailbox: Path) -> object:
    """The mailbox's settings (no file: none)."""
    path = mailbox / "config.json"
    return json.loads(path.read_text()) if path.exists() else {}


@pytest.mark.usefixtures("claude_on_path")
def test_undo_after_install_wake_puts_the_wake_settings_back(
        cli: Cli, project: Path, mailbox: Path) -> None:
    assert cli("init").code == 0
    config = mailbox / "config.json"
    config.write_text(json.dumps({"owner": "sam", "agents": {
        "ada": {"note": "mine"}, "bob": {"wake_on_mail": False}}}))
    before = config.read_text()
    done = install(cli, "claude", "--hooks", "--wake")
    assert json.loads(config.read_text())["agents"]["ada"]["wake_method"] == "claude-peer"
    assert 'wake_method "claude-peer"' in done.out
    undone = undo(cli, "claude")
    assert undone.code == 0, undone.err
    assert f"put back agents.ada's wake_on_mail, wake_method in {mailbox}/config.json" \
        in undone.out
    assert json.loads(config.read_text()) == json.loads(before)


@pytest.mark.usefixtures("claude_on_path")
def test_an_agent_install_added_to_the_config_goes_with_the_undo(
        cli: Cli, mailbox: Path) -> None:
    assert cli("init").code == 0
    before = config_of(mailbox)
    install(cli, "claude", "--hooks", "--wake")
    assert config_of(mailbox) != before
    assert undo(cli, "claude").code == 0
    assert config_of(mailbox) == before


@pytest.mark.usefixtures("claude_on_path")
def test_an_install_run_twice_undoes_to_before_the_first(
        cli: Cli, project: Path, home: Path, mailbox: Path) -> None:
    assert cli("init").code == 0
    (project / ".mcp.json").write_text('{"theme": "dark"}\n')
    before = tree(project, home), config_of(mailbox)
    install(cli, "claude")
    install(cli, "claude", "--hooks", "--wake")  # changes .mcp.json again, adds hooks
    install(cli, "claude", "--hooks", "--wake")  # and again, changing nothing
    undone = undo(cli, "claude")
    assert undone.code == 0, undone.err
    assert (tree(project, home), config_of(mailbox)) == before


def test_a_second_undo_says_there_is_nothing_to_undo(cli: Cli, project: Path) -> None:
    install(cli, "claude")
    assert undo(cli, "claude").code == 0
    again = undo(cli, "claude")
    assert (again.code, again.err) == (0, "")
    assert again.out == ("nothing to undo: install has not changed Claude Code's settings in "
                         "this project (or it was undone)\n")
    never = undo(cli, "codex", "--scope", "user")
    assert never.code == 0 and never.out.startswith("nothing to undo:") \
        and "in your home" in never.out


def test_undo_takes_no_dry_run(cli: Cli, project: Path) -> None:
    install(cli, "claude")
    r = undo(cli, "claude", "--dry-run")
    assert r.code == 2 and r.err.startswith("mailslot: error: install --undo has no --dry-run")
    assert (project / ".mcp.json").exists()


def test_a_file_edited_since_loses_only_mailslots_entries(
        cli: Cli, project: Path, home: Path) -> None:
    (project / ".mcp.json").write_text('{"theme": "dark"}\n')
    install(cli, "claude", "--hooks")
    mcp = json.loads((project / ".mcp.json").read_text())
    mcp["model"] = "opus"  # the person's own edits after install
    mcp["mcpServers"]["other"] = {"command": "other-server"}
    (project / ".mcp.json").write_text(json.dumps(mcp, indent=2))
    hooks_file = project / ".claude" / "settings.local.json"
    hooks = json.loads(hooks_file.read_text())
    mine = {"type": "command", "command": "notify-send done"}
    hooks["hooks"]["Stop"].append({"hooks": [mine]})
    hooks["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 30  # ours, edited
    hooks_file.write_text(json.dumps(hooks))
    undone = undo(cli, "claude")
    assert undone.code == 0, undone.err
    assert (f"{project / '.mcp.json'} was changed since install: took out only mailslot's "
            "entries, the rest stays") in undone.out
    assert json.loads((project / ".mcp.json").read_text()) == {
        "theme": "dark", "model": "opus", "mcpServers": {"other": {"command": "other-server"}}}
    assert json.loads(hooks_file.read_text()) == {"hooks": {"Stop": [{"hooks": [mine]}]}}
    assert not (project / ".mcp.json.mailslot-backup").exists()


def test_a_file_install_created_and_you_only_touched_its_entries_goes(
        cli: Cli, project: Path) -> None:
    install(cli, "cursor")
    path = project / ".cursor" / "mcp.json"
    doc = json.loads(path.read_text())
    doc["mcpServers"]["mailslot"]["env"] = {"X": "1"}  # inside mailslot's own entry
    path.write_text(json.dumps(doc))
    undone = undo(cli, "cursor")
    assert undone.code == 0, undone.err
    assert "held nothing but mailslot's entries" in undone.out
    assert not (project / ".cursor").exists()


def test_a_toml_file_edited_since_keeps_its_comments_and_keys(cli: Cli, project: Path) -> None:
    path = project / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text('model = "o3"  # mine\n')
    install(cli, "codex")
    path.write_text(path.read_text() + '\n[profiles.fast]\nmodel = "mini"  # added later\n')
    assert undo(cli, "codex").code == 0
    text = path.read_text()
    assert "# mine" in text and "# added later" in text
    assert tomllib.loads(text) == {"model": "o3", "profiles": {"fast": {"model": "mini"}}}


def test_pi_extension_goes_unless_edited(cli: Cli, project: Path) -> None:
    install(cli, "pi", "--hooks")
    path = project / ".pi" / "extensions" / "mailslot.ts"
    assert undo(cli, "pi").code == 0 and not (project / ".pi").exists()
    install(cli, "pi", "--hooks")
    path.write_text(path.read_text() + "// my change\n")
    undone = undo(cli, "pi")
    assert undone.code == 0 and "was changed since install: left as it is" in undone.out
    assert path.read_text().endswith("// my change\n")


def test_the_antigravity_sidecar_is_taken_back(cli: Cli, home: Path, mailbox: Path) -> None:
    switches = home / ".gemini" / "config" / "config.json"
    switches.parent.mkdir(parents=True)
    switches.write_text('{"theme": "dark"}')
    before = tree(home)
    install(cli, "antigravity", "--dir", str(mailbox), "--sidecar")
    assert (home / ".gemini/config/sidecars/mailslot/sidecar.json").exists()
    assert undo(cli, "antigravity").code == 0
    assert tree(home) == before


def test_the_record_is_private_outside_the_project_and_dry_runs_write_none(
        cli: Cli, project: Path, isolated: Path) -> None:
    install(cli, "claude", "--dry-run")
    assert records(isolated) == []
    install(cli, "claude")
    (found,) = records(isolated)
    assert stat.S_IMODE(found.stat().st_mode) == 0o600
    assert stat.S_IMODE(found.parent.stat().st_mode) == 0o700
    assert [p.name for p in project.iterdir()] == [".mcp.json"]


@pytest.mark.usefixtures("claude_on_path")
def test_undo_keeps_a_wake_setting_changed_since(cli: Cli, mailbox: Path) -> None:
    install(cli, "claude", "--hooks", "--wake")
    config = mailbox / "config.json"
    doc = json.loads(config.read_text())
    doc["agents"]["ada"]["wake_method"] = "tmux"  # the owner chose another since
    config.write_text(json.dumps(doc))
    undone = undo(cli, "claude")
    assert "left agents.ada's wake_method" in undone.out and "changed since" in undone.out
    assert json.loads(config.read_text())["agents"]["ada"] == {"wake_method": "tmux"}


# Planted links, FIFOs and other users' files -----------------------------------------
@pytest.fixture
def credential(home: Path) -> Path:
    """The agent's credential file: what a planted link would have undo copy."""
    path = home / ".config" / "mailslot" / "credentials" / "ada.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"agent": "ada", "secret": SECRET}))
    path.chmod(0o600)
    return path


KINDS = ["a link to the credential", "a FIFO", "another user's", "readable by others"]


def give_away(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``path`` belongs to another user: given away as root; otherwise (a user cannot
    give a file away) every ``fstat`` of it says so."""
    if os.geteuid() == 0:
        os.chown(path, 65534, 65534)
        return
    inode = (path.stat().st_dev, path.stat().st_ino)
    real_fstat = os.fstat

    def fstat(fd: int) -> os.stat_result:
        info = real_fstat(fd)
        if (info.st_dev, info.st_ino) != inode:
            return info
        return os.stat_result((*info[:4], 65534, *info[5:10]))

    monkeypatch.setattr(os, "fstat", fstat)


def plant(kind: str, copy: Path, text: str, credential: Path,
          monkeypatch: pytest.MonkeyPatch) -> None:
    """Put ``kind`` where install keeps its copy (the copy's own bytes, for the kinds
    that only its owner or mode gives away)."""
    if copy.exists() or copy.is_symlink():
        copy.unlink()
    if kind == KINDS[0]:
        copy.symlink_to(credential)
    elif kind == KINDS[1]:
        os.mkfifo(copy, 0o600)
    else:
        copy.write_text(text)
        copy.chmod(0o600 if kind == KINDS[2] else 0o644)
        if kind == KINDS[2]:
            give_away(copy, monkeypatch)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.usefixtures("claude_on_path")
def test_undo_refuses_a_copy_install_did_not_keep(
        cli: Cli, project: Path, home: Path, mailbox: Path, credential: Path, kind: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A cloned repository can ship ``.mcp.json.mailslot-backup`` as a link to the
    agent's credential: undo must never copy what it leads to into ``.mcp.json``."""
    path = project / ".mcp.json"
    path.write_text('{"theme": "dark"}\n')
    install(cli, "claude", "--hooks", "--wake")
    copy = project / ".mcp.json.mailslot-backup"
    real_fstat = os.fstat
    plant(kind, copy, '{"theme": "dark"}\n', credential, monkeypatch)
    world = tree(project, home, mailbox)
    err = one_refusal(undo(cli, "claude"), copy)
    assert SECRET not in err and SECRET not in path.read_text()
    assert tree(project, home, mailbox) == world  # nothing written: files, config, record
    monkeypatch.setattr(os, "fstat", real_fstat)
    copy.unlink()  # the person removes what was planted: undo then goes on without it
    undone = undo(cli, "claude")
    assert undone.code == 0, undone.err
    assert f"{path} has no copy left ({copy}): took out only mailslot's entries" in undone.out
    assert json.loads(path.read_text()) == {"theme": "dark"}
    assert not (project / ".claude").exists()
    assert config_of(mailbox) == {}


def test_a_planted_copy_is_never_read_where_install_did_nothing(
        project: Path, credential: Path) -> None:
    (project / ".mcp.json").write_text('{"mcpServers": {}}\n')
    (project / ".mcp.json.mailslot-backup").symlink_to(credential)
    done = subprocess.run([EXE, "install", "--undo", "claude"], cwd=project, text=True,
                          capture_output=True, timeout=120, check=False)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("nothing to undo: install has not changed Claude Code's")
    assert (project / ".mcp.json").read_text() == '{"mcpServers": {}}\n'
    assert SECRET not in done.stdout


@pytest.mark.parametrize("kind", KINDS)
def test_install_refuses_a_planted_copy(cli: Cli, project: Path, home: Path,
                                        credential: Path, kind: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = project / ".mcp.json"
    path.write_text('{"theme": "dark"}\n')
    copy = project / ".mcp.json.mailslot-backup"
    plant(kind, copy, "{}", credential, monkeypatch)
    world = tree(project, home)
    one_refusal(cli("--agent", "ada", "install", "claude"), copy)
    assert tree(project, home) == world


def test_undo_refuses_a_settings_file_that_now_links_out_of_the_project(
        cli: Cli, project: Path, home: Path) -> None:
    path = project / ".mcp.json"
    path.write_text('{"theme": "dark"}\n')
    install(cli, "claude")
    outside = home / "outside.json"
    outside.write_text('{"mine": true}\n')
    (project / ".mcp.json.mailslot-backup").rename(home / "outside.json.mailslot-backup")
    path.unlink()
    path.symlink_to(outside)
    world = tree(project, home)
    err = one_refusal(undo(cli, "claude"), path)
    assert f"now leads to {outside}" in err
    assert tree(project, home) == world


def test_undo_refuses_a_folder_that_now_links_out_of_the_project(
        cli: Cli, project: Path, home: Path) -> None:
    hooks = project / ".claude" / "settings.local.json"
    hooks.parent.mkdir()
    hooks.write_text('{"theme": "dark"}\n')
    install(cli, "claude", "--hooks")
    (project / ".claude").rename(home / ".claude")  # the person's own, by a planted link
    (project / ".claude").symlink_to(home / ".claude")
    world = tree(project, home)
    err = one_refusal(undo(cli, "claude"), hooks)
    assert f"now leads to {home / '.claude' / 'settings.local.json'}" in err
    assert tree(project, home) == world


def test_install_refuses_a_settings_file_that_is_a_fifo_at_once(project: Path) -> None:
    os.mkfifo(project / ".mcp.json", 0o600)
    done = subprocess.run([EXE, "--agent", "ada", "install", "claude"], cwd=project,
                          text=True, capture_output=True, timeout=120, check=False)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (f"mailslot: error: {project / '.mcp.json'} is not a regular file; "
                           "nothing was changed\n")
    assert sorted(p.name for p in project.iterdir()) == [".mcp.json"]


def test_install_refuses_a_settings_file_of_another_user(
        cli: Cli, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = project / ".mcp.json"
    path.write_text("{}")
    give_away(path, monkeypatch)
    err = one_refusal(cli("--agent", "ada", "install", "claude"), path)
    assert "belongs to another user (uid 65534)" in err
    assert path.read_text() == "{}" and sorted(p.name for p in project.iterdir()) == [
        ".mcp.json"]


def test_install_follows_no_link_inside_a_project_unless_named(
        cli: Cli, project: Path) -> None:
    real = project / "shared" / "mcp.json"
    real.parent.mkdir()
    real.write_text("{}")
    (project / ".mcp.json").symlink_to(real)
    r = cli("--agent", "ada", "install", "claude")
    assert r.code == 2 and "is reached through a link, to" in r.err
    assert f"--allow-outside {real}" in r.err and real.read_text() == "{}"
    install(cli, "claude", "--allow-outside", str(real))
    assert "mailslot" in json.loads(real.read_text())["mcpServers"]
    assert undo(cli, "claude").code == 0 and real.read_text() == "{}"
    assert (project / ".mcp.json").is_symlink()


# Your home: a dotfiles link is followed (decision) ------------------------------------
def test_a_user_settings_link_is_written_through_and_undone_there(
        cli: Cli, home: Path, isolated: Path, credential: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    real = isolated / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text('{"theme": "dark"}\n')
    link = home / ".gemini" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(real)
    install(cli, "gemini", "--scope", "user")
    assert link.is_symlink() and "mcpServers" in json.loads(real.read_text())
    copy = real.with_name("settings.json.mailslot-backup")  # beside the real file
    assert copy.read_text() == '{"theme": "dark"}\n'
    plant(KINDS[0], copy, "", credential, monkeypatch)
    one_refusal(undo(cli, "gemini", "--scope", "user"), copy)  # never followed, anywhere
    copy.unlink()
    copy.write_text('{"theme": "dark"}\n')
    copy.chmod(0o600)
    undone = undo(cli, "gemini", "--scope", "user")
    assert undone.code == 0, undone.err
    assert real.read_text() == '{"theme": "dark"}\n' and link.is_symlink()
    assert not copy.exists()


# A re-run that changes nothing ---------------------------------------------------------
def test_a_rerun_that_changes_nothing_says_so_in_one_line_and_each_note_once(
        cli: Cli, project: Path) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    first = install(cli, "cursor")
    assert "note: .cursor/mcp.json holds paths on this machine: add it to .gitignore" \
        in first.out
    again = install(cli, "cursor")
    assert again.out == "Cursor already runs mailslot as agent 'ada': nothing changed.\n"
    (project / ".gitignore").write_text(".cursor/\n")
    third = install(cli, "cursor")  # a note it has not shown yet: once
    assert third.out == ("Cursor already runs mailslot as agent 'ada': nothing changed.\n"
                         "note: .cursor/mcp.json holds paths on this machine; git already "
                         "ignores it.\n")
    assert install(cli, "cursor").out == again.out


@pytest.mark.usefixtures("claude_on_path")
def test_undo_puts_the_wake_back_in_a_database_mailbox(cli: Cli, project: Path,
                                                       pg_cluster: Cluster) -> None:
    url = pg_cluster.new_database()
    assert cli("init", "--store", url).code == 0

    def ada() -> object:
        return Mailbox.open(url).store.load_config().get("agents", {}).get("ada")

    assert ada() is None
    assert cli("--dir", url, "--agent", "ada", "install", "claude", "--hooks", "--wake").code == 0
    assert isinstance(ada(), dict)
    undone = cli("install", "--undo", "claude")  # the record knows the mailbox
    assert undone.code == 0, undone.err
    assert ada() is None and not (project / ".mcp.json").exists()
