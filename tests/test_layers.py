"""The layers of docs/architecture.md hold: no import points up, and there is no cycle.

The import graph is read with ``ast`` from the package's sources: imports at the top of
a module, inside functions and under ``TYPE_CHECKING`` all count (a lazy import is still
a dependency). The layer map is read from the doc itself, so the two cannot drift.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "mailslot"
DOC = PACKAGE.parent.parent / "docs" / "architecture.md"


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (``mailslot`` is the package)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports, anywhere in it."""
    found: set[str] = set()
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                whole = f"{target}.{alias.name}"
                found.add(whole if whole in known else target)
    return {m for m in found if m in known and m != name}


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def layer_list() -> list[list[str]]:
    """The doc's marked list, top layer first: each layer's names (``pkg.*`` is a package
    and all of it; a name given on its own is placed there instead)."""
    text = DOC.read_text()
    block = text.split("<!-- layers: begin -->")[1].split("<!-- layers: end -->")[0]
    return [[short.strip() for short in line.split(",")]
            for line in re.findall(r"^- [^:]+: (.+)$", block, re.M)]


def layers(known: Iterable[str] | None = None) -> dict[str, int]:
    """Module → layer number (0 is the top), from the doc's marked list."""
    names = list(modules() if known is None else known)
    rank: dict[str, int] = {}
    for number, shorts in enumerate(layer_list()):
        for short in shorts:
            if short.endswith(".*"):
                continue
            name = "mailslot" if short == "mailslot" else f"mailslot.{short}"
            assert name not in rank, f"{name} is in two layers of docs/architecture.md"
            rank[name] = number
    for number, shorts in enumerate(layer_list()):
        for short in shorts:
            if short.endswith(".*"):
                package = f"mailslot.{short[:-2]}"
                for name in names:
                    if (name == package or name.startswith(f"{package}.")) and name not in rank:
                        rank[name] = number
    return rank


def test_every_package_pattern_is_in_one_layer() -> None:
    patterns = [short for shorts in layer_list() for short in shorts if short.endswith(".*")]
    assert sorted(set(patterns)) == sorted(patterns)


def test_every_module_is_in_exactly_one_layer() -> None:
    rank = layers()
    known = set(modules())
    assert known - set(rank) == set(), "add these to the layer list in docs/architecture.md"
    assert set(rank) - known == set(), "the layer list names modules that do not exist"


def test_no_import_points_to_a_higher_layer() -> None:
    rank = layers()
    upward = sorted(f"{a} -> {b}" for a, targets in graph().items() for b in targets
                    if rank[b] < rank[a])
    assert upward == []


def test_there_is_no_import_cycle() -> None:
    edges = graph()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state:
            cycle = visit(start)
            assert cycle is None, " -> ".join(cycle or [])


def test_only_the_store_package_builds_a_file_store() -> None:
    builders = sorted(
        name for name, path in modules().items()
        if not name.startswith("mailslot.store")
        and any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name | ast.Attribute)
                and (n.func.id if isinstance(n.func, ast.Name) else n.func.attr) == "FileStore"
                for n in ast.walk(ast.parse(path.read_text())))
    )
    assert builders == []


STORE_SURFACE = {"mailslot.store", "mailslot.store.base", "mailslot.store.roles",
                 "mailslot.store.location", "mailslot.store.records"}
"""What a module outside ``store/`` may import of it: the package (its ``__init__``
re-exports what is public, the file layout of docs/format.md included), the protocol
and its roles, ``open_store`` and the values every backend hands out. Everything else
in ``store/`` is one backend's own and may change with it."""


def reaching_into_the_store(edges: dict[str, set[str]]) -> list[str]:
    """The imports of a backend's own module from outside ``store/``."""
    return sorted(f"{a} -> {b}" for a, targets in edges.items()
                  if a != "mailslot.store" and not a.startswith("mailslot.store.")
                  for b in targets
                  if b.startswith("mailslot.store.") and b not in STORE_SURFACE)


def test_no_module_outside_the_store_imports_a_backends_own_modules() -> None:
    assert reaching_into_the_store(graph()) == []


def test_the_store_rule_names_the_module_that_reaches_in(tmp_path: Path) -> None:
    """Relative and absolute imports both count; the store's own modules are free."""
    names = ["mailslot.store.files.fs", "mailslot.store.records", "mailslot.wake.bank",
             "mailslot.keep.backup", "mailslot.store.files.file_store"]
    known = {name: tmp_path / f"{name}.py" for name in names}
    known["mailslot.wake.bank"].write_text("from ..store.files.fs import remove\n")
    known["mailslot.keep.backup"].write_text("import mailslot.store.files.fs\n"
                                             "from ..store.records import WakeEntry\n")
    known["mailslot.store.files.file_store"].write_text("from .fs import remove\n")
    for name in ("mailslot.store.files.fs", "mailslot.store.records"):
        known[name].write_text("")
    edges = {name: imports(name, path, known) for name, path in known.items()}
    assert reaching_into_the_store(edges) == [
        "mailslot.keep.backup -> mailslot.store.files.fs",
        "mailslot.wake.bank -> mailslot.store.files.fs"]


def test_the_reader_sees_lazy_relative_imports(tmp_path: Path) -> None:
    """An import inside a function is a dependency too (it would hide a cycle)."""
    errors, commands = "mailslot.core.errors", "mailslot.cli.main"
    known = {errors: tmp_path / "errors.py", commands: tmp_path / "main.py"}
    known[errors].write_text("def f():\n    from ..cli.main import main\n")
    known[commands].write_text("from ..core.errors import MailslotError\n")
    assert imports(errors, known[errors], known) == {commands}
    assert imports(commands, known[commands], known) == {errors}


def test_no_two_modules_share_a_file_name() -> None:
    """A module's file name says what it holds, wherever it sits: two modules whose names
    differ only by folder (``gates.py`` and ``store/gates.py``) send a reader to the wrong
    one. Package ``__init__.py`` files are the only exception (Python names them)."""
    folders: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name != "__init__.py":
            folders.setdefault(path.name, []).append(str(path.relative_to(PACKAGE)))
    shared = {name: sorted(paths) for name, paths in folders.items() if len(paths) > 1}
    assert shared == {}
