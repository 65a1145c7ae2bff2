"""Every wake method by name: ``wake_method`` in config.json picks one of these.

The host-independent methods are here (a program of your own, typing into a tmux pane,
none); each host brings its own, the ``METHODS`` of its part ``wake``
(:meth:`~mailslot.host_registry.host.Host.wake_methods`), so a new host's methods need no
change here. ``watch --validate`` and the watcher find them.

Nothing is loaded before it is asked for: :func:`method_for` looks in the ``wake`` part of
the host a name starts with (``HOST-…``: that host's) before it loads every host's, and
``doctor`` over a config naming no wake method loads no host's.
"""

from __future__ import annotations

from .. import host_registry as hosts
from ..core.errors import StoreError
from .methods import CommandMethod, UnsupportedMethod, WakeMethod, where

_OF_HOST: dict[str, list[type[WakeMethod]]] = {}
_EVERY: dict[str, type[WakeMethod]] = {}


def _tmux() -> type[WakeMethod]:
    from .tmux import TmuxMethod  # subprocess, threading and secrets: only to use it

    return TmuxMethod


def _of_host(name: str) -> list[type[WakeMethod]]:
    """The methods host ``name`` brings, checked; asked of the host once per process."""
    found = _OF_HOST.get(name)
    if found is None:
        host = hosts.host(name)
        found = []
        for method in host.wake_methods():
            if not issubclass(method, WakeMethod):
                raise TypeError(f"{host!r} brings {method!r}, which is no wake method")
            found.append(method)
        _OF_HOST[name] = found
    return found


def every_method() -> dict[str, type[WakeMethod]]:
    """Every method by name: the host-independent ones first, then each host's in
    :data:`~mailslot.hosts.NAMES` order, ``unsupported`` last (every host is loaded)."""
    if not _EVERY:
        found: list[type[WakeMethod]] = [
            CommandMethod, _tmux(), *(m for name in hosts.NAMES for m in _of_host(name)),
            UnsupportedMethod]
        names = [method.name for method in found]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise TypeError(f"two wake methods share a name: {', '.join(twice)}")
        every = dict(zip(names, found, strict=True))
        _EVERY.update(every)
    return _EVERY


def find_method(name: str) -> type[WakeMethod] | None:
    """The method called ``name``, ``None`` if there is none."""
    if _EVERY:
        return _EVERY.get(name)
    if name in (CommandMethod.name, UnsupportedMethod.name):
        return CommandMethod if name == CommandMethod.name else UnsupportedMethod
    if name == "tmux":
        return _tmux()
    host = name.partition("-")[0]
    if host in hosts.NAMES:
        for method in _of_host(host):
            if method.name == name:
                return method
    return every_method().get(name)


def method_for(agent: str, name: str) -> type[WakeMethod]:
    """The method class called ``name``; raises :class:`StoreError` naming the field."""
    found = find_method(name)
    if found is None:
        known = ", ".join(sorted(every_method()))
        raise StoreError(f"{where(agent, 'wake_method')} {name!r} is not a wake method "
                         f"(one of: {known})")
    return found
