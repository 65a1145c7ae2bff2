"""Package attributes loaded on first use (PEP 562).

``mailslot hook`` must start in a few milliseconds, so importing ``mailslot`` (or
``mailslot.store``) must not load the service, the YAML emitter or ``pathlib``.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping


def exports(package: str, where: Mapping[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` that imports ``name`` from ``package.<where[name]>``."""

    def attribute(name: str) -> object:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        from importlib import import_module

        value = getattr(import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return attribute
