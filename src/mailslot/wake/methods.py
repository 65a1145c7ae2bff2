"""Wake methods: how each kind of host is woken, built from the agent's config.

A method is a class registered by name (see :mod:`.methods_by_name`), so a new host needs no
schema change. Each one says what it needs and where it falls short (``watch
--validate`` prints this), checks its config fields (failing closed, naming the field),
previews what it would do, and wakes. Methods that start a program build an argv without
a shell, and no method ever passes a flag that skips a host's permission prompts: every
argv is checked against :data:`BYPASS_FLAGS` before it runs.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from ..core.errors import StoreError
from . import session_mcp

TYPE_CHECKING = False  # on the hook path (the hosts' methods are defined on it): light
if TYPE_CHECKING:
    import threading
    from collections.abc import Mapping, Sequence
    from typing import Any, ClassVar

    from ..core.message import Message
    from ..store.base import Store
    from .process import Spawn

SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
LATEST = "latest"
"""``session_id`` naming the agent's latest session in the host (recorded by its hook)."""


class Bypasses:
    """Every host's permission-skipping flags, option values and settings, together: an
    argv is checked against all of them, whichever host it is meant for."""

    def __init__(self) -> None:
        from .. import host_registry as hosts

        every = hosts.every()
        self.flags = frozenset().union(*(h.bypass_flags for h in every))
        self.values: dict[str, frozenset[str]] = {}
        for h in every:
            for flag, values in h.bypass_values.items():
                self.values[flag] = self.values.get(flag, frozenset()) | values
        self.settings_flags = frozenset().union(*(h.settings_flags for h in every))
        self.settings = frozenset(s for h in every for s in h.bypass_settings)
        self.settings_args = frozenset().union(*(h.settings_args for h in every))
        self.settings_values: dict[str, frozenset[str]] = {}
        for h in every:
            for path, values in h.settings_bypass.items():
                self.settings_values[path] = self.settings_values.get(path, frozenset()) \
                    | values


_BYPASSES: list[Bypasses] = []


def bypasses() -> Bypasses:
    """The union over every host (built once per process, on first use)."""
    if not _BYPASSES:
        _BYPASSES.append(Bypasses())
    return _BYPASSES[0]


def bypass_flag(argv: Sequence[str], cwd: str | None = None) -> str | None:
    """The first permission-skipping flag in ``argv``, shown as it would be passed.

    Every spelling a host's option parser accepts counts: ``--flag value``,
    ``--flag=value``, a short option glued to its value (``-anever``), a quoted value
    (``-c approval_policy="never"``), and a whole settings object given for the run
    (``--settings JSON`` or ``--settings FILE``, a relative file in ``cwd``) that sets a
    skipping mode; a settings argument that cannot be read counts as one (fail closed).
    A wrapper script that adds such a flag itself, or a settings file changed after
    the check, cannot be seen from here (docs/security.md).
    """
    known = bypasses()
    for i, arg in enumerate(argv):
        short = arg[:2]
        if len(arg) > 2 and arg[1] != "-" and (short in known.values
                                               or short in known.settings_flags):
            flag, eq, inline = short, "=", arg[2:].removeprefix("=")  # -anever, -a=never
        else:
            flag, eq, inline = arg.partition("=")
        value = inline if eq else (argv[i + 1] if i + 1 < len(argv) else "")
        if arg in known.flags or flag in known.flags:
            return arg
        if flag in known.values and _unquoted(value) in known.values[flag]:
            return f"{flag} {value}"
        if flag in known.settings_flags and _unquoted(value.split("=", 1)[0]) in known.settings:
            return f"{flag} {value}"
        if flag in known.settings_args:
            found = _settings_bypass(value, known.settings_values, cwd)
            if found is not None:
                return f"{flag} {found}"
    return None


def _settings_bypass(value: str, where: Mapping[str, frozenset[str]],
                     cwd: str | None) -> str | None:
    """What in a settings argument (inline JSON, else a file's path) skips a host's
    prompts, as ``VALUE (permissions.defaultMode: bypassPermissions)``, or why it cannot
    be checked; ``None``: nothing in it does."""
    import os
    import stat

    from ..core import jsontext

    text = value.strip()
    shown = " ".join(text.split())  # one line, whatever the argument holds
    shown = shown if len(shown) <= 120 else shown[:117] + "..."
    if not text.startswith("{"):
        path = os.path.join(cwd or "", os.path.expanduser(_unquoted(text)))
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not hang us
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    return f"{shown} (not a settings file: it cannot be checked)"
                text = os.read(fd, 1 << 20).decode("utf-8", "replace")
            finally:
                os.close(fd)
        except OSError as exc:
            return f"{shown} (a settings file that cannot be read to check it: " \
                   f"{exc.strerror})"
    try:
        settings = jsontext.loads(text)
    except (ValueError, RecursionError):
        return f"{shown} (settings that are not JSON: they cannot be checked)"
    for dotted, values in where.items():
        node = settings
        for key in dotted.split("."):
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, str) and node in values:
            return f"{shown} ({dotted}: {node})"
    return None


