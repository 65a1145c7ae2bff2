"""Mail's cost in a model's context: the bytes mailslot adds to what a model is sent.

Two parts:

* **host-free** (``run()``, in ``make bench``): ``tools/list`` over raw MCP (``mailslot
  serve`` on stdio, the JSON-RPC answer line as a client reads it) and the text the
  session-start hook injects with 1, 20 and 200 unread, and a prompt hook's with nothing
  new;
* **real hosts** (``python bench/bench_context.py [HOST...]``, after ``make test-hosts`` installed
  them): each host run headless against the scripted provider of ``tests/hosts``, whose
  log holds every request exactly as the host sent it. Per host: the size of mailslot's
  tool definitions in its first model request, and how many bytes a model request grows
  by at session start with 1 / 20 / 200 unread and with nothing new, against a run of the
  same world before (no hooks: nothing new; no mail: the unread runs). Hosts not
  installed are skipped with a message.

The other mailboxes' tool lists are the figures measured once by hand (``tools/list`` JSON
over raw MCP), not measured here: their packages are not installed by this project.
Messages are a typical agent's: a one-line subject and a body of about 360 bytes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from common import ROOT, VENV_BIN, Row, did_work
from mailslot import FileStore, Mailbox
from mailslot.access.identity import Identity
from mailslot.core.config import DEFAULT_CONTEXT_BUDGET

TOOL_LIST_TARGET = 7168
UNREAD = (1, 20, 200)
OTHERS = (("mcp-agent-mail", "19.9 KB"), ("agent-mailbox", "11.3 KB"),
          ("letterbox", "6.9 KB"))
"""A measurement by hand of the same ``tools/list`` JSON, for the comparison column:
mcp-agent-mail in core mode (10 tools), agent-mailbox 0.7.6 (14), letterbox 1.2.2 (6)."""
BODY = ("I changed the users table: `name` is now `full_name`, and the old column is gone "
        "after the migration in db/0042. The API keeps answering with both keys until "
        "Friday. Please update the importer and its tests, then reply with the commit, or "
        "tell me if the importer still needs the old column for a reason I do not see; I "
        "can hold the drop until you are done.\n")
SESSION = "3f2c9a1e-7b4d-4e8a-9c21-5d6f0a8b7e34"
HOSTS = ("claude", "codex", "gemini", "copilot")


def fill(root: Path, agent: str, count: int) -> None:
    """``count`` unread messages for ``agent``, a second apart, from five peers."""
    start = datetime(2026, 5, 20, 10, 0, tzinfo=UTC)
    for n in range(count):
        when = start + timedelta(seconds=n)
        box = Mailbox(FileStore(root), Identity(f"peer-{n % 5}", "--agent"),
                      clock=lambda when=when: when)
        box.send(agent, f"users.full_name migration, part {n}", BODY)


def tool_list_bytes(root: Path) -> tuple[int, int]:
    """The ``tools/list`` answer over raw stdio: its line's bytes and the tool count."""
    env = {**os.environ, "MAILSLOT_DIR": str(root)}
    proc = subprocess.Popen([str(VENV_BIN / "mailslot"), "serve", "--agent", "claude"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert proc.stdin is not None and proc.stdout is not None

    def ask(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()

    try:
        ask({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}}})
        proc.stdout.readline()
        ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
        ask({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        line = proc.stdout.readline()
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    return len(line.rstrip(b"\n")), len(json.loads(line)["result"]["tools"])


def hook_bytes(root: Path, event: str, session: str, shows: Sequence[str] = ()) -> int:
    """The UTF-8 bytes of the text ``mailslot hook claude EVENT`` gives the model, which
    must show ``shows`` (a hook that failed says so on stderr and exits 0 showing
    nothing: that stops the benchmark)."""
    name = "SessionStart" if event == "session-start" else "UserPromptSubmit"
    done = subprocess.run(
        [str(VENV_BIN / "mailslot"), "--dir", str(root), "--agent", "gemini", "hook",
         "claude", event],
        input=json.dumps({"session_id": session, "hook_event_name": name,
                          "source": "startup", "prompt": "go on"}).encode(),
        capture_output=True)
    did_work(done, shows, quiet=True)
    if not done.stdout:
        return 0  # nothing to say: the hook prints nothing
    out = json.loads(done.stdout)
    text = out.get("hookSpecificOutput", {}).get("additionalContext", "")
    return len(text.encode())


def run() -> list[Row]:
    """The host-free rows."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        size, count = tool_list_bytes(Path(tmp) / "empty")
    rows.append(Row(f"tools/list over raw MCP ({count} tools)", f"{size:,} B",
                    "measured by hand: " + ", ".join(f"{n} {s}" for n, s in OTHERS),
                    f"<= {TOOL_LIST_TARGET:,} B",
                    size <= TOOL_LIST_TARGET))
    for unread in UNREAD:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            fill(root, "gemini", unread)
            start = hook_bytes(root, "session-start", SESSION,  # and the newest
                               [f"{unread} message", f"migration, part {unread - 1}"])
            again = hook_bytes(root, "user-prompt-submit", SESSION)
        rows.append(Row(f"session-start injection, {unread} unread", f"{start:,} B",
                        f"{unread * len(BODY.encode()):,} B of bodies",
                        f"<= {DEFAULT_CONTEXT_BUDGET:,} B", start <= DEFAULT_CONTEXT_BUDGET))
        rows.append(Row(f"next prompt, nothing new ({unread} unread)", f"{again} B", "",
                        "0 B", again == 0))
    return rows


# Real hosts ---------------------------------------------------------------------------
def host_bin() -> Path | None:
    """The installed hosts' executables (``MAILSLOT_HOSTS_BIN``, else the pinned install
    ``make test-hosts`` made), or ``None``: nothing is downloaded here."""
    given = os.environ.get("MAILSLOT_HOSTS_BIN")
    if given:
        return Path(given)
    sys.path.insert(0, str(ROOT))
    from tests.hosts.install_hosts import target

    folder = target(False)
    return folder / "node_modules" / ".bin" if (folder / ".complete").exists() else None


def _mailslot_tools(body: Any) -> tuple[int, int]:
    """The bytes and count of the tool definitions in a request body that are mailslot's
    (a namespace of them, as Codex sends, counts as its tools)."""
    found: list[Any] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            name = value.get("name")
            if isinstance(name, str) and "mailslot" in name and (
                    "description" in value or "parameters" in value or "tools" in value
                    or "input_schema" in value or "inputSchema" in value):
                found.append(value)
                return
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(body.get("tools") if isinstance(body, dict) else None)
    count = sum(len(t["tools"]) if isinstance(t.get("tools"), list) else 1 for t in found)
    return sum(map(_size, found)), count


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def measure_host(name: str, bin_dir: Path, folder: Path) -> dict[str, Any]:
    """One host's figures, from the first model request of each of its runs."""
    sys.path.insert(0, str(ROOT))
    from tests.hosts.harness import TEXT, World, offered_tools

    w = World(folder, name, bin_dir, {"call": None})

    def first_request() -> dict[str, Any]:
        before = len(w.provider.model_requests())
        done = w.run("Please do the task.")
        if done.returncode != 0 or TEXT not in done.stdout:
            raise RuntimeError(f"{name} run failed: {(done.stdout + done.stderr)[-500:]}")
        return w.provider.model_requests()[before]

    def install(*flags: str) -> None:
        """Install, then commit what it wrote as the project's one commit: hosts put the
        git status and the recent commits in the request, and an untracked settings file
        or one more commit line would count as mailslot's bytes."""
        w.install("alice", *flags)
        amend = ["--amend"] if flags else []
        for argv in (["add", "-A"], ["-c", "user.name=bench", "-c", "user.email=b@x",
                                     "commit", "-q", *amend, "-m", "install",
                                     "--allow-empty"]):
            subprocess.run(["git", "-C", str(w.project), *argv], check=True,
                           capture_output=True)

    try:
        install()
        bare = first_request()
        size, count = _mailslot_tools(bare["body"])
        deferred = [t for t in offered_tools(bare) if "mailslot" in t] if not count else []
        figures: dict[str, Any] = {
            "tools": size, "tool_count": count,
            "deferred": sum(len(t) + 1 for t in deferred) if deferred else None,
            "deferred_count": len(deferred), "request": _size(bare["body"])}
        install("--hooks")
        quiet = first_request()
        figures["nothing_new"] = _size(quiet["body"]) - _size(bare["body"])
        for unread in UNREAD:
            w.mailslot("--agent", "alice", "done", "--all", check=False)
            fill(w.mailbox, "alice", unread)
            figures[unread] = _size(first_request()["body"]) - _size(quiet["body"])
        return figures
    finally:
        w.close()


def host_table(names: Sequence[str]) -> int:
    """The per-host table (markdown) for ``names``, as far as they are installed."""
    bin_dir = host_bin()
    if bin_dir is None or not bin_dir.is_dir():
        print("real hosts not installed (run `make test-hosts` once, or set "
              "MAILSLOT_HOSTS_BIN): skipping the per-host table", file=sys.stderr)
        return 0
    print("| host | mailslot's tools in a request | session start, 1 / 20 / 200 unread "
          "| a prompt with nothing new |")
    print("| --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            if not (bin_dir / name).exists():
                print(f"{name} not installed: skipped", file=sys.stderr)
                continue
            print(f"measuring {name} ...", file=sys.stderr, flush=True)
            f = measure_host(name, bin_dir, Path(tmp) / name)
            tools = (f"deferred: {f['deferred']:,} B of {f['deferred_count']} names"
                     if f["deferred"] is not None
                     else f"{f['tools']:,} B ({f['tool_count']} tools)")
            starts = " / ".join(f"{f[n]:,} B" for n in UNREAD)
            print(f"| {name} | {tools} | {starts} | {f['nothing_new']:,} B |", flush=True)
    return 0


if __name__ == "__main__":
    from common import print_table

    print_table(run())
    print()
    sys.exit(host_table(sys.argv[1:] or HOSTS))
