"""Principle 8: the CLI never imports the MCP SDK, pydantic, starlette or watchdog."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("mcp", "pydantic", "starlette", "watchdog")
PROBE = f"""
import json, sys
from mailslot.cli import main
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
def test_cli_commands_stay_light(argv: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True,
                          text=True, timeout=60, check=False)
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    assert report == {"code": 0, "heavy": []}, proc.stderr
