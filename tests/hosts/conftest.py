"""Fixtures of the real-host tests (``make test-hosts``); the harness is in harness.py.

``host`` runs a test once per host (its id names the host and the installed version);
``world(host, script=None)`` builds one test's :class:`harness.World` and tears it down.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .harness import World
from .install_hosts import install, pinned

LATEST = os.environ.get("MAILSLOT_HOSTS") == "latest"


def host_bin() -> Path:
    """The folder of host executables (``MAILSLOT_HOSTS_BIN``, else installed now).

    Found once, at collection: the tests' own fixtures change HOME afterwards.
    """
    given = os.environ.get("MAILSLOT_HOSTS_BIN")
    return Path(given) if given else install(LATEST)


HOST_BIN = host_bin()


def installed_versions() -> dict[str, str]:
    """Host name -> the version really installed (from its package.json).

    A host whose package is not in ``HOST_BIN``'s folder (a ``MAILSLOT_HOSTS_BIN`` of
    only some hosts) is left out; the tests of a missing host are skipped.
    """
    modules = HOST_BIN.parent
    found = {}
    for name, spec in pinned().items():
        package = modules / spec["package"] / "package.json"
        if package.exists():
            found[name] = json.loads(package.read_text(encoding="utf-8"))["version"]
    return found


VERSIONS = installed_versions()
FOUR = ("claude", "codex", "gemini", "copilot")


def pytest_report_header() -> list[str]:
    return [f"hosts: {', '.join(f'{h} {v}' for h, v in VERSIONS.items())} "
            f"({'latest' if LATEST else 'pinned'}) in {HOST_BIN}"]


@pytest.fixture(params=[
    pytest.param(h, id=f"{h}-{VERSIONS[h]}") if h in VERSIONS
    else pytest.param(h, id=f"{h}-absent", marks=pytest.mark.skip(reason=f"{h} not installed"))
    for h in FOUR])
def host(request: pytest.FixtureRequest) -> str:
    """Each of the four hosts the issue names, by name."""
    return str(request.param)


@pytest.fixture
def world(tmp_path: Path) -> Iterator[Callable[..., World]]:
    """``world(host, script=None)``: a fresh world for ``host`` (closed after the test)."""
    made: list[World] = []

    def make(name: str, script: dict[str, Any] | None = None) -> World:
        w = World(tmp_path / f"w{len(made)}", name, HOST_BIN, script)
        made.append(w)
        return w

    yield make
    for w in made:
        w.close()