def _unquoted(value: str) -> str:
    return value.strip().strip("\"'").strip()


@dataclass(frozen=True)
class Field:
    """A config field a method reads, for ``watch --validate`` and docs/wake.md."""

    name: str
    help: str
    required: bool = True
    kind: str = "text"  # "text", "argv" (JSON list of strings), "number", "bool": for forms


@dataclass(frozen=True)
class Job:
    """One wake: the agent, the mail it is about (oldest first) and the notice."""

    agent: str
    messages: tuple[Message, ...]
    notice: str
    store: Store  # the store it acts on; its location tells the woken agent where to read
    timeout: float
    stop: threading.Event = field(default_factory=lambda: _event())  # set: give up now
    passes: tuple[str, ...] = ()  # watcher.pass_env: more of the watcher's variables


@dataclass(frozen=True)
class Outcome:
    """How an attempt ended; ``reason`` is ours, one line, never a host's output."""

    ok: bool
    reason: str = ""
    retry: bool = True  # False: trying again cannot help (or could do harm)
    restart: bool = False  # a failed recovery start: retried once only (launch/restart.py)
    skip: bool = False  # nothing there to wake now: not retried, nobody told (the mail waits)
    tell: str = ""  # woken, but the sender should hear this (a notice held for approval)


OK = Outcome(True)


@dataclass(frozen=True)
class Setup:
    """What a wake's probe may look at before anything is written (``install --wake``,
    ``doctor --wake``): the agent, its host, its config entry as it is, and this
    machine as it is now."""

    agent: str
    host: str  # the host's name
    program: str | None  # the host's program name (None: mailslot cannot run it)
    entry: Mapping[str, Any]  # the agent's config.json entry now (kept where set)
    folder: str  # the project the agent works in
    hooks: bool  # mailslot's hooks run (or will run) in this host for the agent
    latest: str | None  # its latest session in this host, as the hooks recorded it
    env: Mapping[str, str]


@dataclass(frozen=True)
class Check:
    """A probe's answer: can the method wake the agent, why (one line), and the config
    fields it would be written with."""

    ok: bool
    said: str
    fields: Mapping[str, Any] = field(default_factory=dict)


def _event() -> threading.Event:
    import threading

    return threading.Event()


def where(agent: str, name: str) -> str:
    return f"config.json: agents.{agent}.{name}"


def text_field(agent: str, cfg: Mapping[str, Any], name: str, *, required: bool = True,
               pattern: re.Pattern[str] | None = None, what: str = "text") -> str | None:
    """A one-line text field, checked; raises :class:`StoreError` naming it."""
    value = cfg.get(name)
    if value is None:
        if required:
            raise StoreError(f"{where(agent, name)} is missing")
        return None
    if not isinstance(value, str) or not value or any(c in value for c in "\x00\r\n"):
        raise StoreError(f"{where(agent, name)} must be non-empty one-line text")
    if pattern is not None and not pattern.fullmatch(value):
        raise StoreError(f"{where(agent, name)} is not {what}")
    return value


def child_env(job: Job) -> dict[str, str]:
    """What every woken program is told beyond what any program needs: the variables the
    owner passes (``watcher.pass_env``), then who it is and which mailbox it reads
    (:mod:`.environment`)."""
    from .environment import identity, passed

    return {**passed(job.passes), **identity(job.agent, job.store.location)}


