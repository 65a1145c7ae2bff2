"""Pieces a newcomer can read: no module past 700 lines, no class past 400 (the service
is one entry point made of one class per feature, not a thousand-line class) and no
function past 80 lines."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "mailslot"
MODULE_LINES, CLASS_LINES, FUNCTION_LINES = 700, 400, 80


def _modules() -> list[tuple[str, str]]:
    """Every module of the package, by its path inside it, and its text."""
    return [(path.relative_to(PACKAGE).as_posix(), path.read_text(encoding="utf-8"))
            for path in sorted(PACKAGE.rglob("*.py"))]


def _too_long(kinds: tuple[type[ast.AST], ...], limit: int) -> list[str]:
    """Every definition of ``kinds`` longer than ``limit`` lines (decorators counted)."""
    found = []
    for name, text in _modules():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, kinds):
                assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                lines = (node.end_lineno or node.lineno) - first + 1
                if lines > limit:
                    found.append(f"{name}: {node.name} is {lines} lines")
    return found


def test_no_module_is_longer_than_700_lines() -> None:
    long = [f"{name} is {len(text.splitlines())} lines" for name, text in _modules()
            if len(text.splitlines()) > MODULE_LINES]
    assert not long, "\n".join(long)


def test_no_class_is_longer_than_400_lines() -> None:
    long = _too_long((ast.ClassDef,), CLASS_LINES)
    assert not long, "\n".join(long)


def test_no_function_is_longer_than_80_lines() -> None:
    long = _too_long((ast.FunctionDef, ast.AsyncFunctionDef), FUNCTION_LINES)
    assert not long, "\n".join(long)
