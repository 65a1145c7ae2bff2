"""docs/architecture.md cannot drift from the code: its map names every module of each
package it lists and no module that is gone, and its store tables have every group of
primitives (``store/primitives.py``) and every role (``store/roles.py``) with the number
of methods each really declares, and every namespace (``store/namespaces.py``) with its
key and kind."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "mailslot"
DOC = ROOT / "docs" / "architecture.md"
HEADING = re.compile(r"^.{13}((?:[a-z_]+/)+|\(root\))\s")
"""A package's first line in the map: its folder in the second column (``(root)``: the
package's own top-level modules)."""


def map_sections() -> dict[str, str]:
    """The map's text per package folder (``frontends/cli/``, ``backends/files/``...)."""
    block = DOC.read_text(encoding="utf-8").split("```")[1]
    sections: dict[str, str] = {}
    current = None
    for line in block.splitlines():
        found = HEADING.match(line)
        if found:
            current = found.group(1)
            sections[current] = ""
        if current:
            sections[current] += line + "\n"
    return sections


def test_the_map_names_every_module_and_only_modules_that_exist() -> None:
    sections = map_sections()
    assert {"frontends/cli/", "hosts/", "backends/files/", "core/"} <= set(sections)
    wrong = []
    for folder, text in sections.items():
        named = set(re.findall(r"\b([a-z0-9_]+)\.py\b", text)) - {"__init__"}
        where = PACKAGE if folder == "(root)" else PACKAGE / folder
        have = {p.stem for p in where.glob("*.py") if p.stem != "__init__"}
        wrong += [f"{folder}{name}.py is in the map but not in the package"
                  for name in sorted(named - have)]
        wrong += [f"{folder}{name}.py is in the package but not in the map"
                  for name in sorted(have - named)]
    packages = {p.parent.relative_to(PACKAGE).as_posix() + "/"
                for p in PACKAGE.rglob("*.py") if p.parent != PACKAGE
                and "__pycache__" not in p.parts}
    wrong += [f"package {folder} has no place in the map"
              for folder in sorted(packages - set(sections))]
    assert not wrong, "\n".join(wrong)


def primitive_groups() -> dict[str, int]:
    """Each group of primitives in store/primitives.py and its methods (attributes apart)."""
    tree = ast.parse((PACKAGE / "store" / "primitives.py").read_text(encoding="utf-8"))
    return {node.name: sum(1 for n in node.body
                           if isinstance(n, ast.FunctionDef) and not n.name.startswith("_"))
            for node in tree.body if isinstance(node, ast.ClassDef)
            and node.name != "Primitives"}


def test_the_store_tables_are_the_primitives_and_the_roles_with_their_counts() -> None:
    """One row per group of primitives (what a backend writes) and per role (what
    ``Store`` builds on them), each with the number of methods the code declares."""
    from mailslot.store.roles import ROLES

    rows = re.findall(r"^\| `(\w+)` \| .* \| (\d+)(?: \+ \d+ attributes)? \|$",
                      DOC.read_text(encoding="utf-8"), re.M)
    table = {name: int(count) for name, count in rows}
    assert table == {**primitive_groups(),
                     **{name: len(methods) for name, (_, methods) in ROLES.items()}}


def test_the_namespace_table_is_every_namespace_with_its_key() -> None:
    from mailslot.store.namespaces import NAMESPACES

    rows = re.findall(r"^\| `([a-z.-]+)` \| ([^|]+?) \| (value|set)(, timed)? \|",
                      DOC.read_text(encoding="utf-8"), re.M)
    table = {name: (key, kind, bool(timed)) for name, key, kind, timed in rows}
    assert set(table) == set(NAMESPACES)
    for name, space in NAMESPACES.items():
        key = ", ".join(space.parts) or "()"
        if space.least < len(space.parts):  # the last part may be left out
            key = ", ".join(space.parts[:-1]) + f"[, {space.parts[-1]}]"
        assert table[name] == (key, space.kind, space.timed), name
