"""Antigravity (Google's agent IDE): everything mailslot knows about it.

Antigravity reads MCP servers from ``mcp_config.json`` (it does not document the file's
location; docs/hosts.md says what was found) and has no command hooks. Its conversations
run inside the app: mailslot reaches one through the ``agentapi`` program, a route
Antigravity publishes no documentation for, so mailslot fixes the contract it uses
(docs/wake.md) and keeps it narrow. The running session writes a credentials file::

    {"address": "http://127.0.0.1:PORT", "token": "...", "pid": 1234}

mailslot refuses the file unless it is a regular file owned by this user, its writer
(``pid``) is still running and started before the file was written, and the address is
on this machine. Then it runs::

    agentapi send --address ADDRESS --conversation ID [--project ID] --message NOTICE

(``new-conversation`` for ``mailslot start``) with the token in the child's environment
(``AGENTAPI_TOKEN``) only: never in the argv, an outcome, the log or ``watch --validate``.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

from .host import Failed, Host, Rung, Start, option

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any


TOKEN_ENV = "AGENTAPI_TOKEN"
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


class Credentials:
    """The session's address and token, from a file whose writer still runs."""

    def __init__(self, address: str, token: str) -> None:
        self.address = address
        self._token = token

    def __repr__(self) -> str:  # never show the token, even in a traceback
        return f"Credentials(address={self.address!r}, token=<hidden>)"

    @property
    def token(self) -> str:
        return self._token


def _started_after(pid: int, written: float) -> bool:
    """True when process ``pid`` started after ``written`` (so it is not the writer)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = int(fields[19])
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
    except (OSError, ValueError, IndexError, StopIteration):
        return False  # no /proc (macOS): the liveness check is all we have
    return boot + ticks / os.sysconf("SC_CLK_TCK") > written + 1.0


def read_credentials(path: Path) -> Credentials | str:
    """The credentials, or why they cannot be used (a reason that never holds the token)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO must not hang us
    except FileNotFoundError:
        return f"credentials file {path} does not exist (is the session running?)"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return f"credentials file {path} is a symlink; not followed"
        return f"credentials file {path} cannot be read ({exc.strerror})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            return f"credentials file {path} is not a regular file owned by you"
        with os.fdopen(os.dup(fd), "rb") as handle:
            raw = handle.read(65536)
    finally:
        os.close(fd)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return f"credentials file {path} is not valid JSON"
    if not isinstance(data, dict):
        return f"credentials file {path} must hold a JSON object"
    address, token, pid = data.get("address"), data.get("token"), data.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return f"credentials file {path} has no writer pid"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return f"the session that wrote {path} (pid {pid}) is no longer running"
    except PermissionError:
        return f"the process that wrote {path} (pid {pid}) is not yours"
    if _started_after(pid, info.st_mtime):
        return f"the session that wrote {path} (pid {pid}) is no longer running"
    if not isinstance(address, str) or urlsplit(address).scheme not in ("http", "https"):
        return f"credentials file {path} has no http address"
    if urlsplit(address).hostname not in _LOOPBACK:
        return f"credentials file {path} names an address off this machine; refused"
    if not isinstance(token, str) or not token or any(c in token for c in "\x00\r\n"):
        return f"credentials file {path} has no usable token"
    return Credentials(address, token)


_CONVERSATION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")


