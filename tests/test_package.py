"""The public API: a short sorted list, every name importable (loaded on first use)."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize("package", ["mailslot", "mailslot.store"])
def test_exports_are_sorted_and_resolve(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__ == sorted(module.__all__)
    for name in module.__all__:
        assert getattr(module, name) is not None
    with pytest.raises(AttributeError):
        module.no_such_name  # noqa: B018
