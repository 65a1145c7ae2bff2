"""The real-host test harness: a scratch world per test, each host set up to run in it.

A :class:`World` is one test's scratch HOME, scratch git project and mailbox, with the
project's scripted provider (``provider.py``) on loopback and one host configured to use
it: endpoint and key, trust, and tool approval without any bypass flag. Tests drive the
real host through :meth:`World.run` (headless, bounded) or a tmux pane, then prove what
happened from the mailbox (:meth:`World.inbox`) and the requests the host sent
(:meth:`Provider.requests`).

The API other test modules use (keep it small and stable; see README.md):
``HOSTS``, ``World`` (``install``, ``send``, ``inbox``, ``run``, ``mailslot``, ``env``,
``home``, ``project``, ``mailbox``, ``provider``), ``Provider`` (``requests``,
``model_requests``, ``wait_for_requests``), ``request_text``, ``wait_for``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MAILSLOT = str(Path(sys.executable).parent / "mailslot")
"""The ``mailslot`` under test (the venv's). Deliberately not on the hosts' PATH: what
mailslot registers and shows must work without it."""
API_KEY = "sk-ant-mailslot-host-tests-0123456789abcdef"
TOOLS = ("send_message", "read_messages", "mark_done", "reply", "retract_broadcast",
         "message_status", "list_agents", "gate", "start_session", "search_messages")
"""mailslot's MCP tools, all of them: each host's approval settings allow exactly these
(a host may leave out of its requests a tool its policy does not allow)."""
TEXT = "FAKE-MODEL-DONE"


def wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll ``predicate`` until it returns something true; fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.05)


# ---- the provider ----------------------------------------------------------------------

class Provider:
    """``provider.py`` as a process on 127.0.0.1, with its request log."""

    def __init__(self, folder: Path, script: dict[str, Any]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.log = folder / "requests.jsonl"
        self.log.touch()
        portfile = folder / "port"
        self.script_path = folder / "script.json"
        self.script(script)
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "provider.py"), "--log", str(self.log),
             "--portfile", str(portfile), "--script", str(folder / "script.json")],
            stdin=subprocess.DEVNULL)
        self.port = int(wait_for(lambda: portfile.exists() and portfile.read_text(), 10,
                                 "the provider to listen"))
        self.url = f"http://127.0.0.1:{self.port}"

    def script(self, spec: dict[str, Any]) -> None:
        """Replace the script (see provider.py); the next request follows the new one."""
        tmp = self.script_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(spec), encoding="utf-8")
        tmp.replace(self.script_path)

    def requests(self) -> list[dict[str, Any]]:
        """Every request so far, oldest first: ``{"n","t","method","path","body","reply"}``."""
        lines = self.log.read_text(encoding="utf-8").split("\n")[:-1]  # a line being
        return [json.loads(line) for line in lines if line.strip()]  # written is not one

    def model_requests(self) -> list[dict[str, Any]]:
        """Only the requests that asked the model for an answer (a tool call or text)."""
        return [r for r in self.requests()
                if r["reply"] == "text" or r["reply"].startswith("tool:")]

    def wait_for_requests(self, count: int, timeout: float) -> list[dict[str, Any]]:
        """Block until at least ``count`` model requests were made; returns them all."""
        return list(wait_for(lambda: len(self.model_requests()) >= count
                             and self.model_requests(), timeout,
                             f"{count} model request(s)"))

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def woken_for(mailbox: Path, message_id: str) -> bool:
    """The events log says a wake for ``message_id`` was done, by whichever watcher."""
    log = mailbox / "log" / "events.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
    return any('"wake_ok"' in line and json.loads(line).get("id") == message_id
               for line in lines)


def request_text(request: dict[str, Any]) -> str:
    """Every string in a request body, one after the other (what the model was shown).

    A string that is itself JSON (Claude Code, Codex and Copilot pass an MCP tool's
    structured result on as JSON text) is decoded, so its strings are lines too.
    """
    return "\n".join(line for text in _strings(request.get("body")) for line in _lines(text))


def _lines(text: str) -> Iterator[str]:
    """The lines of ``text``, a line that is JSON replaced by the lines of its strings."""
    for line in text.splitlines():
        decoded = _json(line.strip())
        if decoded is None:
            yield line
        else:
            for inner in _strings(decoded):
                yield from _lines(inner)


def _json(text: str) -> dict[str, Any] | list[Any] | None:
    """``text`` decoded, when it is a JSON object or array; else ``None``."""
    if not text.startswith(("{", "[")):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict | list) else None


def offered_tools(request: dict[str, Any]) -> list[str]:
    """The tool names a model request offered, as the host spelled them: its tools, and
    where it defers some behind ``ToolSearch`` (Claude Code 2.1.332, Droid), the names it
    lists for the model to load."""
    from .provider import (
        anthropic_state,
        chat_state,
        deferred_names,
        gemini_state,
        responses_state,
    )

    path, body = request["path"], request["body"]
    for marker, state in (("/messages", anthropic_state), ("/responses", responses_state),
                          ("/chat/completions", chat_state), (":", gemini_state)):
        if marker in path:
            tools = state(body)[0]
            return tools + deferred_names(body) if "ToolSearch" in tools else tools
    return []


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


# ---- the hosts -------------------------------------------------------------------------

@dataclass(frozen=True)
class Host:
    """How to point one host at the provider and run it headless."""

    name: str
    prepare: Callable[[World], None]
    headless: Callable[[World, str], list[str]]
    env: Callable[[World], dict[str, str]] = field(default=lambda w: {})
    after_install: Callable[[World], None] = field(default=lambda w: None)
    """Run after ``mailslot install``: what a user does next (Codex: trust the hooks)."""


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def merge_json(path: Path, data: dict[str, Any]) -> None:
    """Add ``data``'s keys to the JSON object in ``path`` (created if absent)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    doc.update(data)
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")


@contextlib.contextmanager
def running_bridge(w: World, host: str, records: Callable[[World], list[dict[str, Any]]],
                   agent: str) -> Iterator[None]:
    """``mailslot bridge HOST`` running (its output in ``bridge.log``) once the host's
    registry (``records``) holds its record listing ``agent``; stopped after."""
    log = (w.root / "bridge.log").open("w")
    bridge = subprocess.Popen([MAILSLOT, "--dir", str(w.mailbox), "bridge", host],
                              cwd=w.project, env=w.env, stdout=log, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL)
    try:
        wait_for(lambda: [r for r in records(w)
                          if (r.get("mailslotBridge") or {}).get("agent") == agent], 60,
                 f"the bridge to list {agent}")
        yield
    finally:
        bridge.terminate()
        bridge.wait(timeout=30)
        log.close()


def _claude_prepare(w: World) -> None:
    _write_json(w.home / ".claude" / "settings.json", {
        "enabledMcpjsonServers": ["mailslot"],
        "permissions": {"allow": [f"mcp__mailslot__{t}" for t in TOOLS]},
    })
    _write_json(w.home / ".claude.json", {
        "hasCompletedOnboarding": True,
        "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
        "projects": {str(w.project): {"hasTrustDialogAccepted": True,
                                      "hasCompletedProjectOnboarding": True}},
    })


def _codex_prepare(w: World) -> None:
    folder = w.home / ".codex"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text(
        'model = "gpt-5"\nmodel_provider = "fake"\n'
        # Codex starts the first turn without MCP servers not up within a grace period;
        # `mailslot serve` takes a second or two to start (docs/hosts.md).
        "mcp_optional_startup_grace_ms = 20000\n\n"
        "[model_providers.fake]\n"
        'name = "fake"\n'
        f'base_url = "{w.provider.url}/v1"\n'
        'env_key = "FAKE_OPENAI_KEY"\n'
        'wire_api = "responses"\n\n'
        f'[projects."{w.project}"]\ntrust_level = "trusted"\n', encoding="utf-8")


def _codex_trust_hooks(w: World) -> None:
    """Trust new hooks as a user does: start the TUI, choose "Trust all and continue".

    Codex records a hash per handler in ~/.codex/config.toml; only then does it run
    them, in the TUI and in ``codex exec`` alike (no bypass flag needed afterwards).
    """
    if not (w.project / ".codex" / "hooks.json").exists():
        return
    config = w.home / ".codex" / "config.toml"
    pane = w.pane("codex-trust", ["codex", "--no-daemon"])
    try:
        pane.wait_screen("Trust all and continue", 60)
        pane.choose("› 2. Trust all and continue", "2", 30)
        pane.keys("Enter")
        wait_for(lambda: "trusted_hash" in config.read_text(encoding="utf-8"), 30,
                 "codex to record the hook trust")
    finally:
        pane.kill()


def _gemini_prepare(w: World) -> None:
    # A fixed model, as `-m` gives: "auto" first asks a router model, non-streamed,
    # for a JSON choice the provider does not script (wakes run `gemini` without -m).
    _write_json(w.home / ".gemini" / "settings.json",
                {"security": {"auth": {"selectedType": "gemini-api-key"}},
                 "model": {"name": "gemini-2.5-flash"}})
    _write_json(w.home / ".gemini" / "trustedFolders.json", {str(w.project): "TRUST_FOLDER"})
    policy = w.home / ".gemini" / "policies" / "mailslot.toml"
    policy.parent.mkdir(parents=True, exist_ok=True)
    policy.write_text("".join(
        f'[[rule]]\ntoolName = "mcp_mailslot_{tool}"\ndecision = "allow"\npriority = 500\n\n'
        for tool in TOOLS), encoding="utf-8")


HOSTS: dict[str, Host] = {h.name: h for h in (
    Host("claude", _claude_prepare,
         lambda w, prompt: ["claude", "-p", prompt],
         lambda w: {"ANTHROPIC_BASE_URL": w.provider.url, "ANTHROPIC_API_KEY": API_KEY,
                    "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                    # -p may send its first request before MCP servers connect
                    # (docs/hosts.md): wait for them, as a user scripting -p should,
                    # and longer than the 5 s default (`mailslot start` waits a minute).
                    "MCP_CONNECTION_NONBLOCKING": "false", "MCP_CONNECT_TIMEOUT_MS": "60000"}),
    Host("codex", _codex_prepare,
         lambda w, prompt: ["codex", "exec", prompt],
         lambda w: {"FAKE_OPENAI_KEY": API_KEY}, _codex_trust_hooks),
    Host("gemini", _gemini_prepare,
         lambda w, prompt: ["gemini", "-m", "gemini-2.5-flash", "-p", prompt],
         lambda w: {"GOOGLE_GEMINI_BASE_URL": w.provider.url, "GEMINI_API_KEY": API_KEY}),
    Host("copilot", lambda w: None,
         lambda w, prompt: ["copilot", "-p", prompt,
                            *(f"--allow-tool=mailslot({t})" for t in TOOLS)],
         lambda w: {"COPILOT_OFFLINE": "true",
                    "COPILOT_PROVIDER_BASE_URL": f"{w.provider.url}/v1",
                    "COPILOT_PROVIDER_TYPE": "openai", "COPILOT_PROVIDER_API_KEY": API_KEY,
                    "COPILOT_MODEL": "gpt-4.1"}),
)}


# ---- a terminal -------------------------------------------------------------------------

class Pane:
    """A program in a tmux pane on the world's own tmux server (real terminal, real keys)."""

    def __init__(self, world: World, name: str, argv: Sequence[str]) -> None:
        self.world = world
        self.name = name
        self.socket = str(world.root / "tmux.sock")
        env = [f"{k}={v}" for k, v in world.env.items()]
        self._tmux("new-session", "-d", "-s", name, "-x", "200", "-y", "50",
                   "-c", str(world.project), "env", "-i", *env, *argv)

    def _tmux(self, *argv: str) -> str:
        done = subprocess.run(["tmux", "-S", self.socket, *argv], capture_output=True,
                              text=True, timeout=30, check=False,
                              env={**self.world.env, "TMUX": ""})
        return done.stdout

    def screen(self) -> str:
        """What the pane shows now."""
        return self._tmux("capture-pane", "-p", "-t", self.name)

    def wait_screen(self, text: str, timeout: float) -> str:
        """Block until ``text`` is on the screen; returns the screen."""
        return str(wait_for(lambda: text in (s := self.screen()) and s, timeout,
                            f"{text!r} on the {self.name} screen"))

    def choose(self, shown: str, key: str, timeout: float) -> None:
        """Press ``key`` until the screen shows ``shown`` (a menu still drawing drops keys)."""
        deadline = time.monotonic() + timeout
        while True:
            self.keys(key)
            try:
                self.wait_screen(shown, 3)
                return
            except AssertionError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"{shown!r} never showed:\n{self.screen()}") from None

    def keys(self, *keys: str) -> None:
        """tmux key names (``Enter``, ``C-c``) or text, one after the other."""
        for key in keys:
            self._tmux("send-keys", "-t", self.name, key)
            time.sleep(0.2)  # TUIs drop keys that arrive in one burst with the next

    def type(self, text: str, timeout: float = 60) -> None:
        """Type ``text`` literally and, once the screen shows it, press Enter.

        A TUI still starting up drops keys: typing is retried until the text shows.
        """
        deadline = time.monotonic() + timeout
        while True:
            self._tmux("send-keys", "-t", self.name, "-l", text)
            try:
                self.wait_screen(text, 5)
                break
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
        time.sleep(0.3)
        self._tmux("send-keys", "-t", self.name, "Enter")

    def alive(self) -> bool:
        return self.name in self._tmux("list-sessions", "-F", "#{session_name}").split()

    def kill(self) -> None:
        self._tmux("kill-session", "-t", self.name)


