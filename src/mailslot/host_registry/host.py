"""What mailslot can know about an agent host, and what it assumes when a host says nothing.

Each adapter of :mod:`mailslot.hosts` (a module, or a package whose ``__init__`` holds
the facts) subclasses :class:`Host` once and sets only what its host has: where it reads
MCP and hook settings and in which shape, the events its hooks send and the JSON it
takes back, how it is started and continued, how it is woken, how one run of it is
given its own MCP server, and which of its flags and modes skip its permission prompts.
The rest of mailslot asks a :class:`Host` (through the registry,
:func:`mailslot.host_registry.host`) and never names one.

On the hook path: this module loads nothing at import (annotations only), so its value
classes are written out rather than made by :mod:`mailslot.core.values`.
"""

from __future__ import annotations

from .session_record import SessionRecord

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, MutableMapping, Sequence
    from typing import Any, ClassVar, Literal

    Scope = Literal["project", "user"]
    Payload = dict[str, object]

ADAPTERS = "mailslot.hosts"
"""The package the adapters are in: ``hosts/NAME.py`` or ``hosts/NAME/``."""
PARTS = ("bridge", "wake")
"""The parts a host package may hold beside its facts (``hosts/NAME/PART.py``), each
loaded by its name only when asked (:meth:`Host.part`): ``wake`` declares the host's
wake methods (``METHODS``), ``bridge`` makes its bridge (``bridge()``). Their file names
repeat from host to host, as ``__init__.py`` does; every other module of a host is
imported by its own package as Python modules are."""

SCOPES: tuple[Scope, ...] = ("project", "user")
START, PROMPT, STOP, MIDTURN = "start", "prompt", "stop", "midturn"
"""The moments a hook can show mail: a session's start, a prompt, the end of a turn, and
after a tool call within a turn (see :mod:`mailslot.service.delivery`)."""
MOMENTS = (START, PROMPT, STOP, MIDTURN)
SERVER = "mailslot"
"""The name mailslot's MCP server is registered under, in every host."""


class Failed(Exception):
    """A start that was tried and did not happen (logged as ``failed``)."""


class Hook:
    """One host event and the ``mailslot hook HOST EVENT`` event that serves it."""

    __slots__ = ("event", "matcher", "ours")

    def __init__(self, event: str, ours: str, matcher: str | None = None) -> None:
        self.event = event
        self.ours = ours
        self.matcher = matcher


class HookFile:
    """Where a host reads command hooks, which it runs, and with which time unit."""

    __slots__ = ("container", "grouped", "hooks", "named", "notes", "path", "switches",
                 "timeout", "version")

    def __init__(self, path: dict[Scope, str], hooks: tuple[Hook, ...], timeout: int, *,
                 grouped: bool = True, named: bool = False, version: int | None = None,
                 container: str | None = "hooks", notes: tuple[str, ...] = (),
                 switches: dict[str, object] | None = None) -> None:
        self.path = path
        self.hooks = hooks
        self.timeout = timeout  # in the host's unit (some count milliseconds)
        self.grouped = grouped  # handlers inside {"matcher", "hooks": [...]} groups
        self.named = named  # each handler carries a name (for a host's enable/disable)
        self.version = version  # the file's format version, written first when absent
        self.container = container  # the key holding the events ("a.b": nested; None: top)
        self.notes = notes
        self.switches = switches or {}  # settings ("a.b": nested) set where the file is silent


def context(event_name: str) -> Callable[[str], Payload]:
    """``{"hookSpecificOutput": {"hookEventName": E, "additionalContext": TEXT}}``."""
    return lambda text: {"hookSpecificOutput": {"hookEventName": event_name,
                                                "additionalContext": text}}


def decision(word: str) -> Callable[[str], Payload]:
    """``{"decision": WORD, "reason": TEXT}``: a stop hook that continues the turn."""
    return lambda text: {"decision": word, "reason": text}


def field(name: str) -> Callable[[str], Payload]:
    """``{NAME: TEXT}``."""
    return lambda text: {name: text}


def option(flag: str, value: str | None) -> list[str]:
    """``--flag=value`` in one argument (a value starting with ``-`` stays a value)."""
    return [] if value is None else [f"{flag}={value}"]


