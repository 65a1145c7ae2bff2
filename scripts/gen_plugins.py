#!/usr/bin/env python3
"""Write the Claude Code and Codex plugins (``plugins/``, marketplace files) from
:mod:`mailslot.frontends.install.plugins`; tests/test_plugins.py fails when they drift."""

from __future__ import annotations

from pathlib import Path

from mailslot.frontends.install.plugins import plugin_files

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    for rel, text in plugin_files().items():
        path = ROOT / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(rel)


if __name__ == "__main__":
    main()