# ---- one test's world ------------------------------------------------------------------

class World:
    """A scratch HOME, git project and mailbox, a provider, and one host set up."""

    def __init__(self, root: Path, host: str, bin_dir: Path,
                 script: dict[str, Any] | None = None) -> None:
        self.root = root
        self.host = HOSTS[host]
        self.home = root / "home"
        self.project = root / "project"
        self.mailbox = root / "mailbox"
        for folder in (self.home, self.project):
            folder.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", str(self.project)], check=True)
        (self.project / "README.md").write_text("scratch project\n", encoding="utf-8")
        self.provider = Provider(root / "provider", {} if script is None else script)
        self.env = {
            "HOME": str(self.home), "PATH": f"{bin_dir}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8", "TERM": "xterm-256color", "USER": os.environ.get("USER", "u"),
            "TMPDIR": str(root / "tmp"), "NO_UPDATE_NOTIFIER": "1",
        }
        (root / "tmp").mkdir(exist_ok=True)
        self.env.update(self.host.env(self))
        self.host.prepare(self)
        self.write_config({})

    def mailslot(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """The mailslot CLI on this world's mailbox (``--dir``), in the project."""
        done = subprocess.run([MAILSLOT, "--dir", str(self.mailbox), *argv], cwd=self.project,
                              env=self.env, capture_output=True, text=True, timeout=60,
                              check=False)
        if check and done.returncode != 0:
            raise AssertionError(f"mailslot {shlex.join(argv)}: {done.stderr}")
        return done

    def install(self, agent: str, *flags: str, host: str | None = None
                ) -> subprocess.CompletedProcess[str]:
        """``mailslot install HOST --agent AGENT FLAGS`` in the project (``--dir`` given),
        then what a user of the host does next (see :attr:`Host.after_install`)."""
        done = self.mailslot("install", host or self.host.name, "--agent", agent, *flags)
        if host is None or host == self.host.name:
            self.host.after_install(self)
        return done

    def send(self, sender: str, to: str, subject: str, body: str) -> str:
        """Mail from ``sender``; returns its id."""
        done = self.mailslot("--agent", sender, "send", "--to", to, "--subject", subject,
                             "--body", body, "--json")
        return str(json.loads(done.stdout)["id"])

    def write_config(self, config: dict[str, Any]) -> None:
        """config.json as given, with no watcher started on demand unless it says so.

        Each test says who wakes (a `watch` it runs, or the host's own waiter). A host
        that hands its MCP server a cleaned environment (Codex, Gemini, Copilot) drops any
        off switch there and the test's keys too, so a watcher its server started would
        take the wake and fail it (docs/wake.md, "Which environment a watcher has")."""
        self.mailbox.mkdir(mode=0o700, exist_ok=True)
        # The woken host is given its provider settings as a user gives a key of a name
        # they chose (watcher.pass_env): a woken program gets no other variable of the
        # watcher's beyond what its host declares (docs/wake.md).
        watcher = {"on_demand": False,
                   "pass_env": sorted({*self.host.env(self), "NO_UPDATE_NOTIFIER"}),
                   **config.get("watcher", {})}
        (self.mailbox / "config.json").write_text(
            json.dumps({**config, "watcher": watcher}), encoding="utf-8")

    def set_wake(self, agent: str, method: str, **fields: object) -> None:
        """config.json waking ``agent`` with ``method`` and its ``fields``, in the project."""
        settings = {"wake_on_mail": True, "wake_method": method, "cwd": str(self.project),
                    **fields}
        self.write_config({"agents": {agent: settings}})

    def woken_by_mail(self, agent: str, body: str) -> tuple[str, list[dict[str, Any]]]:
        """Mail from bob, then one ``watch --once``: the message's id and the model
        requests carrying its wake notice (the wake logged as done, at least one)."""
        before = len(self.provider.model_requests())
        sent = self.send("bob", agent, "please look", body)
        done = self.mailslot("watch", "--once")
        assert "wake_ok" in (self.mailbox / "log" / "events.jsonl").read_text(), done.stdout
        woke = [r for r in self.provider.model_requests()[before:]
                if f"bob sent message {sent}" in request_text(r)]
        assert woke, [r["reply"] for r in self.provider.model_requests()]
        return sent, woke

    def inbox(self, agent: str) -> list[dict[str, Any]]:
        """Everything in ``agent``'s inbox, any state, as the CLI's JSON objects."""
        done = self.mailslot("--agent", agent, "inbox", "--all", "--json")
        return list(json.loads(done.stdout))

    def run(self, prompt: str, *extra: str, timeout: float = 120,
            argv: Sequence[str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run the host headless in the project, bounded by ``timeout`` seconds."""
        command = [*(argv or self.host.headless(self, prompt)), *extra]
        try:
            return subprocess.run(command, cwd=self.project, env=self.env, text=True,
                                  capture_output=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL, check=False)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"{self.host.name} did not finish in {timeout:g} s: "
                                 f"{exc.stderr!r}") from None

    def program(self, *argv: str) -> subprocess.CompletedProcess[str]:
        """One of the host's own commands (``mcp list``...) in the project, bounded."""
        return subprocess.run(list(argv), cwd=self.project, env=self.env, capture_output=True,
                              text=True, timeout=120, check=False)

    def health(self, pattern: str, *argv: str, attempts: int = 3) -> str:
        """The host's own health check (``mcp list``) until its output matches
        ``pattern``, at most ``attempts`` runs; the last output either way. Each run
        starts ``mailslot serve`` afresh under the host's own connect timeout, which a
        loaded CI machine can outlast (the server's start is measured in bench_mcp);
        a server that never connects still fails every run."""
        out = ""
        for _ in range(attempts):
            done = self.program(*argv)
            out = done.stdout + done.stderr
            if re.search(pattern, out):
                break
        return out

    def pane(self, name: str, argv: Sequence[str]) -> Pane:
        """Start ``argv`` (the host's TUI) in a tmux pane in the project."""
        return Pane(self, name, argv)

    def processes(self) -> list[int]:
        """Processes started for this world: their HOME is its scratch HOME."""
        mine = f"HOME={self.home}".encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                environ = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if mine in environ and int(entry.name) != os.getpid():
                found.append(int(entry.name))
        return found

    def close(self) -> None:
        """Stop the provider, the tmux server and anything the hosts left behind."""
        self.provider.stop()
        subprocess.run(["tmux", "-S", str(self.root / "tmux.sock"), "kill-server"],
                       capture_output=True, check=False, timeout=30)
        for pid in self.processes():  # e.g. Codex's app-server daemon
            with contextlib.suppress(OSError):
                os.kill(pid, 9)
