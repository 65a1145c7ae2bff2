"""Docs that cannot drift: docs/cli.md is generated from --help."""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from mailslot.frontends.cli.command import COMMAND_NAMES, declared
from mailslot.frontends.cli.parser import build_parser

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_cli_docs",
                                                  ROOT / "scripts" / "gen_cli_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_command_has_a_handler_and_a_parser(gen: ModuleType) -> None:
    handled = {c.name for c in declared() if c.run is not None or c.bare is not None}
    assert list(gen.commands(build_parser())) == COMMAND_NAMES
    assert handled == set(COMMAND_NAMES)


def test_every_command_is_documented(gen: ModuleType) -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    missing = [n for n in gen.commands(build_parser()) if f"\n## mailslot {n}\n" not in text]
    assert not missing, f"undocumented in docs/cli.md: {missing}; run scripts/gen_cli_docs.py"


def test_cli_doc_is_current(gen: ModuleType) -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert text == gen.render(), "docs/cli.md is stale: run python scripts/gen_cli_docs.py"


def test_docs_the_readme_links_to_exist() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in ("docs/format.md", "docs/cli.md", "docs/security.md"):
        assert name in readme and (ROOT / name).is_file(), name


def readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_shows_an_install_line_for_every_host() -> None:
    from mailslot.host_registry import NAMES

    missing = [h for h in NAMES if f"mailslot install {h} --agent {h}" not in readme()]
    assert not missing, f"README.md shows no `mailslot install` for {missing}"


def test_the_readme_counts_and_names_the_hooks_install_writes() -> None:
    from mailslot.host_registry import host

    words = {3: "three", 4: "four", 5: "five"}
    codex, gemini = host("codex").hook_file, host("gemini").hook_file
    assert codex is not None and gemini is not None
    assert f"approve the {words[len(codex.hooks)]} mailslot\nhooks" in readme()
    named = readme().split("The hooks are named", 1)[1].split("in `/hooks`", 1)[0]
    assert re.findall(r"`mailslot-([\w-]+)`", named) == [h.ours for h in gemini.hooks]


def test_the_readme_names_the_age_tool_the_tests_check_backups_against() -> None:
    assert "postgresql chromium age`" in readme()
    assert "age -d -i KEY" in readme()


def make_dry_run(target: str) -> str:
    """What ``make TARGET`` would run on a fresh machine (a venv that does not exist)."""
    done = subprocess.run(["make", "-n", "-B", "-C", str(ROOT), target,
                           "VENV=.venv-not-made"], capture_output=True, text=True, check=True)
    return done.stdout


def test_make_demo_installs_mailslot_alone_and_make_test_the_dev_tools() -> None:
    demo, test = make_dry_run("demo"), make_dry_run("test")
    assert "-m venv .venv-not-made" in demo and "-m venv .venv-not-made" in test
    assert "pip install --quiet -e .\n" in demo and "[dev]" not in demo
    assert "pip install --quiet -e '.[dev]'" in test
