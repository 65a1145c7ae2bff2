"""``install`` as a plan of steps: the plan writes nothing, every step that writes leaves
its undo in the record, and ``install --undo`` takes the steps back in reverse."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import Result
from mailslot import host_registry as hosts
from mailslot.frontends.install import record, undoing
from mailslot.frontends.install.changes import install
from mailslot.frontends.install.planning import InstallOptions, plan_of
from test_install import claude_on_path  # noqa: F401 (a fixture)
from test_install_undo import tree

Cli = Callable[..., Result]
EXE = str(Path(sys.executable).parent / "mailslot")
PACKAGE = Path(__file__).parent.parent / "src" / "mailslot" / "frontends" / "install"


def most_options(host: hosts.Host, mailbox: Path) -> InstallOptions:
    """Every option ``host`` offers that needs no program of its own: hooks, sidecar,
    bridge (the wake is claude's test, below)."""
    return InstallOptions(hooks=host.hook_file is not None or host.mcp_format == "extension",
                          sidecar=host.sidecar, bridge=host.bridge() is not None,
                          mailbox_dir=str(mailbox), executable=EXE)


def config_of(mailbox: Path) -> object:
    path = mailbox / "config.json"
    return json.loads(path.read_text()) if path.exists() else {}


@pytest.mark.parametrize("name", hosts.NAMES)
def test_a_plan_reads_and_edits_every_file_but_writes_nothing(
        name: str, project: Path, home: Path, root: Path, isolated: Path) -> None:
    host = hosts.host(name)
    world = tree(isolated)
    plan = plan_of(name, "ada", most_options(host, root))
    assert tree(isolated) == world
    reads = [step.reads for step in plan.steps]
    mcp = host.mcp_path[plan.scope]
    assert any(r.endswith(mcp.removeprefix("~/")) for r in reads), reads
    if host.hook_file is not None:
        hooks = host.hook_file.path[plan.scope].removeprefix("~/")
        assert any(r.endswith(hooks) for r in reads), reads
    assert all(step.changed and step.before is None for step in plan.files)


@pytest.mark.parametrize("name", hosts.NAMES)
def test_every_step_that_writes_leaves_its_undo_and_undo_takes_all_back(
        name: str, project: Path, home: Path, root: Path, isolated: Path) -> None:
    host = hosts.host(name)
    (project / "notes.txt").write_text("mine\n")
    before = tree(project, home), config_of(root)
    report = install(name, "ada", most_options(host, root))
    assert not report.dry_run and any(c.changed for c in report.changes)
    place = project if report.scope == "project" else home
    log = record.load(record.where(name, report.scope, place), name, report.scope, place)
    settings_changed = config_of(root) != before[1]
    assert len(undoing.recorded(host, log)) \
        == sum(c.changed for c in report.changes) + settings_changed
    undoing.undo(name)
    assert (tree(project, home), config_of(root)) == before


@pytest.mark.usefixtures("claude_on_path")
def test_the_wake_step_is_taken_back_too(cli: Cli, project: Path, home: Path,
                                         root: Path) -> None:
    assert cli("init").code == 0
    before = tree(project, home), config_of(root)
    install("claude", "ada", InstallOptions(hooks=True, wake=True, bridge=True,
                                            mailbox_dir=str(root), executable=EXE))
    assert config_of(root) != before[1]
    assert cli("install", "--undo", "claude").code == 0
    assert (tree(project, home), config_of(root)) == before


def test_a_dry_run_is_the_plan_said_and_writes_nothing(project: Path, root: Path,
                                                       isolated: Path) -> None:
    world = tree(isolated)
    report = install("claude", "ada", InstallOptions(hooks=True, bridge=True, dry_run=True,
                                                     mailbox_dir=str(root), executable=EXE))
    assert report.dry_run and [c.path for c in report.changes] == [
        project / ".mcp.json", project / ".claude" / "settings.local.json"]
    assert any(n.startswith("bridge: would set agents.ada.bridge") for n in report.notes)
    assert tree(isolated) == world


def test_undo_takes_the_steps_back_in_reverse(cli: Cli, project: Path) -> None:
    assert cli("--agent", "ada", "install", "claude", "--hooks").code == 0
    undone = cli("install", "--undo", "claude")
    assert undone.code == 0, undone.err
    assert undone.out.splitlines() == [
        f"removed {project / '.claude' / 'settings.local.json'} (install created it)",
        f"removed {project / '.mcp.json'} (install created it)"]




def test_a_record_in_todays_format_still_undoes(cli: Cli, project: Path, root: Path,
                                                isolated: Path) -> None:
    """The record's format is kept: a record an earlier mailslot wrote is undone."""
    assert cli("init").code == 0
    (root / "config.json").write_text(json.dumps({"agents": {"ada": {
        "wake_on_mail": True, "wake_method": "claude-peer"}}}))
    mcp = project / ".mcp.json"
    written = '{\n  "mcpServers": {\n    "mailslot": {\n      "command": "x"\n    }\n  }\n}\n'
    mcp.write_text(written)
    log = {"format": "mailslot-install/1", "host": "claude", "scope": "project",
           "place": str(project.resolve()), "agent": "ada", "mailbox": str(root),
           "notes": [], "files": {str(mcp.resolve()): {
               "path": str(mcp), "kind": "json", "created": True, "folders": [],
               "original": None, "written": hashlib.sha256(written.encode()).hexdigest(),
               "exact": True, "entries": [{"path": ["mcpServers", "mailslot"],
                                           "after": {"command": "x"}}],
               "objects": [["mcpServers"]]}},
           "settings": {"existed": False, "keys": [
               {"path": ["wake_on_mail"], "after": True},
               {"path": ["wake_method"], "after": "claude-peer"}]}}
    where = record.where("claude", "project", project)
    where.parent.mkdir(parents=True)
    where.write_text(json.dumps(log))
    where.chmod(0o600)
    undone = cli("install", "--undo", "claude")
    assert undone.code == 0, undone.err
    assert undone.out.splitlines() == [
        f"put back agents.ada's wake_on_mail, wake_method in {root}/config.json as before "
        "install", f"removed {mcp} (install created it)"]
    assert not mcp.exists() and not where.exists()
    assert json.loads((root / "config.json").read_text()) == {}
