"""A database an older mailslot wrote opens, and reads the same, with this one: the
schema did not change with the store's reshape (no migration of data), and what each
namespace reads from its table is what the older code read. Runs the mailslot of
:data:`test_layout_unchanged.BEFORE` (from git history) beside this one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pgcluster import Cluster
from test_layout_unchanged import REPO, _old_sources

DRIVER = Path(__file__).resolve().parent / "pg_driver.py"


def _run(src: Path, *argv: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAILSLOT_")}
    env.update(PYTHONPATH=str(src), MAILSLOT_ON_DEMAND_WATCHER="0", MAILSLOT_RELAY="0")
    return subprocess.run([sys.executable, str(DRIVER), *argv], env=env, check=True,
                          capture_output=True, text=True, timeout=300).stdout


def test_a_database_the_old_mailslot_wrote_reads_the_same_now(
        pg_cluster: Cluster, tmp_path: Path) -> None:
    old = _old_sources(tmp_path / "old-src")
    url = pg_cluster.new_database(init=False)
    _run(old, "write", url)
    before = json.loads(_run(old, "read", url))
    _run(REPO / "src", "init", url)  # a newer schema adds tables; no row is rewritten
    now = json.loads(_run(REPO / "src", "read", url))
    assert before["mail"] and before["pending"][2] and before["gates"][0]  # filled
    assert now == before
