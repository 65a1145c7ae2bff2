"""Fast where it is felt: the CLI never imports the MCP SDK, the A2A SDK (with Google's
protobuf), pydantic, starlette or watchdog."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hookkit import sender
from mailslot import host_registry as hosts
from mailslot.host_registry.host import START

HEAVY = ("mcp", "a2a", "google", "pydantic", "starlette", "watchdog")
PROBE = f"""
import json, sys
from mailslot.frontends.cli.main import main
code = main(sys.argv[1:])
heavy = sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r}))
print(json.dumps({{"code": code, "heavy": heavy}}), file=sys.stderr)
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["--agent", "x", "inbox"],
        ["--agent", "x", "send", "--to", "y", "--subject", "s", "--body", "b"],
        ["--agent", "y", "inbox", "--all", "--json"],
        ["who"],
        ["doctor"],
    ],
)
def test_cli_commands_stay_light(argv: list[str], root: Path) -> None:
    root.mkdir(mode=0o700)  # a mailbox: the reading commands refuse a missing one
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True,
                          text=True, timeout=60, check=False)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    assert report == {"code": 0, "heavy": []}, proc.stderr


# What the everyday commands leave out, so each stays within 3x of `python -c
# pass` (bench/bench_cli.py): dataclasses (with inspect, ast, tokenize; see
# mailslot.core.values), pathlib, shutil (argparse's terminal width; see cli._columns),
# PyYAML (the header emitter in mailslot.core.message), threading, typing (annotations only,
# under TYPE_CHECKING), sqlite3 (a send leaves a marker for the search index) and
# datetime.py (the classes come from _datetime; see mailslot.core.dates).
# json: its module compiles six patterns at import (mailslot.core.jsontext reads and writes
# JSON with its C part; only --json output, indented, loads it).
EVERYDAY_SKIPS = ("dataclasses", "inspect", "ast", "tokenize", "pathlib", "shutil", "yaml",
                  "threading", "typing", "sqlite3", "datetime", "json",
                  # argparse only for help and errors: a plain line is parsed without
                  # it (mailslot.frontends.cli.plain_parse)
                  "argparse", "gettext")
def _entry_probe(loaded: str) -> str:
    """A script running the console script's ``main`` on its argv, then printing the
    exit code and ``loaded`` (an expression over ``sys.modules``) as JSON on stderr."""
    return f"""
import os, sys
from mailslot.entry import main
sys.argv = ["mailslot", *sys.argv[1:]]
def ended(code):  # the console script ends with os._exit: report before it
    raise SystemExit(code)
os._exit = ended
try:
    code = main()
except SystemExit as exit:
    code = exit.code
loaded = {loaded}
import json  # it loads re: only now
print(json.dumps({{"code": code, "loaded": loaded}}), file=sys.stderr)
"""


EVERYDAY = _entry_probe(
    f"sorted({{m.split('.')[0] for m in sys.modules}} & set({EVERYDAY_SKIPS!r}))")


@pytest.mark.parametrize(
    "argv",
    [
        ["--agent", "x", "send", "--to", "y", "--subject", "s", "--body", "b"],
        ["--agent", "y", "inbox"],
        ["who"],
        ["doctor"],
    ],
)
def test_everyday_commands_load_only_what_they_need(argv: list[str], tmp_path: Any) -> None:
    env = {**os.environ, "MAILSLOT_DIR": str(tmp_path / "mailbox")}
    (tmp_path / "mailbox").mkdir(mode=0o700)
    env.pop("MAILSLOT_AGENT", None)
    proc = subprocess.run([sys.executable, "-c", EVERYDAY, *argv], capture_output=True,
                          text=True, timeout=60, check=False, env=env)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    assert report == {"code": 0, "loaded": []}, proc.stderr


WAKE_PROBE = """
import json, os, sys
from mailslot.entry import main
sys.argv = ["mailslot", *sys.argv[1:]]
def ended(code):
    raise SystemExit(code)
os._exit = ended
try:
    main()
except SystemExit:
    pass
print(json.dumps(sorted(m for m in sys.modules if m.startswith("mailslot.wake."))),
      file=sys.stderr)
"""


def test_a_send_loads_the_wake_modules_only_where_a_recipient_has_settings(
        tmp_path: Any) -> None:
    root = tmp_path / "mailbox"
    env = {**os.environ, "MAILSLOT_DIR": str(root)}
    env.pop("MAILSLOT_AGENT", None)

    def send(to: str) -> list[str]:
        proc = subprocess.run([sys.executable, "-c", WAKE_PROBE, "--agent", "x", "send",
                               "--to", to, "--subject", "s", "--body", "b", "--new"],
                              capture_output=True, text=True, timeout=60, check=False,
                              env=env)
        loaded: list[str] = json.loads(proc.stderr.strip().splitlines()[-1])
        return loaded

    assert send("plain") == []
    config = {"agents": {"woken": {"wake_on_mail": True, "wake_method": "tmux",
                                   "tmux_target": "w:0"}}}
    (root / "config.json").write_text(json.dumps(config))
    assert "mailslot.wake.queue" in send("woken")
    assert (root / "wake" / "pending" / "woken").is_dir()  # and the wake was queued


CLI_MODULES = """
import json, sys
from mailslot.frontends.cli.main import main
code = main(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m.startswith("mailslot.frontends.cli."))
print(json.dumps({"code": code, "loaded": loaded}), file=sys.stderr)
"""


