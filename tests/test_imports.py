"""Fast where it is felt: every CLI path but ``serve`` stays light (no MCP SDK, pydantic,
starlette)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from support import fake_program

HEAVY = ("mcp", "mcp_types", "pydantic", "pydantic_core", "starlette", "watchdog", "anyio")

SCRIPT = """
import io, json, sys
from mailslot.frontends.cli.main import main

def run(*argv):
    sys.stdin = io.TextIOWrapper(io.BytesIO(b"body"))
    try:
        main(list(argv))
    except SystemExit:
        pass

run("--agent", "claude", "send", "--to", "gemini", "--subject", "s", "--body", "b")
run("--agent", "gemini", "inbox")
run("--agent", "gemini", "inbox", "--json")
run("--agent", "claude", "broadcast", "--subject", "s")
run("who")
run("doctor")
run("--agent", "claude", "install", "claude", "--hooks", "--wake")
run("--agent", "codex", "install", "codex", "--hooks", "--dry-run")
run("serve")  # without an identity it is refused before importing anything
run("--help")
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(sys.argv[1])))
print(json.dumps(heavy))
"""


def test_cli_paths_other_than_serve_do_not_import_heavy_modules(isolated: Path,
                                                               bin_dir: Path) -> None:
    fake_program(bin_dir, "claude", "2.1.332 (Claude Code)")  # install --wake reads it
    done = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(HEAVY)],
                          capture_output=True, text=True, check=True, cwd=isolated / "work")
    assert json.loads(done.stdout.splitlines()[-1]) == []
    assert (isolated / "work" / ".mcp.json").exists()  # the install really ran
