"""The host registry: one module per host, found by its file name, and no other module of
the package naming a host (what a host is lives in its module only)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mailslot import hosts
from mailslot.hosts.host import MOMENTS, Host

PACKAGE = Path(hosts.__file__).resolve().parent.parent


def host_words() -> list[str]:
    """What names a host: its name, title, program, runtime and package."""
    words: set[str] = set()
    for host in hosts.every():
        words |= {w for w in (host.name, host.title, host.program, host.runtime,
                              host.package) if w}
    return sorted(words, key=len, reverse=True)


def naming(text: str, words: list[str]) -> list[str]:
    """The host words in ``text``, as whole words (``_`` and ``-`` separate words, so
    ``COPILOT_TOOL`` and ``claude-code`` count; ``cursor.execute`` would too)."""
    pattern = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(map(re.escape, words))
                         + r")(?![A-Za-z0-9])", re.IGNORECASE)
    return [m.group(1) for m in pattern.finditer(text)]


def test_every_module_of_the_package_is_a_host_found_by_its_name() -> None:
    modules = sorted(p.stem for p in (PACKAGE / "hosts").glob("*.py")
                     if p.stem not in ("__init__", "host"))
    assert list(hosts.NAMES) == modules
    for name in hosts.NAMES:
        host = hosts.host(name)
        assert isinstance(host, Host) and host.name == name and host.title
        assert set(host.events.values()) <= set(MOMENTS)
        assert set(host.outputs) >= set(host.events.values()) & set(host.shows_at)
        assert all(hosts.host(other).runs_borrowed.__func__ is not Host.runs_borrowed
                   for other in host.lends_to)  # type: ignore[attr-defined]


def test_an_unknown_host_is_a_key_error_and_loads_nothing() -> None:
    with pytest.raises(KeyError):
        hosts.host("../host")
    with pytest.raises(KeyError):
        hosts.host("nosuch")


def test_no_module_outside_hosts_names_a_host() -> None:
    words = host_words()
    assert "claude" in words  # the registry was read
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] == "hosts":
            continue
        hits = naming(path.read_text(encoding="utf-8"), words)
        if hits:
            found[str(relative)] = sorted(set(hits))
    assert found == {}, "host knowledge belongs in its module under hosts/"


def test_the_check_sees_a_host_in_names_strings_and_comments() -> None:
    words = host_words()
    assert naming("COPILOT_TOOL = 1", words) == ["COPILOT"]
    assert naming('runtime = "claude-code"  # Claude Code', words) == ["claude-code",
                                                                       "Claude Code"]
    assert naming("recovery, discursive, pipeline", words) == []
