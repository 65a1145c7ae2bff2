"""Idle long-running processes stay idle: the waiter once spun a core because
its own reads of the folders it watched woke it. The figures are in ``make bench``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from idle import KINDS, idle_cpu, idle_processes

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads CPU time from /proc")


def test_waiter_watch_and_channel_server_use_almost_no_cpu_while_idle(
        root: Path, tmp_path: Path) -> None:
    with idle_processes(root, tmp_path / "watch.log") as procs:
        used = idle_cpu(procs, 5.0)
    assert set(used) == set(KINDS)
    # A spinning process uses about 5 s here; an idle one a few hundredths.
    assert all(seconds < 0.5 for seconds in used.values()), used
