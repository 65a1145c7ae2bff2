"""Waking an Antigravity conversation through its ``agentapi`` program.

Antigravity publishes no documentation for this route, so mailslot fixes the contract it
uses (docs/wake.md) and keeps it narrow. The running session writes a credentials file::

    {"address": "http://127.0.0.1:PORT", "token": "...", "pid": 1234}

mailslot refuses the file unless it is a regular file owned by this user, its writer
(``pid``) is still running and started before the file was written, and the address is
on this machine. Then it runs::

    agentapi send --address ADDRESS --conversation ID [--project ID] --message NOTICE

with the token in the child's environment (``AGENTAPI_TOKEN``) only: never in the argv,
an outcome, the log or ``watch --validate``.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .methods import SESSION_ID, ArgvMethod, Field, Job, Outcome, child_env, text_field
from .process import Spawn

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
        Field("executable", "the agentapi program, if not `agentapi` on PATH", required=False),
    )
    secret_env = (TOKEN_ENV,)

    def __init__(self, agent: str, conversation: str, project: str | None, credentials: Path,
                 executable: str) -> None:
        super().__init__(agent, executable)
        self.conversation = conversation
        self.project = project
        self.credentials = credentials

    @classmethod
    def from_config(cls, agent: str, cfg: Mapping[str, Any]) -> AgentApiMethod:
        what = "an id (letters, digits, '.', '_', ':', '-')"
        conversation = text_field(agent, cfg, "conversation_id", pattern=SESSION_ID, what=what)
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
