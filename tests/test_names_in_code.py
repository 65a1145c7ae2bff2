"""Names say what the code holds, never when it was added: no "issue N" in the package,
the docs, the README, the tests, the benchmarks or the scripts. The history of which issue
brought what is the CHANGELOG's, the one file a user reads as history."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "mailslot"
ISSUE = re.compile(r"\bissues?\s*#?\d+\b", re.IGNORECASE)
ELSEWHERE = re.compile(r"\b(principle|(style )?habit)\s+\d+\b", re.IGNORECASE)
"""A numbered rule of a document outside this repository: a reader here cannot follow it."""
FENCE = re.compile(r"^\s*(```|~~~)")


def package_files() -> list[Path]:
    """Every text file the package ships (sources, web assets), bytecode left out."""
    return sorted(p for p in PACKAGE.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


def headings(path: Path) -> list[tuple[int, str]]:
    """The markdown headings of ``path`` with their line numbers (code blocks skipped:
    a shell comment in an example is no heading)."""
    found, fenced = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            found.append((number, line))
    return found


def test_the_package_names_no_issue() -> None:
    files = package_files()
    assert any(p.name == "entry.py" for p in files)  # the walk found the sources
    hits = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
            for p in files
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if ISSUE.search(line) or ELSEWHERE.search(line)]
    assert not hits, "say what the code holds, not which issue added it:\n" + "\n".join(hits)


def test_no_doc_heading_names_an_issue() -> None:
    docs = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]
    assert len(docs) > 5
    hits = [f"{p.relative_to(ROOT)}:{n}: {line}"
            for p in docs for n, line in headings(p) if ISSUE.search(line)]
    assert not hits, "a heading says what the section holds:\n" + "\n".join(hits)


def project_texts() -> list[Path]:
    """What a user or contributor reads beside the package: the docs and README, the
    tests, benchmarks and scripts, the CI entry point (this file's own examples aside)."""
    found = [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md", ROOT / ".ci" / "run",
             ROOT / "Makefile", ROOT / "pyproject.toml"]
    for folder in ("tests", "bench", "scripts"):
        found += sorted(p for p in (ROOT / folder).rglob("*")
                        if p.suffix in (".py", ".md", ".sh") and "__pycache__" not in p.parts)
    return [p for p in found if p != Path(__file__).resolve()]


def test_no_doc_test_or_script_names_an_issue() -> None:
    """A reader cannot follow "Decision (issue 28)" anywhere: say what was decided."""
    texts = project_texts()
    assert any(p.name == "security.md" for p in texts)
    assert any(p.name == "conftest.py" for p in texts)
    hits = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
            for p in texts
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if ISSUE.search(line) or ELSEWHERE.search(line)]
    assert not hits, "history belongs in CHANGELOG.md, a rule is said, not numbered:\n" + \
        "\n".join(hits)


def test_the_check_sees_the_forms_used() -> None:
    """The pattern catches the shapes the old references had, and not ordinary words."""
    for text in ("# issue 17: search ----", "(issue 12)", "Issue 18: notifiers",
                 "(issues 9, 15 and 18)", "see issue #4"):
        assert ISSUE.search(text), text
    for text in ("an issue with 3 parts", "tissue 4", "issued 5 times"):
        assert not ISSUE.search(text), text
    for text in ("(principle 7)", "STYLE habit 3", "Principle 8: light"):
        assert ELSEWHERE.search(text), text
