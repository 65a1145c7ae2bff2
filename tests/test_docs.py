"""Docs that cannot drift (STYLE habit 9): docs/cli.md is generated from --help."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from mailslot.cli import _COMMANDS, _UNTRANSLATED, build_parser

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
    assert set(gen.commands(build_parser())) == set(_COMMANDS) | set(_UNTRANSLATED)


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
