"""What the everyday commands cost in instructions, against a baseline revision of the
code, measured in the same run: ``mailslot send``, ``inbox``, ``who`` and the claude
session-start hook on a working day's mailbox (200 messages; the hook with 1,000
pending), and ``inbox``, ``who`` and the hook on the 100,000-message mailbox of
``bench_scale`` (90 % done). Target: each within 5 % of the baseline's count.

Instructions, not seconds: ``valgrind --tool=callgrind`` counts what the process
executed, so the figure repeats whatever else the machine is doing (seconds on these
shared machines vary by a third). The baseline is a revision of this repository
(``MAILSLOT_BENCH_BASE``, default :data:`BASE`: the code before the store and the
folders were reshaped), checked out of git into a temporary folder and run by the same
interpreter with its ``src`` first on ``PYTHONPATH``; both trees are byte-compiled first.
Both versions read the same mailboxes (the format is the same); a command that writes
(``send``, the hook) runs on a fresh copy for each version. Each run is checked to have
done its work, as every benchmark here is.
"""

from __future__ import annotations

import compileall
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from common import ROOT, Expect, NotDone, Row, did_work, listed, unlimited
from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity

BASE = "86fe305"
"""The code as it was before the store became primitives and the folders layers."""
TARGET = 1.05
PENDING = 1_000
SCALE = "100000"


def _tree(revision: str, into: Path) -> Path:
    """The ``src`` of ``revision``, out of this repository's git history."""
    archive = subprocess.run(["git", "archive", revision, "src"], cwd=ROOT,
                             capture_output=True, check=False)
    if archive.returncode != 0:
        raise NotDone(f"no revision {revision} in this clone's history: "
                      f"{archive.stderr.decode()[-200:]}")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    compileall.compile_dir(str(into / "src" / "mailslot"), quiet=1)
    return into / "src"


def _count(argv: list[str], src: Path, env: dict[str, str], cwd: Path, stdin: bytes | None,
           shows: Expect, quiet: bool) -> int:
    """Instructions ``argv`` executed as ``src``'s mailslot, checked to have done its work."""
    with tempfile.NamedTemporaryFile(suffix=".callgrind") as out:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out.name}",
             sys.executable, *argv], input=stdin, capture_output=True, cwd=cwd,
            env={**env, "PYTHONPATH": str(src)}, timeout=900, check=False)
        said = done.stderr.decode("utf-8", "replace")
        collected = re.search(r"Collected : (\d+)", said)
        program = subprocess.CompletedProcess(done.args, done.returncode, done.stdout,
                                              "\n".join(line for line in said.splitlines()
                                                        if not line.startswith("==")
                                                        ).encode())
        did_work(program, shows, quiet=quiet)
        if collected is None:
            raise NotDone(f"callgrind counted nothing: {said[-300:]}")
        return int(collected.group(1))


def _working_day(root: Path) -> Path:
    """200 messages for gemini from five peers, and 1,000 pending for claude."""
    box = root / "mailbox"
    unlimited(box)
    for n in range(200):
        Mailbox(FileStore(box), Identity(f"peer-{n % 5}", "--agent")).send(
            "gemini", f"Status report {n}", "Line one.\nLine two.\n")
    for n in range(PENDING):
        Mailbox(FileStore(box), Identity("gemini", "--agent")).send(
            "claude", f"Pending {n}", "A line of body text.\n")
    return box


def _commands(box: Path, scale: Path | None) -> dict[str, tuple[list[str], bytes | None,
                                                                Expect, bool]]:
    """Each row: argv (after the interpreter), stdin, what doing the work shows, and
    whether it writes (then it runs on a copy of the mailbox)."""
    day = ["-m", "mailslot", "--dir", str(box)]
    hook = json_session(box)
    rows: dict[str, tuple[list[str], bytes | None, Expect, bool]] = {
        "python -c pass": (["-c", "pass"], None, (), False),
        "send": ([*day, "--agent", "claude", "send", "--to", "gemini", "--subject", "b",
                  "--body", "x"], None, ["sent "], True),
        "inbox": ([*day, "--agent", "gemini", "inbox"], None,
                  lambda out: listed(out) == 20, False),
        "who": ([*day, "who"], None, ["gemini ", "peer-4 "], False),
        f"hook session-start, {PENDING:,} pending": (
            ["-m", "mailslot", "hook", "claude", "session-start"], hook, ["Pending 999"],
            True),
    }
    if scale is not None:
        big = ["-m", "mailslot", "--dir", str(scale), "--agent", "agent-0"]
        rows.update({
            "inbox at 100,000": ([*big, "inbox"], None, lambda out: listed(out) == 20, False),
            "who at 100,000": ([*big, "who"], None, ["agent-9 "], False),
        })
    return rows


def json_session(box: Path) -> bytes:
    import json

    return json.dumps({"session_id": "bench-instructions", "cwd": str(box.parent),
                       "hook_event_name": "SessionStart", "source": "startup"}).encode()


def _scale_mailbox() -> Path | None:
    """bench_scale's 100,000-message mailbox (built once, cached outside the clone), or
    ``None`` when ``MAILSLOT_BENCH_SCALE`` leaves that size out."""
    import bench_scale

    if SCALE not in bench_scale._sizes():
        return None
    return bench_scale._mailbox(SCALE)


def run() -> list[Row]:
    if shutil.which("valgrind") is None:
        raise NotDone("valgrind is not installed (apt-get install valgrind)")
    base = os.environ.get("MAILSLOT_BENCH_BASE", BASE)
    compileall.compile_dir(str(ROOT / "src" / "mailslot"), quiet=1)
    scale = _scale_mailbox()
    with tempfile.TemporaryDirectory() as tmp:
        here = Path(tmp)
        (here / "base").mkdir()
        trees = {"base": _tree(base, here / "base"), "now": ROOT / "src"}
        day = _working_day(here / "day")
        env = {k: v for k, v in os.environ.items() if not k.startswith("MAILSLOT_")}
        env["MAILSLOT_ON_DEMAND_WATCHER"] = "0"
        env["MAILSLOT_AGENT"] = "claude"  # the hook's identity; the CLI rows name theirs
        counts: dict[str, dict[str, int]] = {}
        for name, (argv, stdin, shows, writes) in _commands(day, scale).items():
            if not writes:  # a reader keeps listings the next one reads: warm them first
                subprocess.run([sys.executable, *argv], input=stdin, capture_output=True,
                               cwd=day.parent, env={**env, "MAILSLOT_DIR": str(day)},
                               check=False)
            for version, src in [*trees.items(), *trees.items()]:  # interleaved, twice
                box = day
                if writes:  # a fresh copy each time: both versions start from the same
                    box = here / "copy" / "mailbox"
                    shutil.rmtree(box.parent, ignore_errors=True)
                    shutil.copytree(day, box, symlinks=True)
                given = [str(box) if a == str(day) else a for a in argv]
                run_env = {**env, "MAILSLOT_DIR": str(box)}
                found = _count(given, src, run_env, box.parent, stdin, shows,
                               quiet=stdin is not None)
                mine = counts.setdefault(name, {})
                mine[version] = min(found, mine.get(version, found))
    rows = []
    for name, found in counts.items():
        ratio = found["now"] / found["base"]
        informational = name == "python -c pass"
        rows.append(Row(f"{name} (instructions)", f"{found['now']:,} ({ratio:.3f}x)",
                        f"{base}: {found['base']:,}", "" if informational
                        else f"<= {TARGET}x", None if informational else ratio <= TARGET))
    return rows
