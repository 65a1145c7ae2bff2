"""The agent hosts mailslot serves: one module each, holding all mailslot knows about it.

To add a host, write ``hosts/NAME.py`` with one :class:`~.host.Host` subclass whose
instance is the module's ``HOST``: nothing else changes. Every front end and
feature reads host choices from here: ``install``, ``hook``, ``start``, the wake methods,
runtimes, the MCP schema and the web page. A module is imported only when its host is
asked for, so a hook loads its own host and no other.
"""

from __future__ import annotations

import os
import sys

from .host import Host

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

NAMES = tuple(sorted(
    entry[:-3] for entry in os.listdir(os.path.dirname(os.path.abspath(__file__)))
    if entry.endswith(".py") and entry[0] != "_" and entry != "host.py"))
"""Every host, by name: the modules of this package (one folder listing, no import)."""

BRIDGED = ("claude",)
"""The hosts whose :meth:`~.host.Host.bridge` is not ``None``: ``doctor`` asks each of
them whether a bridge of the mailbox runs without loading every host to find them
(tests/test_hosts.py holds this to what the modules say)."""

_LOADED: dict[str, Host] = {}


def host(name: str) -> Host:
    """The host called ``name``; ``KeyError`` for one mailslot does not know."""
    found = _LOADED.get(name)
    if found is None:
        if name not in NAMES:
            raise KeyError(name)
        module = f"{__name__}.{name}"
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
