"""The command prefix shown to a model: runnable from its shell as it is."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mailslot.invocation import invocation, program

MINE = str(Path(sys.executable).parent / "mailslot")


def test_not_on_path_the_program_is_this_installations_absolute_path() -> None:
    assert program({"PATH": "/usr/bin:/bin"}) == MINE


def test_on_path_it_is_the_bare_name(tmp_path: Path) -> None:
    assert program({"PATH": f"{tmp_path}:{Path(MINE).parent}"}) == "mailslot"


def test_another_mailslot_first_on_path_is_not_taken_for_this_one(tmp_path: Path) -> None:
    other = tmp_path / "mailslot"
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    assert program({"PATH": f"{tmp_path}:{Path(MINE).parent}"}) == MINE


def test_always_names_the_agent_and_names_a_mailbox_that_is_not_the_default(
    tmp_path: Path
) -> None:
    env = {"PATH": str(Path(MINE).parent)}
    assert invocation("gemini", "~/mailslot", env) == "mailslot --agent gemini"
    assert invocation("gemini", os.path.expanduser("~/mailslot/"), env) == \
        "mailslot --agent gemini"
    box = tmp_path / "box"
    assert invocation("gemini", str(box), env) == f"mailslot --agent gemini --dir {box}"


def test_a_path_with_spaces_is_quoted(tmp_path: Path) -> None:
    box = tmp_path / "my box"
    line = invocation("gemini", str(box), {"PATH": "/usr/bin"})
    assert line == f"{MINE} --agent gemini --dir '{box}'"
