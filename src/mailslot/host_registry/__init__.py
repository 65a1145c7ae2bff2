"""The registry of the agent hosts mailslot serves, and what a host is (:mod:`.host`).

Each host is one module or package under ``mailslot/hosts/`` (the adapters), holding all
mailslot knows about it. To add a host, write ``hosts/NAME.py`` (or ``hosts/NAME/`` when
it is big) with one :class:`~.host.Host` subclass whose instance is the module's
``HOST``: nothing else changes. Every front end and feature reads host choices from
here: ``install``, ``hook``, ``start``, the wake methods, runtimes, the MCP schema and
the web page. A host is imported only when it is asked for, so a hook loads its own host
and no other. The registry sits low in the layers (access and wake ask it); the adapters
sit high (each builds on the wake methods' bases), found here by name at run time.
"""

from __future__ import annotations

import os
import sys

from .host import ADAPTERS, Host

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

_FOLDER = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "hosts")
_ENTRIES = sorted(os.listdir(_FOLDER))

NAMES = tuple(
    entry[:-3] if entry.endswith(".py") else entry for entry in _ENTRIES
    if entry[0] not in "_." and (entry.endswith(".py") or os.path.isfile(
        os.path.join(_FOLDER, entry, "__init__.py"))))
"""Every host, by name: the modules and packages of ``mailslot/hosts`` (one folder
listing, no import)."""

BRIDGED = tuple(name for name in NAMES
                if os.path.isfile(os.path.join(_FOLDER, name, "bridge.py")))
"""The hosts whose :meth:`~.host.Host.bridge` is not ``None``: the packages with a
``bridge.py``. ``doctor`` asks each of them whether a bridge of the mailbox runs without
loading every host to find them (tests/test_hosts.py holds this to what they say)."""

_LOADED: dict[str, Host] = {}


def host(name: str) -> Host:
    """The host called ``name``; ``KeyError`` for one mailslot does not know."""
    found = _LOADED.get(name)
    if found is None:
        if name not in NAMES:
            raise KeyError(name)
        module = f"{ADAPTERS}.{name}"
        __import__(module)  # not importlib's import_module: it loads ``warnings`` too
        found = _LOADED[name] = sys.modules[module].HOST
    return found


def every(test: Callable[[Host], object] | None = None) -> list[Host]:
    """Every host (each one ``test`` accepts), in :data:`NAMES` order."""
    return [h for h in map(host, NAMES) if test is None or test(h)]


def names(test: Callable[[Host], object]) -> tuple[str, ...]:
    """The names of the hosts ``test`` accepts."""
    return tuple(h.name for h in every(test))


def listed(found: tuple[str, ...] | list[str]) -> str:
    """``a, b or c``: for help texts and errors."""
    return found[0] if len(found) == 1 else f"{', '.join(found[:-1])} or {found[-1]}"


__all__ = ["BRIDGED", "NAMES", "Host", "every", "host", "listed", "names"]