class WakeMethod(ABC):
    """A way to wake one kind of host. Instances are built from checked config."""

    name: ClassVar[str]
    summary: ClassVar[str]
    needs: ClassVar[tuple[str, ...]] = ()
    limits: ClassVar[tuple[str, ...]] = ()
    fields: ClassVar[tuple[Field, ...]] = ()
    batches: ClassVar[bool] = True
    """True: one wake announces every message due for the agent at once."""

    @classmethod
    @abstractmethod
    def from_config(cls, agent: str, cfg: Mapping[str, Any]) -> WakeMethod:
        """Check the agent's fields; raise :class:`StoreError` naming a bad one."""

    @abstractmethod
    def preview(self, job: Job) -> list[str]:
        """What a wake would do, one line each, with no secret in it."""

    @abstractmethod
    def wake(self, job: Job) -> Outcome:
        """Wake the agent (blocking until it is done or has failed)."""

    def probe(self) -> list[str]:
        """Problems visible now without waking anyone (for ``watch --validate``)."""
        return []

    def route(self, job: Job) -> str:
        """Which way a wake of ``job.agent`` would go now and why, in one line, for a
        method that picks between ways at wake time (``doctor`` prints it; nothing is
        woken). Empty: it has one way, its preview says it."""
        return ""

    @classmethod
    def check(cls, setup: Setup) -> Check:
        """Could this method wake ``setup.agent`` (``install --wake`` chooses with it)?
        By default there is nothing to check but the fields it reads, as they are."""
        try:
            cls.from_config(setup.agent, setup.entry)
        except StoreError as exc:
            return Check(False, str(exc))
        return Check(True, "nothing to check" if not cls.fields else "its fields are set")


def _program_missing(executable: str) -> Check | None:
    from . import process

    if process.find_program(executable) is None:
        return Check(False, f"{executable} is not on PATH")
    return None


class ArgvMethod(WakeMethod):
    """A method that starts one program; subclasses say which argv."""

    secret_env: ClassVar[tuple[str, ...]] = ()
    """Names of environment variables whose values are never shown."""
    reads_stdout: ClassVar[bool] = False
    """The program answers on standard output (:meth:`answered` reads it)."""

    def __init__(self, agent: str, executable: str, cwd: str | None = None) -> None:
        self.agent = agent
        self.executable = executable
        self.cwd = cwd

    @abstractmethod
    def argv(self, job: Job) -> list[str]:
        """The whole argv, ``argv[0]`` being the program."""

    def spawn(self, job: Job) -> Spawn | Outcome:
        """What to start, or why it cannot be started now."""
        from .process import Spawn

        return Spawn(self.argv(job), child_env(job), cwd=self.cwd)

    def preview(self, job: Job) -> list[str]:
        import shlex

        from .process import Spawn

        spawn = self.spawn(job)
        argv = spawn.argv if isinstance(spawn, Spawn) else self.argv(job)
        env = dict(child_env(job))
        env.update({name: "<secret>" for name in self.secret_env})
        env.update({name: "<the watcher's>" for name in job.passes if name in env})
        lines = [f"runs: {shlex.join(argv)}",
                 "env:  " + " ".join(f"{k}={v}" for k, v in env.items())]
        if self.cwd:
            lines.append(f"in:   {self.cwd}")
        return lines

    def probe(self) -> list[str]:
        from . import process

        if process.find_program(self.executable) is None:
            return [f"{self.executable} is not on the watcher's PATH"]
        return []

    def wake(self, job: Job) -> Outcome:
        from . import process

        spawn = self.spawn(job)
        if isinstance(spawn, Outcome):
            return spawn
        flag = bypass_flag(spawn.argv, spawn.cwd)
        if flag is not None:
            return Outcome(False, f"refused: {flag} would skip the host's permission prompts",
                           retry=False)
        out: list[bytes] | None = [] if self.reads_stdout else None
        failure = process.run(spawn, job.timeout, job.stop, stdout=out)
        if failure is None and out is not None:
            failure = self.answered(b"".join(out), spawn.env)
        return OK if failure is None else Outcome(False, failure)

    def answered(self, stdout: bytes, env: Mapping[str, str]) -> str | None:
        """Why a run that exited 0 still failed, from what it printed (``None``: it did
        not); asked only of a method that :attr:`reads_stdout`."""
        return None


_CWD = Field("cwd", "folder to run the program in (e.g. the project the session belongs to)",
             required=False)


