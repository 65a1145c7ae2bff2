#!/usr/bin/env python3
"""Install the real host CLIs the host tests drive, once per set of versions.

The pinned versions live in ``versions.json`` beside this file. They are installed with
``npm install --prefix`` into ``$MAILSLOT_HOSTS_DIR`` (default
``~/.cache/mailslot/hosts``) under a folder named by a hash of the package list, outside
any clone, so a fresh CI checkout on the same machine reuses the ~950 MB already there.
``--latest`` installs each package's newest version instead (``make test-hosts
HOSTS=latest``) into its own folder, refreshed once a day.

Prints the ``node_modules/.bin`` folder holding ``claude``, ``codex``, ``gemini`` and
``copilot``; the test session reads it from ``MAILSLOT_HOSTS_BIN``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

VERSIONS = Path(__file__).with_name("versions.json")


def pinned() -> dict[str, dict[str, Any]]:
    """Host name -> {"package", "version", "bin"[, "also"]} from versions.json.

    ``also``: more package specs installed beside the host's. Droid's npm wrapper finds
    its program in a per-platform package, and the registry has that package only at a
    newer patch version than the wrapper's newest.
    """
    data: dict[str, dict[str, Any]] = json.loads(VERSIONS.read_text(encoding="utf-8"))
    return data


def specs(latest: bool) -> list[str]:
    """npm package specs: ``pkg@1.2.3`` pinned, or ``pkg@latest``."""
    found = []
    for h in pinned().values():
        found.append(f"{h['package']}@{'latest' if latest else h['version']}")
        for spec in h.get("also", []):
            found.append(f"{spec.rpartition('@')[0]}@latest" if latest else spec)
    return found


def target(latest: bool) -> Path:
    """The install folder for this set of specs (latest: one per day)."""
    base = Path(os.environ.get("MAILSLOT_HOSTS_DIR")
                or Path.home() / ".cache" / "mailslot" / "hosts")
    key = "\n".join(specs(latest))
    if latest:
        key += "\n" + time.strftime("%Y-%m-%d")
    return base / hashlib.sha256(key.encode()).hexdigest()[:16]


def install(latest: bool) -> Path:
    """Install (when not done yet) and return the folder of host executables."""
    folder = target(latest)
    done = folder / ".complete"
    if not done.exists():
        folder.mkdir(parents=True, exist_ok=True)
        cmd = ["npm", "install", "--prefix", str(folder), "--no-audit", "--no-fund",
               "--loglevel=error"]
        print("installing host CLIs:", " ".join(specs(latest)), file=sys.stderr, flush=True)
        if latest:
            # A host's newest release is sometimes published before its per-platform
            # package: that one host stays out (its tests are skipped, and say so),
            # the others are still tested at their newest.
            for name, spec in pinned().items():
                wanted = [f"{spec['package']}@latest",
                          *(f"{s.rpartition('@')[0]}@latest" for s in spec.get("also", []))]
                if subprocess.run([*cmd, *wanted], stdout=sys.stderr).returncode != 0:
                    print(f"{name}: its newest release does not install; skipped",
                          file=sys.stderr, flush=True)
        else:
            subprocess.run([*cmd, *specs(latest)], check=True, stdout=sys.stderr)
        done.write_text("\n".join(specs(latest)) + "\n", encoding="utf-8")
    return folder / "node_modules" / ".bin"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latest", action="store_true", help="newest versions, not the pins")
    args = ap.parse_args()
    print(install(args.latest))


if __name__ == "__main__":
    main()