class Start:
    """A start the service has already checked: every value here may be passed."""

    __slots__ = ("effort", "extra", "handoff", "model", "name", "permission_mode", "project",
                 "prompt", "session_id")

    def __init__(self, prompt: str, handoff: str, name: str | None = None,
                 model: str | None = None, effort: str | None = None,
                 permission_mode: str | None = None, session_id: str | None = None,
                 project: str | None = None, extra: tuple[str, ...] = ()) -> None:
        self.prompt = prompt
        self.handoff = handoff
        self.name = name
        self.model = model
        self.effort = effort
        self.permission_mode = permission_mode
        self.session_id = session_id
        self.project = project
        self.extra = extra  # per-session options mailslot adds (its own MCP server...)


class Opened:
    """A conversation a host's app opened (:meth:`Host.open_conversation`): its id, and
    the project it runs in with where that project came from (``parameter``, ``config``
    or ``sidecar``; ``None``: no project)."""

    __slots__ = ("conversation", "project", "project_source")

    def __init__(self, conversation: str, project: str | None = None,
                 project_source: str | None = None) -> None:
        self.conversation = conversation
        self.project = project
        self.project_source = project_source


class Plugin:
    """What a host's plugin holds: its manifest (in ``manifest_dir``), its MCP server,
    the command each hook event runs, and the marketplace file that lists it."""

    __slots__ = ("command", "manifest", "manifest_dir", "marketplace", "marketplace_path",
                 "server")

    def __init__(self, manifest_dir: str, manifest: dict[str, Any], server: dict[str, Any],
                 command: Callable[[str], str], marketplace_path: str,
                 marketplace: dict[str, Any]) -> None:
        self.manifest_dir = manifest_dir
        self.manifest = manifest
        self.server = server
        self.command = command
        self.marketplace_path = marketplace_path
        self.marketplace = marketplace


class Rung:
    """One step of a host's wake ladder (:attr:`Host.wake_ladder`): a wake method by
    name, the oldest version of the host's program it is known to work with, and
    whether the host's background waiter hook serves it."""

    __slots__ = ("grace", "method", "since", "waiter")

    def __init__(self, method: str, since: str | None = None, *, waiter: bool = False,
                 grace: float = 0.0) -> None:
        self.method = method
        self.since = since  # None: any version (then the program need not be found)
        self.waiter = waiter  # install registers the waiter (Host.wake_hook) with --hooks
        self.grace = grace  # seconds the waiter leaves new mail to the watcher's wake first

    def __repr__(self) -> str:
        return f"<rung {self.method}{f' >= {self.since}' if self.since else ''}>"


TERMINAL_LADDER = (Rung("tmux"), Rung("command"))
"""The wakes any host in a terminal has: its pane typed into, or your own program."""


