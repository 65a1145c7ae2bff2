"""The host registry: one module or package per host under ``hosts/``, found by its name,
and no other module of the package naming a host (what a host is lives there only)."""

from __future__ import annotations

import builtins
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mailslot import host_registry as hosts
from mailslot.host_registry.host import MOMENTS, Host
from mailslot.wake.methods_by_name import every_method

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


def test_every_module_or_package_of_the_adapters_is_a_host_found_by_its_name() -> None:
    folder = PACKAGE / "hosts"
    found = sorted([p.stem for p in folder.glob("*.py") if p.stem != "__init__"]
                   + [p.parent.name for p in folder.glob("*/__init__.py")])
    assert "claude" in found and "codex" in found  # a package and a module
    assert list(hosts.NAMES) == found
    for name in hosts.NAMES:
        host = hosts.host(name)
        assert isinstance(host, Host) and host.name == name and host.title
        assert set(host.events.values()) <= set(MOMENTS)
        assert set(host.outputs) >= set(host.events.values()) & set(host.shows_at)
        assert all(hosts.host(other).runs_borrowed.__func__ is not Host.runs_borrowed
                   for other in host.lends_to)  # type: ignore[attr-defined]


def test_an_unknown_host_is_a_key_error_and_loads_nothing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    real = builtins.__import__

    def importing(name: str, *args: Any, **kwargs: Any) -> Any:
        asked.append(name)
        return real(name, *args, **kwargs)

    hosts._LOADED.pop("gemini", None)  # a known host not loaded now
    loaded = dict(hosts._LOADED)
    monkeypatch.setattr(builtins, "__import__", importing)
    for name in ("../host", "nosuch", "Gemini", "gemini/../claude", "host", "__init__"):
        with pytest.raises(KeyError):
            hosts.host(name)
    monkeypatch.undo()
    assert [n for n in asked if n.startswith("mailslot.hosts")] == []  # no import tried
    assert loaded == hosts._LOADED  # and no host loaded


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


def test_the_bridged_hosts_are_those_whose_module_brings_a_bridge() -> None:
    assert hosts.names(lambda h: h.bridge() is not None) == hosts.BRIDGED


FIND = """
import json, sys
from mailslot.wake.methods_by_name import find_method
found = {}
for name in sys.argv[1:]:
    method = find_method(name)
    found[name] = method and f"{method.__module__}.{method.__qualname__}"
print(json.dumps(found))
"""


def test_a_wake_method_found_by_name_is_the_one_every_method_lists() -> None:
    """Found one at a time in a fresh process (each host's module loaded only for its
    own names), each is the class the whole list holds."""
    every = every_method()
    assert list(every)[:2] == ["command", "tmux"] and list(every)[-1] == "unsupported"
    names = [*every, "nosuch", "claude-nosuch"]
    done = subprocess.run([sys.executable, "-c", FIND, *names], capture_output=True,
                          text=True, timeout=60, check=True)
    assert json.loads(done.stdout) == {
        **{name: f"{m.__module__}.{m.__qualname__}" for name, m in every.items()},
        "nosuch": None, "claude-nosuch": None}
