"""``watch --service``: the unit files written for systemd and launchd, checked by the
service managers' own checkers where this machine has them, their argv quoting attacked
with hostile mailbox paths; ``systemctl`` / ``launchctl`` are fakes recording argv (a
real user manager is not ours to enable units in)."""

from __future__ import annotations

import json
import os
import plistlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mailslot import FileStore
from mailslot.core.errors import InvalidInput
from mailslot.frontends.install.watch_service import run_service
from support import run_cli

HOSTILE = 'we ird "q" $HOME %h \\x back\\slash'
ANALYZE = shutil.which("systemd-analyze")


def fake(bin_dir: Path, name: str, code: int = 0) -> Path:
    """A ``name`` on PATH recording its argv, one JSON line a run, exiting ``code``."""
    record = bin_dir / f"{name}.jsonl"
    program = bin_dir / name
    program.write_text(f"#!{sys.executable}\nimport json, sys\n"
                       f"open({str(record)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
                       f"sys.exit({code})\n")
    program.chmod(0o755)
    return record


def runs(record: Path) -> list[list[str]]:
    return [json.loads(x) for x in record.read_text().splitlines()] if record.exists() else []


def systemd_words(line: str) -> list[str]:
    """ExecStart= split as systemd does for double-quoted words (the reference: each
    word in quotes, C escapes, then %% -> % and $$ -> $)."""
    words = re.findall(r'"((?:[^"\\]|\\.)*)"', line)
    return [re.sub(r"\\(.)", r"\1", w).replace("%%", "%").replace("$$", "$") for w in words]


def watcher_argv(folder: str) -> list[str]:
    """What a unit runs: the watcher, its folder named in its arguments (which outrank
    any variable the service manager's own environment may hold)."""
    return [sys.executable, "-m", "mailslot", "--dir", folder, "watch", "--started",
            "service"]


@pytest.fixture
def hostile(tmp_path: Path) -> FileStore:
    store = FileStore(tmp_path / HOSTILE / "mailbox")
    store.init()
    return store


def test_install_writes_a_unit_systemd_accepts_and_enables_it(
        hostile: FileStore, bin_dir: Path) -> None:
    systemctl = fake(bin_dir, "systemctl")
    done = run_service(hostile, "install", platform="linux")
    unit = Path(done.path)
    assert unit.parent == Path.home() / ".config" / "systemd" / "user"
    assert re.fullmatch(r"mailslot-watch-[0-9a-f]{12}\.service", unit.name)
    assert oct(unit.stat().st_mode)[-3:] == "600"
    assert [r for r in runs(systemctl) if r[1] != "show-environment"] == [
        ["--user", "daemon-reload"], ["--user", "enable", "--now", unit.name]]
    text = unit.read_text()
    [exec_start] = [x for x in text.splitlines() if x.startswith("ExecStart=")]
    assert systemd_words(exec_start) == watcher_argv(hostile.location)
    env = [systemd_words(x)[0] for x in text.splitlines() if x.startswith("Environment=")]
    assert f"MAILSLOT_DIR={hostile.location}" in [e.replace("%%", "%") for e in env]
    if ANALYZE is not None:
        checked = subprocess.run([ANALYZE, "verify", str(unit)], capture_output=True,
                                 text=True, timeout=60, check=False)
        assert checked.returncode == 0, checked.stderr
    assert "enabled and started" in done.lines[-1]


def test_remove_stops_disables_and_deletes(hostile: FileStore, bin_dir: Path) -> None:
    systemctl = fake(bin_dir, "systemctl")
    unit = Path(run_service(hostile, "install", platform="linux").path)
    status = run_service(hostile, "status", platform="linux")
    assert status.installed and status.lines[-1] == "watcher: none running here"
    done = run_service(hostile, "remove", platform="linux")
    assert not unit.exists() and not done.installed
    assert ["--user", "disable", "--now", unit.name] in runs(systemctl)
    assert "nothing to remove" in run_service(hostile, "remove", platform="linux").lines[0]


def test_without_a_user_manager_the_unit_is_left_and_said_so(
        hostile: FileStore, bin_dir: Path) -> None:
    systemctl = fake(bin_dir, "systemctl", code=1)
    done = run_service(hostile, "install", platform="linux")
    assert Path(done.path).exists()
    assert done.lines[-1].startswith("systemd is not running for this user here: the unit "
                                     "is written;")
    assert all(r[1] == "show-environment" for r in runs(systemctl))


def test_a_path_no_unit_can_hold_is_refused_and_nothing_written(
        tmp_path: Path, bin_dir: Path) -> None:
    fake(bin_dir, "systemctl")
    store = FileStore(tmp_path / "new\nline" / "mailbox")
    store.init()
    for platform in ("linux", "darwin"):
        with pytest.raises(InvalidInput, match="newline or control character"):
            run_service(store, "install", platform=platform)
    assert not (Path.home() / ".config").exists()
    assert not (Path.home() / "Library").exists()


def test_the_cli_refuses_in_one_line(tmp_path: Path, bin_dir: Path) -> None:
    fake(bin_dir, "systemctl")
    folder = tmp_path / "a\rb"
    r = run_cli("--dir", str(folder), "init")
    assert r.returncode == 0
    r = run_cli("--dir", str(folder), "watch", "--service", "install")
    if not sys.platform.startswith(("linux", "darwin")):
        pytest.skip("no service manager mailslot knows here")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1
    assert r.stderr.startswith("mailslot: error: ")


def test_launchd_agent_is_a_valid_plist_with_the_argv_whole(
        hostile: FileStore, bin_dir: Path) -> None:
    launchctl = fake(bin_dir, "launchctl")
    done = run_service(hostile, "install", platform="darwin")
    plist = Path(done.path)
    assert plist.parent == Path.home() / "Library" / "LaunchAgents"
    data = plistlib.loads(plist.read_bytes())
    assert data["ProgramArguments"] == watcher_argv(hostile.location)
    assert data["EnvironmentVariables"]["MAILSLOT_DIR"] == hostile.location
    assert runs(launchctl) == [["bootstrap", f"gui/{os.getuid()}", str(plist)]]
    if shutil.which("plutil"):  # macOS only; not on this project's CI (docs/wake.md)
        assert subprocess.run(["plutil", "-lint", str(plist)], check=False).returncode == 0
    run_service(hostile, "remove", platform="darwin")
    assert runs(launchctl)[-1] == ["bootout", f"gui/{os.getuid()}", str(plist)]
    assert not plist.exists()


def test_a_database_units_environment_holds_the_whole_address_and_its_argv_none(
        bin_dir: Path) -> None:
    """A database mailbox's password reaches the service's watcher in its environment
    (the unit file is 0600), never in its arguments, which every user can read."""
    from mailslot.backends.postgres.pg_store import PostgresStore

    fake(bin_dir, "systemctl")
    url = "postgresql://mailslot_owner:s3cret@db.example/mail"
    unit = Path(run_service(PostgresStore(url), "install", platform="linux").path)
    assert oct(unit.stat().st_mode)[-3:] == "600"
    lines = unit.read_text().splitlines()
    [exec_start] = [x for x in lines if x.startswith("ExecStart=")]
    assert "s3cret" not in exec_start
    assert systemd_words(exec_start)[-3:] == ["watch", "--started", "service"]
    env = [systemd_words(x)[0] for x in lines if x.startswith("Environment=")]
    assert f"MAILSLOT_STORE={url}" in env