class Antigravity(Host):
    name = "antigravity"
    title = "Antigravity"
    runtime = "antigravity"

    mcp_path = {"project": ".agents/mcp_config.json",
                "user": "~/.gemini/antigravity/mcp_config.json"}
    install_notes = {scope: ("Antigravity does not document this file's location; check that "
                             "'mailslot' shows under Manage MCP Servers.",)
                     for scope in ("project", "user")}

    program = "agentapi"
    startable = True
    handoffs = ("background",)  # the conversation runs inside Antigravity
    hands_off = True
    takes_project = True
    wake_method = "agentapi"
    wake_ladder = (Rung("agentapi"), Rung("command"))
    """Its conversations run inside the app (no pane to type into): agentapi, with the
    conversation and credentials ``mailslot start antigravity`` wrote."""

    def argv(self, executable: str, start: Start) -> list[str]:
        return self.conversation_argv(executable, "<address from credentials_file>", start)

    @staticmethod
    def conversation_argv(executable: str, address: str, start: Start) -> list[str]:
        argv = [executable, "new-conversation", "--address", address]
        argv += option("--project", start.project) + option("--model", start.model)
        argv += option("--title", start.name)
        return [*argv, "--", start.prompt]

    def open_conversation(self, executable: str, launch: Mapping[str, Any], start: Start,
                          env: Mapping[str, str], timeout: float) -> str:
        """``agentapi new-conversation``: the token in its environment only; it prints
        the new conversation's id."""
        raw = launch.get("credentials_file")
        if not isinstance(raw, str) or not raw:
            raise Failed("config.json: launch.antigravity.credentials_file is not set")
        found = read_credentials(Path(raw).expanduser())
        if isinstance(found, str):
            raise Failed(found)
        argv = self.conversation_argv(executable, found.address, start)
        try:
            done = subprocess.run(argv, env={**env, TOKEN_ENV: found.token},
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  timeout=timeout, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise Failed(f"agentapi could not be run ({type(exc).__name__})") from None
        conversation = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
        if done.returncode != 0 or not _CONVERSATION.fullmatch(conversation):
            raise Failed(f"agentapi new-conversation failed (exit status {done.returncode})")
        return conversation

    def started_wake(self, session_id: str, folder: str, launch: Mapping[str, Any],
                     project: str | None, tools: Sequence[str]) -> dict[str, Any]:
        entry: dict[str, Any] = {"wake_on_mail": True, "wake_method": self.wake_method,
                                 "conversation_id": session_id,
                                 "credentials_file": launch.get("credentials_file")}
        if project is not None:
            entry["project_id"] = project
        return entry

    def wake_methods(self) -> Sequence[type]:
        return _wake_methods()


def _wake_methods() -> list[type]:
    """Built on first use, so that a hook, which needs only the facts above, never
    loads the wake machinery."""
    from ..wake.methods import (
        SESSION_ID,
        ArgvMethod,
        Field,
        Job,
        Outcome,
        child_env,
        text_field,
    )
    from ..wake.process import Spawn

    class AgentApiMethod(ArgvMethod):
        name = "agentapi"
        summary = "sends the notice into an Antigravity conversation with `agentapi send`"
        needs = ("`agentapi` on the watcher's PATH (or `executable`)",
                 "`credentials_file` written by the running session: address, token, pid",
                 "`conversation_id` (and `project_id` where the session uses one)")
        limits = (
            "undocumented by Antigravity: mailslot's contract is in docs/wake.md; check it "
            "against your install or point `executable` at a wrapper",
            "refused while the session that wrote the credentials is not running",
        )
        fields = (
            Field("conversation_id", "the conversation (cascade) to send the notice to"),
            Field("credentials_file", "JSON file with address, token and the writer's pid"),
            Field("project_id", "the project the conversation belongs to", required=False),
            Field("executable", "the agentapi program, if not `agentapi` on PATH",
                  required=False),
        )
        secret_env = (TOKEN_ENV,)

        def __init__(self, agent: str, conversation: str, project: str | None,
                     credentials: Path, executable: str) -> None:
            super().__init__(agent, executable)
            self.conversation = conversation
            self.project = project
            self.credentials = credentials

        @classmethod
        def from_config(cls, agent: str, cfg: Mapping[str, Any]) -> AgentApiMethod:
            what = "an id (letters, digits, '.', '_', ':', '-')"
            conversation = text_field(agent, cfg, "conversation_id", pattern=SESSION_ID,
                                      what=what)
            project = text_field(agent, cfg, "project_id", required=False, pattern=SESSION_ID,
                                 what=what)
            credentials = text_field(agent, cfg, "credentials_file")
            executable = text_field(agent, cfg, "executable", required=False) or "agentapi"
            return cls(agent, str(conversation), project, Path(str(credentials)).expanduser(),
                       executable)

        def _argv(self, address: str, notice: str) -> list[str]:
            argv = [self.executable, "send", "--address", address,
                    "--conversation", self.conversation]
            if self.project:
                argv += ["--project", self.project]
            return [*argv, "--message", notice]

        def argv(self, job: Job) -> list[str]:
            return self._argv("<address from credentials_file>", job.notice)

        def spawn(self, job: Job) -> Spawn | Outcome:
            found = read_credentials(self.credentials)
            if isinstance(found, str):
                return Outcome(False, found)
            env = {**child_env(job), TOKEN_ENV: found.token}
            return Spawn(self._argv(found.address, job.notice), env)

        def probe(self) -> list[str]:
            found = read_credentials(self.credentials)
            problems = [found] if isinstance(found, str) else []
            return super().probe() + problems

    return [AgentApiMethod]


HOST = Antigravity()