class CommandMethod(ArgvMethod):
    name = "command"
    summary = "runs your own program: an argv template, the message as JSON on stdin"
    needs = ("the program named in `command`, on the watcher's PATH or as an absolute path",)
    limits = (
        "one run per message ({id}, {from} and {to} are that message's)",
        "stdin carries the whole message, body included: treat it as untrusted data",
        "exit status 0 counts as woken; on failure the last lines of stderr are reported",
    )
    fields = (
        Field("command", 'argv list, e.g. ["notify-agent", "{from}", "{id}"]; no shell',
              kind="argv"),
        _CWD,
    )
    batches = False
    PLACEHOLDERS = ("{id}", "{from}", "{to}")

    def __init__(self, agent: str, template: list[str], cwd: str | None) -> None:
        super().__init__(agent, template[0], cwd)
        self.template = template

    @classmethod
    def from_config(cls, agent: str, cfg: Mapping[str, Any]) -> CommandMethod:
        template = cfg.get("command")
        if (not isinstance(template, list) or not template
                or not all(isinstance(a, str) and "\x00" not in a for a in template)
                or not template[0]):
            raise StoreError(f"{where(agent, 'command')} must be a list of text (an argv)")
        cwd = text_field(agent, cfg, "cwd", required=False)
        flag = bypass_flag(template, cwd)
        if flag is not None:
            raise StoreError(f"{where(agent, 'command')} holds {flag}, which would skip a "
                             "host's permission prompts; mailslot never passes it")
        return cls(agent, list(template), cwd)

    @classmethod
    def check(cls, setup: Setup) -> Check:
        """Only your own program, already named in config.json: nothing is invented."""
        if "command" not in setup.entry:
            return Check(False, f"no {where(setup.agent, 'command')} (your own program)")
        try:
            method = cls.from_config(setup.agent, setup.entry)
        except StoreError as exc:
            return Check(False, str(exc))
        return _program_missing(method.executable) or Check(
            True, f"runs your program {method.executable}")

    def argv(self, job: Job) -> list[str]:
        message = job.messages[0]
        values = {"{id}": message.id, "{from}": message.sender, "{to}": job.agent}
        argv = []
        for arg in self.template:
            for key, value in values.items():
                arg = arg.replace(key, value)
            argv.append(arg)
        return argv

    def spawn(self, job: Job) -> Spawn:
        import json

        from .process import Spawn

        data = json.dumps(job.messages[0].as_dict(with_body=True), ensure_ascii=False)
        return Spawn(self.argv(job), child_env(job), data.encode("utf-8"), self.cwd)


class ResumeMethod(ArgvMethod):
    """A host CLI that resumes a saved session with one prompt: the notice."""

    host: ClassVar[str]
    """The host whose sessions it resumes (its hooks record them under this name)."""
    program: ClassVar[str]
    fields: ClassVar[tuple[Field, ...]] = (
        Field("session_id", 'the session to resume, or "latest": the agent\'s latest '
              "session in this host, as its SessionStart hook recorded it"),
        Field("executable", "the host's program, if not the default name on PATH",
              required=False),
        _CWD,
        Field("own_server", "true: the woken turn gets its own mailslot MCP server speaking "
              "as this agent, whatever the folder's settings name (hosts that take a "
              "per-run server; set by `mailslot start --register-as`)", required=False,
              kind="bool"),
    )

    def __init__(self, agent: str, session_id: str, executable: str, cwd: str | None,
                 own_server: bool = False) -> None:
        super().__init__(agent, executable, cwd)
        self.session_id = session_id
        self.own_server = own_server

    def own(self, job: Job) -> session_mcp.Override:
        """The agent's own MCP server for this turn (nothing unless ``own_server``)."""
        if not self.own_server:
            return session_mcp.Override()
        return session_mcp.override(self.host, self.agent, job.store.location)

    def session(self, job: Job) -> str | None:
        """The session to wake: as configured, or the latest the hooks recorded; with
        ``latest``, mail for one session of the agent (``name@session``) wakes
        that session when it is one of this host's."""
        if self.session_id != LATEST:
            return self.session_id
        aimed = {m.instance for m in job.messages}
        if len(aimed) == 1 and None not in aimed:
            one = aimed.pop()
            if any(r["agent"] == self.agent and r["session"] == one
                   and r.get("host") == self.host for r in job.store.hook_sessions()):
                return one
        return job.store.latest_session(self.agent, self.host)

    @abstractmethod
    def resume(self, job: Job, session: str) -> list[str]:
        """The argv that wakes ``session`` with the notice."""

    def argv(self, job: Job) -> list[str]:
        return self.resume(job, self.session(job) or f"<latest {self.program} session>")

    def spawn(self, job: Job) -> Spawn | Outcome:
        if self.session(job) is None:
            return Outcome(False, f"no {self.program} session of {self.agent} is recorded "
                           "yet (its SessionStart hook records the latest)")
        from .process import Spawn

        own = self.own(job)
        return Spawn([*self.argv(job), *own.args], {**child_env(job), **own.env},
                     cwd=self.cwd)

    def preview(self, job: Job) -> list[str]:
        lines = super().preview(job)
        own = self.own(job)
        if own.args:
            lines.append("own MCP server: " + " ".join(own.args))
        return lines

    @classmethod
    def check(cls, setup: Setup) -> Check:
        """Its program is found, and a session id is configured or recorded by the
        hooks (``"latest"``); ``cwd`` defaults to the project."""
        executable = setup.entry.get("executable") or cls.program
        missing = _program_missing(str(executable))
        if missing is not None:
            return missing
        session = setup.entry.get("session_id")
        if session is not None and session != LATEST:
            said = f"session {session}, as configured"
        elif setup.latest or setup.hooks or session == LATEST:
            said = 'session "latest": ' + (
                f"{setup.latest}, as its hooks recorded" if setup.latest else
                "its hooks record it at the next session start" if setup.hooks else
                "as configured; no hook has recorded one yet")
            session = LATEST
        else:
            return Check(False, f"no session id: set {where(setup.agent, 'session_id')}, "
                                "or install with --hooks so they record the latest")
        fields = {"session_id": session}
        if "cwd" not in setup.entry:
            fields["cwd"] = setup.folder
        try:
            cls.from_config(setup.agent, {**setup.entry, **fields})
        except StoreError as exc:
            return Check(False, str(exc))
        return Check(True, said, fields)

    @classmethod
    def from_config(cls, agent: str, cfg: Mapping[str, Any]) -> ResumeMethod:
        session = text_field(agent, cfg, "session_id", pattern=SESSION_ID,
                             what="a session id (letters, digits, '.', '_', ':', '-')")
        executable = text_field(agent, cfg, "executable", required=False) or cls.program
        own = cfg.get("own_server", False)
        if not isinstance(own, bool):
            raise StoreError(f"{where(agent, 'own_server')} must be true or false")
        if own and not session_mcp.takes_own_server(cls.host):
            raise StoreError(f"{where(agent, 'own_server')} is not supported by {cls.name}")
        return cls(agent, str(session), executable, text_field(agent, cfg, "cwd", required=False),
                   own)


