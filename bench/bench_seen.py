"""What the ``seen`` rung and the loop governor's causes and budgets cost.

- **The seen check** with a 50 MB transcript (Claude Code's record, built from the real
  trimmed one in tests/fixtures/records/), in-process, as a hook runs it
  (:meth:`mailslot.service.delivery.SessionMarks.check`: the session's showings read, the record
  read from where it ended before the showing, the ``seen`` receipt written): the
  showing 111 KB before the record's end (the farthest answer the research saw after
  its showing), against reading those bytes alone (``os.pread``) in the same run.
  Target: the median at most 2 ms. Also the worst case: a showing whose text never
  reached the record, 50 MB ago (one window read, then given up).
- **Instructions** (``valgrind --tool=callgrind``: the count repeats whatever else the
  machine does) of three whole processes against the baseline revision
  (``MAILSLOT_BENCH_BASE``, default :data:`BASE`: main before them), in the same run:
  the session-start hook with 1,000 pending and the 50 MB transcript named (a showing
  gets its fingerprint: the record's size is read); the prompt hook of a session whose
  showing awaits the record (the check runs and finds it seen; the baseline has nothing
  to do); and a ``send`` right after reading the mail it answers (its cause looked up,
  the chain walked, the byte buckets taken). Target: what the three add together is at
  most 5 % of the baseline's session-start hook.
"""

from __future__ import annotations

import compileall
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import ROOT, NotDone, Row, did_work, ms, unlimited
from mailslot import FileStore, Mailbox
from mailslot import host_registry as hosts
from mailslot.access.identity import Identity
from mailslot.service.delivery import SessionMarks

SIZE = 50 << 20
DISTANCE = 111 << 10
ROUNDS = 200
TARGET_MS = 2.0
TARGET_SHARE = 0.05
PENDING = 1000
FIXTURE = ROOT / "tests" / "fixtures" / "records" / "claude-2.1.332-p.jsonl"
TOKEN = re.compile(rb"mslt-[a-z0-9]+-[0-9a-f]{8}")


def _line(entry: dict[str, object]) -> bytes:
    return json.dumps(entry, separators=(",", ":")).encode() + b"\n"


def _filler(size: int) -> bytes:
    """``size`` bytes of a real transcript's lines, their fingerprints blanked."""
    lines = TOKEN.sub(b"mslt-none-00000000", FIXTURE.read_bytes())
    return (lines * (size // len(lines) + 1))[:size].rsplit(b"\n", 1)[0] + b"\n"


def _showing(mark: str) -> bytes:
    """What Claude Code writes for a hook's context, then (after ``DISTANCE``) the
    model's answer."""
    shown = _line({"type": "attachment", "attachment": {
        "type": "hook_additional_context", "content": [f"[mailslot] delivery {mark}"]}})
    answer = _line({"type": "assistant", "requestRef": "r", "timestamp": "T",
                    "message": {"model": "m", "content": []}})
    return shown + _filler(DISTANCE - len(shown) - len(answer)) + answer


def _check_rows(here: Path) -> list[Row]:
    record = here / "transcript.jsonl"
    filler = _filler(SIZE - DISTANCE)
    with record.open("wb") as out:
        out.write(filler)
        offset = out.tell()
        out.write(_showing("mslt-" + "a" * 12))
    store = FileStore(here / "box")
    store.init()
    claude = hosts.host("claude")
    took, read = [], []
    for n in range(ROUNDS):  # each round a session with one showing waiting
        marks = SessionMarks(store, "bob", f"s{n}")
        marks.keep("mslt-" + "a" * 12, offset, "start", ["m"], [])
        began = time.perf_counter()
        marks.check(claude, str(record))
        took.append(time.perf_counter() - began)
        began = time.perf_counter()
        fd = os.open(record, os.O_RDONLY)
        os.pread(fd, DISTANCE, offset)
        os.close(fd)
        read.append(time.perf_counter() - began)
    seen = sum(1 for e in store.events() if e.get("event") == "seen")
    if seen != ROUNDS:
        raise NotDone(f"the check wrote {seen} seen receipts, not {ROUNDS}")
    worst = []
    for n in range(20):
        marks = SessionMarks(store, "bob", f"w{n}")
        marks.keep("mslt-" + "b" * 12, 0, "start", ["m"], [])
        began = time.perf_counter()
        marks.check(claude, str(record))
        worst.append(time.perf_counter() - began)
    p50 = statistics.median(took)
    return [
        Row("seen check per hook, 50 MB transcript (p50 / p99)",
            f"{ms(p50)} / {ms(sorted(took)[int(len(took) * 0.99) - 1])}",
            f"pread of the same {DISTANCE >> 10} KB: {ms(statistics.median(read))}",
            f"<= {TARGET_MS:g} ms", p50 * 1000 <= TARGET_MS),
        Row("seen check, a showing 50 MB back never given (p50)",
            ms(statistics.median(worst)), "one 1 MiB window, then given up", "", None),
    ]


# Instructions -----------------------------------------------------------------------------
BASE = "b822d90"
"""Main just before the ``seen`` rung, causes and budgets landed (a branch's merge-base
with main would be this very code once they are on main, and measure nothing)."""


def _base() -> str:
    return os.environ.get("MAILSLOT_BENCH_BASE", BASE)


def _tree(revision: str, into: Path) -> Path:
    archive = subprocess.run(["git", "archive", revision, "src"], cwd=ROOT,
                             capture_output=True, check=False)
    if archive.returncode != 0:
        raise NotDone(f"no revision {revision}: {archive.stderr.decode()[-200:]}")
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    compileall.compile_dir(str(into / "src" / "mailslot"), quiet=1)
    return into / "src"


def _count(argv: list[str], src: Path, env: dict[str, str], stdin: bytes | None,
           shows: Callable[[str], bool]) -> int:
    with tempfile.NamedTemporaryFile(suffix=".callgrind") as out:
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out.name}",
             sys.executable, *argv], input=stdin, capture_output=True,
            env={**env, "PYTHONPATH": str(src)}, timeout=900, check=False)
    said = done.stderr.decode("utf-8", "replace")
    collected = re.search(r"Collected : (\d+)", said)
    quiet = "\n".join(line for line in said.splitlines() if not line.startswith("=="))
    did_work(subprocess.CompletedProcess(done.args, done.returncode, done.stdout,
                                         quiet.encode()), shows, quiet=stdin is not None)
    if collected is None:
        raise NotDone(f"callgrind counted nothing: {said[-300:]}")
    return int(collected.group(1))


