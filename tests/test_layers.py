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

from mailslot.host_registry.host import PARTS

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


def test_only_the_backends_build_a_file_store() -> None:
    builders = sorted(
        name for name, path in modules().items()
        if not name.startswith("mailslot.backends")
        and any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name | ast.Attribute)
                and (n.func.id if isinstance(n.func, ast.Name) else n.func.attr) == "FileStore"
                for n in ast.walk(ast.parse(path.read_text())))
    )
    assert builders == []


def reaching_into_a_backend(edges: dict[str, set[str]]) -> list[str]:
    """The imports of a backend's own module (``backends.files.*``, ``backends.postgres.*``)
    from outside ``backends/``: a module outside may import ``mailslot.backends`` (the
    factory, ``open_store``) and ``mailslot.store`` (the protocol, its values, the public
    file format), never a backend's own modules, which may change with it. The package
    root re-exports ``FileStore`` as public API, and is the one exception."""
    return sorted(f"{a} -> {b}" for a, targets in edges.items()
                  if a != "mailslot" and not a.startswith("mailslot.backends")
                  for b in targets if b.startswith("mailslot.backends."))


def test_no_module_outside_the_backends_imports_a_backends_own_modules() -> None:
    assert reaching_into_a_backend(graph()) == []


def test_the_backend_rule_names_the_module_that_reaches_in(tmp_path: Path) -> None:
    """Relative and absolute imports both count; the backends' own modules are free."""
    names = ["mailslot.backends.files.fs", "mailslot.store.records", "mailslot.wake.bank",
             "mailslot.keep.backup", "mailslot.backends.files.file_store", "mailslot.backends"]
    known = {name: tmp_path / f"{name}.py" for name in names}
    known["mailslot.wake.bank"].write_text("from ..backends.files.fs import remove\n"
                                           "from ..backends import open_store\n")
    known["mailslot.keep.backup"].write_text("import mailslot.backends.files.fs\n"
                                             "from ..store.records import WakeEntry\n")
    known["mailslot.backends.files.file_store"].write_text("from .fs import remove\n")
    for name in ("mailslot.backends.files.fs", "mailslot.store.records", "mailslot.backends"):
        known[name].write_text("")
    edges = {name: imports(name, path, known) for name, path in known.items()}
    assert reaching_into_a_backend(edges) == [
        "mailslot.keep.backup -> mailslot.backends.files.fs",
        "mailslot.wake.bank -> mailslot.backends.files.fs"]


def folder_of(name: str, path: Path) -> str:
    """The folder a module is in, as a dotted name (a package's ``__init__`` is in its own)."""
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def test_there_is_no_cycle_between_folders() -> None:
    """The folders are the layers: one folder's modules may use another's, or be used by
    it, never both (a cycle of folders would be two layers in one)."""
    known = modules()
    edges: dict[str, set[str]] = {}
    for name, targets in graph().items():
        here = folder_of(name, known[name])
        edges.setdefault(here, set()).update(
            t for t in (folder_of(b, known[b]) for b in targets) if t != here)
    state: dict[str, int] = {}

    def cycle_from(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt] if nxt in path else [node, nxt]
            if nxt not in state and (found := cycle_from(nxt, [*path, nxt])):
                return found
        state[node] = 2
        return None

    for start in sorted(edges):
        if start not in state:
            found = cycle_from(start, [start])
            assert found is None, " -> ".join(found or [])


def test_the_reader_sees_lazy_relative_imports(tmp_path: Path) -> None:
    """An import inside a function is a dependency too (it would hide a cycle)."""
    errors, commands = "mailslot.core.errors", "mailslot.frontends.cli.main"
    known = {errors: tmp_path / "errors.py", commands: tmp_path / "main.py"}
    known[errors].write_text("def f():\n    from ..frontends.cli.main import main\n")
    known[commands].write_text("from ...core.errors import MailslotError\n")
    assert imports(errors, known[errors], known) == {commands}
    assert imports(commands, known[commands], known) == {errors}


def named_by_their_loader(relative: Path) -> bool:
    """Is this file one whose name a loader chooses: a package's ``__init__.py`` (Python
    names it) or a host's part, ``hosts/NAME/PART.py`` (the registry loads it by
    ``PART``: :data:`~mailslot.host_registry.host.PARTS`)?"""
    part = (len(relative.parts) == 3 and relative.parts[0] == "hosts"
            and relative.stem in PARTS)
    return relative.name == "__init__.py" or part


def test_no_two_modules_share_a_file_name() -> None:
    """A module's file name says what it holds, wherever it sits: two modules whose names
    differ only by folder (``gates.py`` and ``store/gates.py``) send a reader to the wrong
    one. The only exceptions are the names a loader chooses (:func:`named_by_their_loader`):
    each host's ``wake.py`` is found in its host's folder, as its ``__init__.py`` is."""
    folders: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if not named_by_their_loader(path.relative_to(PACKAGE)):
            folders.setdefault(path.name, []).append(str(path.relative_to(PACKAGE)))
    shared = {name: sorted(paths) for name, paths in folders.items() if len(paths) > 1}
    assert shared == {}


def test_only_a_hosts_parts_share_their_names_across_folders() -> None:
    """A part's name is free only as a host's part: the same name elsewhere counts."""
    assert named_by_their_loader(Path("hosts/codex/wake.py"))
    assert named_by_their_loader(Path("hosts/claude/bridge.py"))
    assert named_by_their_loader(Path("backends/files/__init__.py"))
    assert not named_by_their_loader(Path("hosts/claude/door.py"))
    assert not named_by_their_loader(Path("hosts/wake.py"))
    assert not named_by_their_loader(Path("frontends/wake.py"))
    assert not named_by_their_loader(Path("hosts/codex/wake/wake.py"))