class WaiterMethod(WakeMethod):
    """The session wakes itself: a background waiter its host runs (``mailslot hook HOST
    wait``, :mod:`mailslot.frontends.hooks.wait`) wakes it the moment mail arrives. The watcher
    starts nothing; a wake counts when a waiter of the agent is running."""

    host: ClassVar[str]
    """The host whose waiter it is (``install HOST --hooks --wake`` registers it)."""

    @classmethod
    def from_config(cls, agent: str, cfg: Mapping[str, Any]) -> WaiterMethod:
        return cls()

    def preview(self, job: Job) -> list[str]:
        return ["nothing started: a running waiter hook wakes the session itself; the "
                "watcher checks that one is running"]

    def route(self, job: Job) -> str:
        return f"{self.name}: {waiter_now(job)}"

    def wake(self, job: Job) -> Outcome:
        from .. import host_registry as hosts
        from ..mail.presence import pid_alive

        if any(pid_alive(p) for p in job.store.waiter_pids(job.agent)):
            return OK
        title = hosts.host(self.host).title
        return Outcome(False, f"no {title} session of this agent has a waiter running "
                              f"(install {self.host} --hooks --wake, and keep a session open)")


def waiter_now(job: Job) -> str:
    """Whether a waiter of ``job.agent`` runs now, as doctor says it."""
    from ..mail.presence import pid_alive

    live = [p for p in job.store.waiter_pids(job.agent) if pid_alive(p)]
    if live:
        return f"its session's waiter wakes it (a waiter runs: pid {live[0]})"
    return ("its session's waiter would wake it, but none runs now (one arms after each "
            "turn of an open session)")


class UnsupportedMethod(WakeMethod):
    name = "unsupported"
    summary = "this host cannot be woken from outside; mail waits for its next session"
    limits = ("never woken; a sender who asks for a wake is told so at once",)

    @classmethod
    def from_config(cls, agent: str, cfg: Mapping[str, Any]) -> UnsupportedMethod:
        return cls()

    def preview(self, job: Job) -> list[str]:
        return ["nothing: this host cannot be woken (wake_method is \"unsupported\")"]

    def wake(self, job: Job) -> Outcome:
        return Outcome(False, 'this host cannot be woken (wake_method is "unsupported")',
                       retry=False)