class Host(SessionRecord):
    """One agent host. Subclasses set class attributes; the defaults are "it has none"."""

    name: ClassVar[str]
    """The host's name in every command (``mailslot install NAME``, ``hook NAME``...)."""
    title: ClassVar[str]
    """How people call it."""
    package: ClassVar[str | None] = None
    """Where it is published (for docs and the real-host tests), if anywhere."""

    # -- installing: mailslot install NAME ---------------------------------------------
    default_scope: ClassVar[Scope] = "project"
    mcp_path: ClassVar[dict[Scope, str]]
    """Its MCP settings file per scope: ``~/`` is the home folder, the rest are relative
    to the project (the git checkout holding the working folder, else that folder)."""
    mcp_format: ClassVar[Literal["json", "toml", "extension"]] = "json"
    """``extension``: no MCP client; mailslot writes one file of its own (:meth:`extension`)."""
    mcp_container: ClassVar[str] = "mcpServers"
    mcp_fields: ClassVar[dict[str, Any]] = {}
    """Fields of our server entry beside the command and its arguments."""
    hook_file: ClassVar[HookFile | None] = None
    install_notes: ClassVar[dict[Scope, tuple[str, ...]]] = {}
    also_runs: ClassVar[tuple[str, tuple[str, ...]] | None] = None
    """Another host whose hooks it runs too, and the settings files it runs them from
    (mail may then show twice)."""
    also_reads: ClassVar[tuple[str, ...]] = ()
    """Project files of other hosts it takes MCP servers and hooks from, as whichever
    agent they name: ``install`` warns when they name another agent."""
    install_wakes: ClassVar[dict[str, str]] = {}
    """``install`` flags that register a way of waking (``--wake``, ``--channel``) and the
    wake method each chooses in config.json."""
    wake_hook: ClassVar[str | None] = None
    """The ``mailslot hook NAME EVENT`` event of a background waiter registered with
    ``--wake``, if the host has one (:mod:`mailslot.frontends.hooks.wait`)."""
    waiter_exit: ClassVar[int] = 2
    """The exit status with which the waiter makes the host wake its session."""

    def waits(self, env: Mapping[str, str]) -> bool:
        """May a waiter wait in the session whose hook this is? (Not in a headless run
        the host would keep running while its background hooks wait.)"""
        return True

    def server_entry(self, command: str, args: list[str]) -> dict[str, Any]:
        """Our stdio server entry in the host's spelling."""
        return {**self.mcp_fields, "command": command, "args": args}

    def remote_entry(self, endpoint: str, secret_env: str) -> dict[str, Any] | None:
        """Our entry for a remote ``serve --http`` whose bearer secret is in the
        environment variable ``secret_env``; ``None``: the host documents no way to take
        a header from the environment (a secret is never written into its settings)."""
        return None

    def hook_handler(self, ours: str, command: str) -> dict[str, Any]:
        """One hook handler running ``command`` for our event ``ours``."""
        assert self.hook_file is not None
        handler: dict[str, Any] = {"type": "command", "command": command,
                                   "timeout": self.hook_file.timeout}
        return {"name": f"mailslot-{ours}", **handler} if self.hook_file.named else handler

    def extension(self, executable: str, tail: list[str], agent: str, *, hooks: bool,
                  wake: bool = False) -> str:
        """The whole file of an ``extension`` install (``wake``: with the host's waiter)."""
        raise NotImplementedError

    def extension_agent(self, before: str, where: str) -> str | None:
        """The agent an existing extension file is bound to; raises ``InvalidInput`` for
        a file mailslot did not write (it is never replaced)."""
        raise NotImplementedError

    def plugin(self, description: str) -> Plugin | None:
        """mailslot as this host's own plugin, for hosts that install plugins themselves
        (``None`` for the others): :mod:`mailslot.frontends.install.plugins` writes its files."""
        return None

    def install_advice(self, method: str) -> str:
        """What to tell a person after ``install`` chose the wake ``method``."""
        return ""

    # -- hooks: mailslot hook NAME EVENT -----------------------------------------------
    events: ClassVar[dict[str, str]] = {}
    """Our hook events for this host and the moment each serves."""
    outputs: ClassVar[dict[str, Callable[[str], Payload]]] = {}
    """The JSON that shows ``text`` to the model, per moment."""
    shows_at: ClassVar[frozenset[str]] = frozenset(MOMENTS)
    """The moments at which its hook output reaches the model (a prompt hook that cannot
    add context is left out: mail waits for a moment that can)."""
    session_fields: ClassVar[tuple[str, ...]] = ("session_id",)
    """Where its hook input holds the session id, first found wins."""
    lends_to: ClassVar[tuple[str, ...]] = ()
    """Hosts that also run this host's hook settings (then they call ``hook NAME ...``),
    in the order each is asked whether it is the caller (:meth:`runs_borrowed`)."""
    own_shapes: ClassVar[bool] = True
    """Running a borrowed hook, does it need its own output shapes (else the lender's)?"""

    def runs_borrowed(self, payload: Mapping[str, object], env: Mapping[str, str]) -> bool:
        """Is this host the one running a hook registered for a host it borrows from?"""
        return False

    def continuing(self, payload: Mapping[str, object]) -> bool:
        """Is the turn already going on because of a stop hook (or not one to extend)?"""
        return bool(payload.get("stop_hook_active"))

    def answer_note(self, tools: str, bridged: Sequence[str] = ()) -> str:
        """One line for hook text about mail: which tool answers it, when the host's
        model has a tool of its own that looks as if it might (``tools`` spells
        mailslot's, as :meth:`tools` gives it; ``bridged``: the agents a running bridge
        lists in that tool now, :meth:`bridged`). Empty: nothing to tell apart."""
        return ""

    def bridged(self, mailbox: str, env: Mapping[str, str]) -> list[str]:
        """The agents of ``mailbox`` a running bridge lists in this host's own
        messaging now (``[]``: none runs, or the host has none), for
        :meth:`answer_note`. Every hook asks, and a hook loads nothing of waking: a raw
        look for the bridge's mark in the host's registry first
        (:func:`~mailslot.core.durable.any_json_holds`), the bridge's checked read, which
        loads the socket machinery, only when a record carries it."""
        from ..core.durable import any_json_holds

        shapes = self.bridge()
        if shapes is None or not any_json_holds(shapes.registry(env),
                                                f'"{shapes.mark}"'.encode()):
            return []
        return sorted({a for a, _ in shapes.bridges(mailbox, env)})

    tool_names: ClassVar[str] = "{}"
    """How its model is shown mailslot's MCP tool ``TOOL``, ``{}`` standing for ``TOOL``
    (``mcp__mailslot__{}``: ``mcp__mailslot__reply``). Hook text names the tools so: a
    host that defers MCP tools shows its model only their names, and the model loads one
    by exactly that name (``ToolSearch`` with ``select:NAME``) before it can call it."""

    def tools(self, env: Mapping[str, str]) -> str:
        """:attr:`tool_names` for the hook running in ``env`` (a host may name a plugin's
        server's tools otherwise)."""
        return self.tool_names

    context_limit: ClassVar[int | None] = None
    """Injected text past this many characters is cut by the host (``None``: it
    documents no limit)."""


    channel: ClassVar[tuple[str, str] | None] = None
    """A channel into a running session: the experimental capability an MCP server
    declares and the notification it then sends (``serve --channel``)."""

    # -- identity -----------------------------------------------------------------------
    runtime: ClassVar[str | None] = None
    """How the host names itself as a runtime (``agent add --runtime``)."""

    # -- starting: mailslot start NAME ----------------------------------------------------
    program: ClassVar[str | None] = None
    """Its program's default name on PATH (``None``: mailslot cannot run it)."""
    program_paths: ClassVar[tuple[str, ...]] = ()
    """Where the host installs its program (``~`` is the home folder), for when it is
    not on PATH (:meth:`installed_program`)."""
    startable: ClassVar[bool] = False
    modes: ClassVar[tuple[str, ...]] = ()
    """Every permission mode it knows (empty: it takes none)."""
    default_allowed: ClassVar[tuple[str, ...]] = ()
    """Allowed when the owner's config lists none."""
    bypass: ClassVar[frozenset[str]] = frozenset()
    """Modes that skip its permission prompts: allowed only when the owner lists them."""
    default_mode: ClassVar[str | None] = None
    handoffs: ClassVar[tuple[str, ...]] = ("background", "tmux")
    efforts: ClassVar[tuple[str, ...]] = ()
    """The reasoning-effort levels its start flag documents (empty: it takes none)."""
    models: ClassVar[tuple[str, ...]] = ()
    """The only model names it documents, where it has a fixed list (empty: any name its
    own checks accept)."""
    default_names: ClassVar[bool] = False
    """A start without a name is given ``mailslot-<timestamp>``, so the session can be
    found by name in the host's own list (a resume picker, ``--resume NAME``)."""
    session_ids: ClassVar[bool] = False
    """True: mailslot chooses the session id (so wakes can target that session)."""
    takes_project: ClassVar[bool] = False
    """A start may name a project of the host's own (``--project``)."""
    takes_tools: ClassVar[bool] = False
    """The owner may list tools a started or woken run may use (``allow_tools``)."""
    wake_method: ClassVar[str | None] = None
    """The wake method that resumes a background session by its id, if any."""
    mode_flag: ClassVar[str] = "--permission-mode"
    continues: ClassVar[tuple[str, ...]] = ()
    """How it continues its latest session in a folder (empty: it cannot)."""
    start_env: ClassVar[dict[str, str]] = {}
    """Environment for a background start, unless the caller's already sets it."""

    def argv(self, executable: str, start: Start) -> list[str]:
        """The whole argv of a start, ``argv[0]`` being ``executable``."""
        raise NotImplementedError

    def continue_argv(self, executable: str, mode: str | None) -> list[str]:
        """Continue the latest session in the current folder (recovery)."""
        return [executable, *self.continues, *option(self.mode_flag, mode)]

    def refuse_folder(self, folder: str) -> str | None:
        """Why a session must not be started in ``folder`` (``None``: it may)."""
        return None

    def desktop_opener(self) -> list[str] | None:
        """How to hand a prompt to the host's desktop app here (``handoff desktop``)."""
        return None

    def desktop_link(self, prompt: str, folder: str) -> str:
        """The link that opens a new session in the desktop app, ``prompt`` prefilled."""
        raise NotImplementedError

    desktop_app: ClassVar[str | None] = None
    """The name of its desktop app, if it has one (``handoff desktop``)."""
    desktop_max_prompt: ClassVar[int | None] = None
    """The desktop app truncates a link's prompt past this many characters."""

    def valid_tool(self, pattern: str) -> bool:
        """Is ``pattern`` one of the host's tool patterns (see :attr:`takes_tools`)?"""
        return False

    hands_off: ClassVar[bool] = False
    """Its sessions run inside its own app: a start asks the app for a conversation
    (:meth:`open_conversation`) instead of running :meth:`argv`."""

    def open_conversation(self, executable: str, launch: Mapping[str, Any], start: Start,
                          env: Mapping[str, str], timeout: float, store_folder: str | None
                          ) -> Opened:
        """Start a conversation in the host's app (``store_folder``: the mailbox's
        folder, where a sidecar of the host leaves its credentials). Raises ``Failed``."""
        raise NotImplementedError

    def resolve_project(self, given: str, launch: Mapping[str, Any]) -> str:
        """The project id ``given`` names (see :attr:`takes_project`); raises
        ``InvalidInput`` for one unknown or ambiguous, before anything starts."""
        return given

    def refuse_start(self, project: str | None, launch: Mapping[str, Any],
                     store_folder: str | None, env: Mapping[str, str]) -> str | None:
        """Why a start (of ``project``, the id asked for, if any) cannot go ahead, found
        before anything runs; ``None``: nothing stands in its way here."""
        return None

    def installed_program(self, env: Mapping[str, str]) -> str | None:
        """Its program: the name, when it is on ``env``'s PATH, else the first of
        :attr:`program_paths` that is an executable file, else the name (whose absence
        the run then reports)."""
        import os
        import shutil

        if self.program is None or shutil.which(self.program,
                                                path=env.get("PATH", os.defpath)):
            return self.program
        for raw in self.program_paths:
            path = os.path.expanduser(raw)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
        return self.program

    # -- a sidecar the host's app runs (install NAME --sidecar, mailslot sidecar NAME) --
    sidecar: ClassVar[bool] = False
    """The host's app runs programs beside it (a sidecar) and hands them what reaches a
    running session; :meth:`sidecar_entries` registers mailslot's, :meth:`run_sidecar`
    is it."""

    def sidecar_entries(self, command: str, args: list[str]
                        ) -> list[tuple[str, Callable[[MutableMapping[str, Any]], None]]]:
        """The settings files (``~/``: the home folder) that register the sidecar
        ``command args`` and enable it, each with the edit of its JSON document."""
        return []

    def run_sidecar(self, folder: str, env: Mapping[str, str]) -> int:
        """Be the sidecar for the mailbox at ``folder`` until the app ends it; the exit
        status."""
        raise NotImplementedError

    def started_wake(self, session_id: str, folder: str, launch: Mapping[str, Any],
                     project: str | None, tools: Sequence[str]) -> dict[str, Any]:
        """The config.json entry that wakes a session ``mailslot start`` began."""
        entry: dict[str, Any] = {"wake_on_mail": True, "wake_method": self.wake_method,
                                 "session_id": session_id, "cwd": folder}
        if self.own_servers:
            entry["own_server"] = True  # a woken turn speaks as the registered name too
        if self.takes_tools and tools:
            entry["allow_tools"] = list(tools)  # the host keeps no approvals between runs
        return entry

    # -- one run's own MCP server (start --register-as, a woken turn) -----------------
    own_servers: ClassVar[bool] = False
    """One run of it can be given its own ``mailslot`` server (:meth:`session_server`)."""

    def session_server(self, command: str, args: list[str], *,
                       url_store: bool) -> list[str] | None:
        """Arguments giving one run its own ``mailslot`` server (``None``: the host has
        no per-run means). ``url_store``: the mailbox is a server URL, passed to the
        server in ``MAILSLOT_STORE`` rather than as an argument."""
        return None

    def speaks_as_another(self, folder: str, agent: str) -> str | None:
        """Why a session in ``folder`` would not speak as ``agent`` although it was
        started as it (``None``: it would)."""
        return None

    # -- waking ---------------------------------------------------------------------------
    def wake_methods(self) -> Sequence[type]:
        """The wake methods this host brings (``wake_method`` in config.json): the
        ``METHODS`` of its ``wake`` part (``hosts/NAME/wake.py``), subclasses of
        :class:`mailslot.wake.methods.WakeMethod`, which the wake package checks. Empty:
        the host brings none (a module, or a package without that part).

        The part is loaded only now (:mod:`mailslot.wake.methods_by_name` asks once per
        process), so a hook, which loads the host's facts, never loads the wake
        machinery its methods are built on."""
        part = self.part("wake")
        return () if part is None else tuple(part.METHODS)

    def bridge(self) -> Any:
        """The host's own messaging between its sessions, if mailslot's agents can join
        it as targets (``mailslot bridge HOST``; :mod:`mailslot.frontends.bridge_server`
        says what the object answers): made by ``bridge()`` of the host's part
        ``bridge`` (``hosts/NAME/bridge.py``), loaded only now. ``None``: the host has
        none (the registry's ``BRIDGED`` lists those that do)."""
        part = self.part("bridge")
        return None if part is None else part.bridge()

    def part(self, name: str) -> Any:
        """The part ``name`` of this host's package (``hosts/NAME/name.py``, one of
        :data:`PARTS`), loaded on first use by its name, or ``None`` when the host has
        none. How a host's parts that a hook never needs (its wake methods, its bridge)
        are loaded: by name at run time, so the host's facts import none of them."""
        import sys

        if name not in PARTS:
            raise ValueError(f"{name!r} is not a part a host may have (one of {PARTS})")
        module = f"{ADAPTERS}.{self.name}.{name}"
        found = sys.modules.get(module)
        if found is None:
            try:
                __import__(module)
            except ModuleNotFoundError as exc:
                if exc.name in (module, f"{ADAPTERS}.{self.name}"):
                    return None
                raise
            found = sys.modules[module]
        return found

    wake_ladder: ClassVar[tuple[Rung, ...]] = TERMINAL_LADDER
    """The wakes ``install --wake`` tries for this host, best first: the first whose
    probe passes is chosen (docs/wake.md). A host names every step it takes, the
    host-independent ``tmux`` and ``command`` included; an empty ladder: it cannot be
    woken (:attr:`unreachable` says why)."""
    @property
    def waiter_rungs(self) -> tuple[Rung, ...]:
        """The ladder's steps its background waiter (:attr:`wake_hook`) serves: a wake
        of its own, or the fallback of a wake the watcher tries first (``grace``)."""
        return tuple(r for r in self.wake_ladder if r.waiter)

    @property
    def waiter_methods(self) -> tuple[str, ...]:
        """The wake methods whose choice makes ``install`` register the waiter."""
        return tuple(r.method for r in self.waiter_rungs)

    unreachable: ClassVar[str] = "it has no way in from outside"
    """Why no wake is possible, when the ladder is empty."""
    version_args: ClassVar[tuple[str, ...]] = ("--version",)
    """The arguments that make its program print its version."""

    # -- the environment of a program run for it -------------------------------------------
    program_env: ClassVar[tuple[str, ...]] = ()
    """The environment variables its program reads that a woken run needs from the
    watcher's: its keys, endpoints, settings and config folder (``NAME_*`` is a prefix).
    A woken program gets these, what every program needs and its own identity, and
    nothing else of the watcher's environment (:mod:`mailslot.wake.environment`)."""
    markers: ClassVar[tuple[str, ...]] = ()
    """The variables it sets in the programs it runs (hooks, MCP servers, its tools) to
    say they run inside it: never handed to a woken program or a started session, even
    where a :attr:`program_env` prefix matches."""

    # -- permissions ----------------------------------------------------------------------
    bypass_flags: ClassVar[frozenset[str]] = frozenset()
    """Flags of its program that skip its permission prompts: never passed by mailslot."""
    bypass_values: ClassVar[dict[str, frozenset[str]]] = {}
    """Options whose listed values skip its prompts (``--sandbox danger-full-access``)."""
    settings_flags: ClassVar[frozenset[str]] = frozenset()
    """Options that override one of its settings for a run (``-c KEY=VALUE``)."""
    bypass_settings: ClassVar[tuple[str, ...]] = ()
    """Settings such an override must not touch."""
    settings_args: ClassVar[frozenset[str]] = frozenset()
    """Options that take a whole settings object for a run: inline JSON, or the path of
    a JSON file (``--settings``)."""
    settings_bypass: ClassVar[dict[str, frozenset[str]]] = {}
    """Where in such a settings object a value skips its prompts (a dotted path) and
    which values do (``permissions.defaultMode``: ``bypassPermissions``)."""

    def __repr__(self) -> str:
        return f"<host {self.name}>"
