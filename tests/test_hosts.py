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
    modules = [p.stem for p in folder.glob("*.py") if p.stem != "__init__"]
    packages = [p.parent.name for p in folder.glob("*/__init__.py")]
    assert "cursor" in modules and "claude" in packages  # both kinds are there
    assert list(hosts.NAMES) == sorted(modules + packages)
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
    assert hosts.BRIDGED  # one host brings a bridge, and it is found
    assert hosts.names(lambda h: h.bridge() is not None) == hosts.BRIDGED


def test_the_registry_finds_modules_and_packages_by_a_listing(tmp_path: Path) -> None:
    """A host is a module or a package (a folder with ``__init__.py``); private names,
    caches and plain folders are none; a package with the part ``bridge.py`` brings a
    bridge, and a module cannot."""
    for path in ("plain.py", "big/__init__.py", "big/wake.py", "bridged/__init__.py",
                 "bridged/bridge.py", "_private.py", "__pycache__/plain.cpython-312.pyc",
                 "notes/bridge.py", ".hidden/__init__.py", "__init__.py"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("")
    assert hosts.adapters(str(tmp_path)) == (("big", "bridged", "plain"), ("bridged",))


def test_no_host_writes_its_own_wake_loader() -> None:
    """Every host's wake methods are its ``wake`` part's ``METHODS``, found by the one
    loader of :class:`Host`; a host without that part (a module) brings none."""
    brought = {}
    for host in hosts.every():
        assert type(host).wake_methods is Host.wake_methods, f"{host!r} loads its own"
        part = host.part("wake")
        methods = () if part is None else part.METHODS
        assert tuple(host.wake_methods()) == methods
        assert all(m.__module__ == f"mailslot.hosts.{host.name}.wake" for m in methods)
        brought[host.name] = [m.name for m in methods]
    assert brought["claude"] == ["claude", "claude-rewake", "claude-channel", "claude-peer"]
    assert brought["kilo"] == ["kilo"] and brought["cursor"] == []


def test_a_host_has_only_the_parts_the_registry_names() -> None:
    with pytest.raises(ValueError, match="not a part"):
        hosts.host("claude").part("door")
    assert hosts.host("cursor").part("wake") is None  # a module has no parts


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