@pytest.mark.parametrize(("argv", "module"), [
    (["--agent", "y", "inbox"], "mail_commands"),
    (["who"], "agent_commands"),
    (["doctor"], "admin_commands"),
])
def test_a_command_loads_only_the_module_declaring_it(argv: list[str], module: str,
                                                      tmp_path: Any) -> None:
    """The parser is built for the command being run, from its own module only."""
    env = {**os.environ, "MAILSLOT_DIR": str(tmp_path / "mailbox")}
    (tmp_path / "mailbox").mkdir(mode=0o700)
    env.pop("MAILSLOT_AGENT", None)
    proc = subprocess.run([sys.executable, "-c", CLI_MODULES, *argv], capture_output=True,
                          text=True, timeout=60, check=False, env=env)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    assert report["code"] == 0
    cli = "mailslot.frontends.cli"
    assert set(report["loaded"]) == {f"{cli}.command", f"{cli}.{module}", f"{cli}.main",
                                     f"{cli}.plain_parse", f"{cli}.render"}  # no parser


HOST_PROBE = _entry_probe(
    "sorted(m for m in sys.modules if m.startswith('mailslot.hosts.') or m.split('.')[0] in "
    "('psycopg', 'subprocess', 'typing', 're', 'enum', 'functools', 'collections') "
    "or m == 'mailslot.wake.tmux')")


@pytest.mark.parametrize(("argv", "hosts_loaded"), [
    (["--agent", "y", "inbox"], []),
    (["who"], []),
    (["doctor"], [m for h in hosts.BRIDGED  # a bridged host and its bridge, no other
                  for m in (f"mailslot.hosts.{h}", f"mailslot.hosts.{h}.bridge")]),
])
def test_a_command_loads_no_host_it_does_not_ask(argv: list[str], hosts_loaded: list[str],
                                                 tmp_path: Any) -> None:
    """``doctor`` asks the hosts that bring a bridge whether one runs, and no other
    host; over a config naming no wake method it builds no wake method (so loads
    neither tmux's nor subprocess); ``inbox`` and ``who`` load no host and no driver.
    None of them loads ``re`` and what it brings (``enum``, ``functools``,
    ``collections``): argparse did, and a plain line is parsed without it."""
    env = {**os.environ, "MAILSLOT_DIR": str(tmp_path / "mailbox")}
    (tmp_path / "mailbox").mkdir(mode=0o700)
    env.pop("MAILSLOT_AGENT", None)
    proc = subprocess.run([sys.executable, "-c", HOST_PROBE, *argv], capture_output=True,
                          text=True, timeout=60, check=False, env=env)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    assert report == {"code": 0, "loaded": sorted(hosts_loaded)}, proc.stderr


HOOK_PROBE = _entry_probe(
    "sorted(m for m in sys.modules if m.startswith(('mailslot.hosts.', 'mailslot.wake.')))")


@pytest.mark.parametrize("name", hosts.names(lambda h: START in h.events.values()))
def test_a_hook_loads_its_hosts_facts_and_no_wake_part(name: str, root: Path) -> None:
    """A hook showing mail loads its host's facts (and those of the hosts it builds on or
    lends its hooks to), its bridge where it has one (the answer note asks whether one
    runs), and never a host's ``wake`` part, Claude Code's door or the wake methods'
    bases: they are loaded by name only when a wake method is asked for."""
    sender(root, "bob").send("ada", "hello", "waiting")
    event = next(e for e, moment in hosts.host(name).events.items() if moment == START)
    proc = subprocess.run([sys.executable, "-c", HOOK_PROBE, "hook", name, event,
                           "--agent", "ada"], input='{"session_id": "s1"}',
                          capture_output=True, text=True, timeout=60, check=False)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    assert "waiting" in proc.stdout, proc.stderr  # the hook showed the mail
    loaded = report["loaded"]
    assert f"mailslot.hosts.{name}" in loaded
    assert [m for m in loaded if m.endswith((".wake", ".door"))
            or m in ("mailslot.wake.methods", "mailslot.wake.line_socket")] == []
    if name == "claude":  # its own facts, its bridge, and the two hosts that run its hooks
        assert [m for m in loaded if m.startswith("mailslot.hosts.")] == [
            "mailslot.hosts.claude", "mailslot.hosts.claude.bridge",
            "mailslot.hosts.copilot", "mailslot.hosts.cursor"]


SERVICE_PROBE = _entry_probe(
    "sorted(m for m in sys.modules if m in ('mailslot.service.overview', "
    "'mailslot.service.ladder', 'mailslot.service.recipients', 'mailslot.mail.governor'))")


@pytest.mark.parametrize(("argv", "loaded"), [
    (["--agent", "y", "inbox"], []),
    (["who"], ["mailslot.service.overview"]),
    (["--agent", "y", "send", "--to", "z", "--subject", "s", "--body", "b", "--new"],
     ["mailslot.mail.governor", "mailslot.service.recipients"]),
])
def test_a_command_loads_only_the_service_helpers_it_uses(argv: list[str], loaded: list[str],
                                                          tmp_path: Any) -> None:
    """Every feature module of the mailbox is loaded by every command (they make one
    class), so each loads at its top only what a page of mail needs: a page loads neither
    the overview (status, who, doctor), the delivery ladder, the recipients' checks nor
    the loop governor; ``who`` only the overview; ``send`` the checks and the governor."""
    env = {**os.environ, "MAILSLOT_DIR": str(tmp_path / "mailbox")}
    env.pop("MAILSLOT_AGENT", None)
    first = subprocess.run([sys.executable, "-m", "mailslot", "--agent", "x", "send", "--to",
                            "y", "--subject", "s", "--body", "b", "--new"],
                           capture_output=True, text=True, timeout=60, check=False, env=env)
    assert first.returncode == 0, first.stderr  # mail for y: an empty inbox asks for more
    proc = subprocess.run([sys.executable, "-c", SERVICE_PROBE, *argv], capture_output=True,
                          text=True, timeout=60, check=False, env=env)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    assert report == {"code": 0, "loaded": loaded}, proc.stderr
