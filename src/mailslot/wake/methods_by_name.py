"""Every wake method by name: ``wake_method`` in config.json picks one of these.

The host-independent methods are here (a program of your own, typing into a tmux pane,
none); each host brings its own (:meth:`~mailslot.hosts.host.Host.wake_methods`), so a
new host's methods need no change here. ``watch --validate`` and the watcher find them.
"""

from __future__ import annotations

from .. import hosts
from ..core.errors import StoreError
from .methods import CommandMethod, UnsupportedMethod, WakeMethod, where
from .tmux import TmuxMethod


def _every() -> list[type[WakeMethod]]:
    found: list[type[WakeMethod]] = [CommandMethod, TmuxMethod]
    for host in hosts.every():
        for method in host.wake_methods():
            if not issubclass(method, WakeMethod):
                raise TypeError(f"{host!r} brings {method!r}, which is no wake method")
            found.append(method)
    return [*found, UnsupportedMethod]


METHODS: dict[str, type[WakeMethod]] = {method.name: method for method in _every()}


def method_for(agent: str, name: str) -> type[WakeMethod]:
    """The method class called ``name``; raises :class:`StoreError` naming the field."""
    try:
        return METHODS[name]
    except KeyError:
        known = ", ".join(sorted(METHODS))
        raise StoreError(f"{where(agent, 'wake_method')} {name!r} is not a wake method "
                         f"(one of: {known})") from None