def _payload(record: Path, event: str, session: str) -> bytes:
    names = {"session-start": ("SessionStart", {"source": "startup"}),
             "user-prompt-submit": ("UserPromptSubmit", {"prompt": "go"})}
    name, extra = names[event]
    return json.dumps({"session_id": session, "hook_event_name": name,
                       "transcript_path": str(record), "cwd": str(record.parent),
                       **extra}).encode()


def _day(here: Path, record: Path) -> tuple[Path, str]:
    """1,000 messages pending for claude, one from gemini that claude has read, and
    claude's session ``s-wait`` whose start showing awaits the record (written now)."""
    box = here / "mailbox"
    unlimited(box)
    for n in range(PENDING):
        Mailbox(FileStore(box), Identity("gemini", "--agent")).send(
            "claude", f"Pending {n}", "A line of body text.\n", new=n == 0)
    env = {**os.environ, "MAILSLOT_DIR": str(box), "MAILSLOT_AGENT": "claude",
           "MAILSLOT_ON_DEMAND_WATCHER": "0"}
    out = subprocess.run([sys.executable, "-m", "mailslot", "hook", "claude", "session-start"],
                         input=_payload(record, "session-start", "s-wait"),
                         capture_output=True, env=env, check=True).stdout
    mark = re.search(rb"mslt-[0-9a-f]{12}", out)
    if mark is None:
        raise NotDone("the session-start hook gave its showing no fingerprint")
    with record.open("ab") as writing:
        writing.write(_showing(mark.group().decode()))
    last = sorted(FileStore(box).entries("claude", ("unread",)))[-1][0]
    Mailbox(FileStore(box), Identity("claude", "--agent")).read(last)
    return box, last


def _instruction_rows(here: Path) -> list[Row]:
    if shutil.which("valgrind") is None:
        raise NotDone("valgrind is not installed (apt-get install valgrind)")
    base = _base()
    (here / "base").mkdir()
    trees = {"base": _tree(base, here / "base"), "now": ROOT / "src"}
    compileall.compile_dir(str(ROOT / "src" / "mailslot"), quiet=1)
    record = here / "transcript.jsonl"
    with record.open("wb") as out:
        out.write(_filler(SIZE))
    day, last = _day(here, record)
    runs = {  # the send first: its cause is mail read within the last 15 minutes
        "send": (["-m", "mailslot", "send", "--to", "gemini", "--subject", "Re",
                  "--body", "done"], None, lambda o: "sent " in o),
        "start": (["-m", "mailslot", "hook", "claude", "session-start"],
                  _payload(record, "session-start", "s-new"), lambda o: "Pending 999" in o),
        "prompt": (["-m", "mailslot", "hook", "claude", "user-prompt-submit"],
                   _payload(record, "user-prompt-submit", "s-wait"), lambda o: o == "{}"),
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAILSLOT_")}
    env.update(MAILSLOT_ON_DEMAND_WATCHER="0", MAILSLOT_AGENT="claude",
               PYTHONHASHSEED="0")  # the same sets in the same order in every run
    counts: dict[str, dict[str, int]] = {}
    for name, (argv, stdin, shows) in runs.items():
        for version, src in [*trees.items(), *trees.items()]:  # interleaved, twice
            box = here / "copy" / "mailbox"
            shutil.rmtree(box.parent, ignore_errors=True)
            shutil.copytree(day, box, symlinks=True)
            found = _count(argv, src, {**env, "MAILSLOT_DIR": str(box)}, stdin, shows)
            mine = counts.setdefault(name, {})
            mine[version] = min(found, mine.get(version, found))
    start = counts["start"]["base"]
    added = sum(c["now"] - c["base"] for c in counts.values())
    what = {"start": "hook session-start, 1,000 pending, 50 MB transcript",
            "prompt": "hook prompt, the check finds the showing seen",
            "send": f"send after reading the mail it answers ({last[-8:]})"}
    rows = [Row(f"{what[name]} (instructions)",
                f"{c['now']:,} ({c['now'] - c['base']:+,})", f"{base[:8]}: {c['base']:,}",
                "", None) for name, c in counts.items()]
    rows.append(Row("ladder and governor together, share of the session-start hook",
                    f"{added:+,} instructions ({added / start:.2%})",
                    f"{base[:8]} session start: {start:,}",
                    f"<= {TARGET_SHARE:.0%}", added / start <= TARGET_SHARE))
    return rows


def run() -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp:
        here = Path(tmp)
        (here / "check").mkdir()
        rows = _check_rows(here / "check")
        (here / "instructions").mkdir()
        return rows + _instruction_rows(here / "instructions")


if __name__ == "__main__":
    from common import print_table

    print_table(run())
