"""Antigravity (Google's agent IDE): everything mailslot knows about it.

Antigravity reads MCP servers from ``mcp_config.json`` (it does not document the file's
location; docs/hosts.md says what was found) and has no command hooks. Its conversations
run inside the app: mailslot reaches one through its ``agentapi`` program. Antigravity
documents neither ``agentapi`` nor its language server, so mailslot keeps to the contract
every public user of it shows (docs/hosts.md names them and says what is unproven)::

    agentapi new-conversation [--model=TIER] [--title=TITLE] -- PROMPT
    agentapi send-message CONVERSATION_ID NOTICE

with the running language server's address, its CSRF token and the project id in the
child's environment only (``ANTIGRAVITY_LS_ADDRESS``, ``ANTIGRAVITY_CSRF_TOKEN``,
``ANTIGRAVITY_PROJECT_ID``); it answers in JSON on standard output
(``{"response": {"newConversation": {"conversationId": ID}}}``, or ``{"error": TEXT}``).

The address and token change at every launch of the app. Antigravity hands them to the
programs it runs beside itself (its sidecars): ``install antigravity --sidecar``
registers ``mailslot sidecar antigravity``, which writes them, with its pid and the
project id, into the mailbox (``sidecars/antigravity.json``, 0600, atomically) and
removes the file when the app ends it. A wake or start reads that file (or the owner's
``credentials_file``) and refuses it unless it is a regular file owned by this user, its
writer (``pid``) is still running and started before the file was written, and the
address is on this machine; a missing or stale file skips the wake (the mail waits in
the inbox). The token never reaches an argv, an outcome, the log or ``watch --validate``.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys

from ..core.errors import InvalidInput
from ..host_registry.host import Failed, Host, Opened, Rung, Start, option

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, MutableMapping, Sequence
    from pathlib import Path
    from typing import Any


ADDRESS_ENV = "ANTIGRAVITY_LS_ADDRESS"
TOKEN_ENV = "ANTIGRAVITY_CSRF_TOKEN"
PROJECT_ENV = "ANTIGRAVITY_PROJECT_ID"
SIDECAR_FILE = os.path.join("sidecars", "antigravity.json")
"""Where in the mailbox folder the sidecar leaves the session's credentials."""
PROJECTS = "~/.gemini/config/projects"
"""Antigravity's project registry: one JSON file per project (``launch.antigravity.
projects_dir`` names another folder)."""
SIDECAR_NAME = "mailslot"
SIDECARS = "~/.gemini/config/sidecars"
SWITCHES = "~/.gemini/config/config.json"
"""A sidecar runs only once it is enabled here (``sidecars.NAME.enabled``)."""
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_PARENT_POLL = 5.0  # seconds between the sidecar's looks at whether the app still runs


class Credentials:
    """The session's address and token, from a file whose writer still runs (or the
    environment Antigravity gave this process), and the project id its writer was given
    (if any); ``source`` says which (``sidecar``, ``environment``)."""

    def __init__(self, address: str, token: str, project: str | None,
                 source: str = "sidecar") -> None:
        self.address = address
        self._token = token
        self.project = project
        self.source = source

    def __repr__(self) -> str:  # never show the token, even in a traceback
        return f"Credentials(address={self.address!r}, token=<hidden>)"

    @property
    def token(self) -> str:
        return self._token


class Unusable:
    """Why credentials cannot be used (never holding the token); ``gone``: there is no
    running session to reach (the file is missing, or its writer no longer runs)."""

    def __init__(self, reason: str, *, gone: bool = False) -> None:
        self.reason = reason
        self.gone = gone


def _loopback(address: str) -> bool:
    """Is ``address`` (``http(s)://HOST:PORT`` or ``HOST:PORT``) on this machine?"""
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"//{address}")
    if parts.scheme not in ("", "http", "https"):
        return False
    try:
        return parts.hostname in _LOOPBACK and parts.port is not None
    except ValueError:  # a port that is not a number
        return False


def read_credentials(path: Path) -> Credentials | Unusable:
    """The credentials, or why they cannot be used."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO must not hang us
    except FileNotFoundError:
        return Unusable(f"credentials file {path} does not exist (is Antigravity running "
                        "with mailslot's sidecar?)", gone=True)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return Unusable(f"credentials file {path} is a symlink; not followed")
        return Unusable(f"credentials file {path} cannot be read ({exc.strerror})")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            return Unusable(f"credentials file {path} is not a regular file owned by you")
        with os.fdopen(os.dup(fd), "rb") as handle:
            raw = handle.read(65536)
    finally:
        os.close(fd)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return Unusable(f"credentials file {path} is not valid JSON")
    if not isinstance(data, dict):
        return Unusable(f"credentials file {path} must hold a JSON object")
    address, token, pid = data.get("address"), data.get("token"), data.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return Unusable(f"credentials file {path} has no writer pid")
    stale = Unusable(f"the session that wrote {path} (pid {pid}) is no longer running",
                     gone=True)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return stale
    except PermissionError:
        return Unusable(f"the process that wrote {path} (pid {pid}) is not yours")
    from ..core.processes import started_after

    if started_after(pid, info.st_mtime):
        return stale
    if not isinstance(address, str) or not _loopback(address):
        return Unusable(f"credentials file {path} has no address on this machine; refused")
    if not isinstance(token, str) or not token or any(c in token for c in "\x00\r\n"):
        return Unusable(f"credentials file {path} has no usable token")
    project = data.get("project_id")
    return Credentials(address, token,
                       project if isinstance(project, str) and _ID.fullmatch(project) else None)


def own_credentials(env: Mapping[str, str]) -> Credentials | Unusable | None:
    """The session's address, token and project from the environment Antigravity gives
    the programs it runs (a sidecar, its agent's terminal, an MCP server it started);
    ``None`` where it gave none."""
    address, token = env.get(ADDRESS_ENV, ""), env.get(TOKEN_ENV, "")
    if not address and not token:
        return None
    if not address or not token:
        return Unusable(f"{ADDRESS_ENV} and {TOKEN_ENV} come together from Antigravity; "
                        "only one is set here")
    if not _loopback(address):
        return Unusable(f"{ADDRESS_ENV} is not an address on this machine; refused")
    if any(c in token for c in "\x00\r\n"):
        return Unusable(f"{TOKEN_ENV} is not a usable token")
    project = env.get(PROJECT_ENV)
    return Credentials(address, token, project if project and _ID.fullmatch(project)
                       else None, "environment")


def session_credentials(launch: Mapping[str, Any], store_folder: str | None,
                        env: Mapping[str, str]) -> Credentials | Unusable:
    """A start's way in: the owner's ``credentials_file``, else the session that runs
    this process (its ``ANTIGRAVITY_*`` environment), else the sidecar's file."""
    if not launch.get("credentials_file"):
        own = own_credentials(env)
        if own is not None:
            return own
    path = credentials_path(launch, store_folder)
    return path if isinstance(path, Unusable) else read_credentials(path)


def credentials_path(launch: Mapping[str, Any], store_folder: str | None) -> Path | Unusable:
    """The owner's ``credentials_file``, else the sidecar's file in the mailbox."""
    from pathlib import Path

    raw = launch.get("credentials_file")
    if isinstance(raw, str) and raw:
        return Path(raw).expanduser()
    if store_folder is None:
        return Unusable("the mailbox is not a folder, so no sidecar writes into it: set "
                        "launch.antigravity.credentials_file in config.json")
    return Path(store_folder) / SIDECAR_FILE


def agentapi_env(found: Credentials, project: str | None) -> dict[str, str]:
    """What ``agentapi`` reads from its environment (the token only ever here)."""
    env = {ADDRESS_ENV: found.address, TOKEN_ENV: found.token}
    return {**env, PROJECT_ENV: project} if project else env


def without_own(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without any ``ANTIGRAVITY_*`` variable: ``agentapi`` gets exactly the
    session, token and project mailslot chose, nothing of the caller's own session."""
    return {k: v for k, v in env.items() if not k.startswith("ANTIGRAVITY_")}


def agentapi_error(stdout: bytes) -> str | None:
    """The error ``agentapi`` printed (its JSON ``error``), if it printed one."""
    try:
        data = json.loads(stdout.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    error = data.get("error") if isinstance(data, dict) else None
    return str(error) if error else None


# The sidecar ----------------------------------------------------------------------------
def write_private(path: str, data: Mapping[str, Any]) -> None:
    """``data`` as ``path``, whole or not at all: a 0600 file beside it, synced, renamed
    over it, the folder synced (a reader never sees half a file)."""
    from ..core.durable import fsync_dir, make_folders, replace_file

    folder = os.path.dirname(path)
    make_folders(folder)  # a mailbox not made yet is made 0700, as every mailbox is
    replace_file(path, json.dumps(data))
    fsync_dir(folder)


def _remove_if_mine(path: str) -> None:
    """Remove the credentials file if this process wrote it (a newer sidecar's stays)."""
    from pathlib import Path

    from ..core.durable import read_file
    from ..core.errors import UnsafePath

    try:
        mine = json.loads(read_file(path, 1 << 16)).get("pid") == os.getpid()
    except (OSError, ValueError, AttributeError, UnsafePath):
        return
    if mine:
        Path(path).unlink(missing_ok=True)


# Antigravity's project registry -------------------------------------------------------------
class Project:
    """One project of the registry: its id, name and folders."""

    def __init__(self, project_id: str, name: str, folders: list[str]) -> None:
        self.id = project_id
        self.name = name
        self.folders = folders


def _folders(doc: Mapping[str, Any]) -> list[str]:
    from urllib.parse import unquote

    resources = doc.get("projectResources")
    found = []
    for item in resources.get("resources", []) if isinstance(resources, dict) else []:
        if not isinstance(item, dict):
            continue
        uris = [item.get("folderUri"), *(item.get(k, {}).get("folderUri")
                                         for k in ("gitFolder", "folder")
                                         if isinstance(item.get(k), dict))]
        found += [os.path.realpath(unquote(u[len("file://"):])) for u in uris
                  if isinstance(u, str) and u.startswith("file:///")]
    return found


def projects(folder: Path) -> list[Project]:
    """Every project the registry at ``folder`` holds (files that do not parse skipped)."""
    found = []
    try:
        names = sorted(p for p in os.listdir(folder) if p.endswith(".json"))
    except OSError:
        return []
    for name in names:
        try:
            with open(folder / name, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict):
            continue
        pid = doc.get("id", name[:-len(".json")])
        if isinstance(pid, str) and _ID.fullmatch(pid):
            found.append(Project(pid, str(doc.get("name", "")), _folders(doc)))
    return found


def _project_source(given: str | None, launch: Mapping[str, Any],
                    found: Credentials, first: str) -> tuple[str | None, str | None]:
    """The project id and where it came from: ``given`` (a parameter, or the woken
    agent's own), the config's ``launch.antigravity.project_id``, the session's (the
    sidecar's file, or this process's environment)."""
    configured = launch.get("project_id")
    for value, source in ((given, first), (configured, "config"),
                          (found.project, found.source)):
        if isinstance(value, str) and value:
            return value, source
    return None, None


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
    program_paths = ("~/.gemini/antigravity/bin/agentapi",)  # where the app installs it
    startable = True
    handoffs = ("background",)  # the conversation runs inside Antigravity
    hands_off = True
    takes_project = True
    models = ("flash_lite", "flash", "pro")
    """The tiers ``agentapi new-conversation --model`` takes (its help, as its public users
    quote it; docs/hosts.md)."""
    sidecar = True
    wake_method = "agentapi"
    wake_ladder = (Rung("agentapi"), Rung("command"))
    """Its conversations run inside the app (no pane to type into): agentapi, with the
    conversation ``mailslot start antigravity`` wrote and the sidecar's credentials."""

    def argv(self, executable: str, start: Start) -> list[str]:
        return [executable, "new-conversation", *option("--model", start.model),
                *option("--title", start.name), "--", start.prompt]

    def resolve_project(self, given: str, launch: Mapping[str, Any]) -> str:
        """An exact project name, a project id, or the absolute path of a project's
        folder, looked up (read only) in Antigravity's project registry."""
        from pathlib import Path

        if not given or len(given) > 4096 or not given.isprintable():
            raise InvalidInput("project must be a project's name or the absolute path of its "
                               "folder")
        raw = launch.get("projects_dir")
        where = Path(raw if isinstance(raw, str) and raw else PROJECTS).expanduser()
        known = projects(where)
        if os.path.isabs(given):
            real = os.path.realpath(given)
            found = [p for p in known if real in p.folders]
        else:
            found = [p for p in known if given in (p.id, p.name)]
        if not found:
            raise InvalidInput(f"project {given!r} is not in Antigravity's project registry "
                               f"({where}); open it in Antigravity once, or give its exact "
                               "name or folder")
        if len(found) > 1:
            ids = ", ".join(p.id for p in found)
            raise InvalidInput(f"project {given!r} is ambiguous: projects {ids} match; give "
                               "the other name or folder")
        return found[0].id

    def refuse_start(self, project: str | None, launch: Mapping[str, Any],
                     store_folder: str | None, env: Mapping[str, str]) -> str | None:
        """``agentapi new-conversation`` needs a project id (it answers "project_id is
        required" without one): a start that has none anywhere is refused before
        anything runs. Credentials that cannot be used are the run's to report."""
        found = session_credentials(launch, store_folder, env)
        if isinstance(found, Unusable) or _project_source(project, launch, found,
                                                          "parameter")[0] is not None:
            return None
        return ("no Antigravity project id for the new conversation: give project (a "
                "project's name or folder), set launch.antigravity.project_id, or start "
                f"from where Antigravity sets {PROJECT_ENV}; nothing was started")

    def open_conversation(self, executable: str, launch: Mapping[str, Any], start: Start,
                          env: Mapping[str, str], timeout: float, store_folder: str | None
                          ) -> Opened:
        """``agentapi new-conversation``: the token in its environment only; it prints
        the new conversation's id in JSON."""
        import subprocess

        found = session_credentials(launch, store_folder, env)
        if isinstance(found, Unusable):
            raise Failed(found.reason)
        project, source = _project_source(start.project, launch, found, "parameter")
        child = {**without_own(env), **agentapi_env(found, project)}
        try:
            done = subprocess.run(self.argv(executable, start), env=child,
                                  stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=timeout, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise Failed(f"agentapi could not be run ({type(exc).__name__})") from None
        conversation = _conversation_of(done.stdout)
        if done.returncode != 0 or conversation is None:
            from ..wake.process import said_of

            error = agentapi_error(done.stdout)
            said = (said_of("error", error.encode(), child) if error
                    else said_of("stdout", done.stdout, child))
            raise Failed(f"agentapi new-conversation failed (exit status {done.returncode})"
                         + said + said_of("stderr", done.stderr, child))
        return Opened(conversation, project, source)

    def started_wake(self, session_id: str, folder: str, launch: Mapping[str, Any],
                     project: str | None, tools: Sequence[str]) -> dict[str, Any]:
        entry: dict[str, Any] = {"wake_on_mail": True, "wake_method": self.wake_method,
                                 "conversation_id": session_id}
        if launch.get("credentials_file"):
            entry["credentials_file"] = launch["credentials_file"]
        if project is not None:
            entry["project_id"] = project
        return entry

    def sidecar_entries(self, command: str, args: list[str]
                        ) -> list[tuple[str, Callable[[MutableMapping[str, Any]], None]]]:
        """``sidecars/mailslot/sidecar.json`` (restarted when it fails), enabled in
        Antigravity's ``config.json`` (a sidecar is off until it is)."""

        def define(doc: MutableMapping[str, Any]) -> None:
            doc.clear()
            doc.update({"command": command, "args": args, "restart_policy": "on-failure"})

        def enable(doc: MutableMapping[str, Any]) -> None:
            sidecars = doc.setdefault("sidecars", {})
            if not isinstance(sidecars, dict):
                raise InvalidInput(f"{SWITCHES}: sidecars must be a JSON object; nothing "
                                   "was changed")
            mine = sidecars.setdefault(SIDECAR_NAME, {})
            if not isinstance(mine, dict):
                raise InvalidInput(f"{SWITCHES}: sidecars.{SIDECAR_NAME} must be a JSON "
                                   "object; nothing was changed")
            mine["enabled"] = True

        return [(f"{SIDECARS}/{SIDECAR_NAME}/sidecar.json", define), (SWITCHES, enable)]

    def run_sidecar(self, folder: str, env: Mapping[str, str]) -> int:
        """Write what Antigravity handed this sidecar into the mailbox, then wait until
        Antigravity ends it (a signal, or the app that started it gone), and remove it."""
        import signal
        import threading
        from datetime import datetime

        address, token = env.get(ADDRESS_ENV, ""), env.get(TOKEN_ENV, "")
        if not address or not token:
            print(f"mailslot: {ADDRESS_ENV} and {TOKEN_ENV} are not set: run this only as "
                  "Antigravity's sidecar (mailslot install antigravity --sidecar)",
                  file=sys.stderr)
            return 1
        if not _loopback(address):
            print(f"mailslot: {ADDRESS_ENV} is not an address on this machine; refused",
                  file=sys.stderr)
            return 1
        project = env.get(PROJECT_ENV)
        path = os.path.join(folder, SIDECAR_FILE)
        ended = threading.Event()
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, lambda *_: ended.set())
        parent = os.getppid()
        write_private(path, {"address": address, "token": token, "pid": os.getpid(),
                             "project_id": project if project and _ID.fullmatch(project)
                             else None,
                             "written": datetime.now().astimezone().isoformat()})
        print(f"mailslot: the session's credentials are in {path}", file=sys.stderr)
        try:
            while not ended.wait(_PARENT_POLL):
                if os.getppid() != parent:  # Antigravity is gone: so is its session
                    break
        finally:
            _remove_if_mine(path)
        return 0

    def wake_methods(self) -> Sequence[type]:
        return _wake_methods()


def _conversation_of(stdout: bytes) -> str | None:
    """The new conversation's id from ``agentapi new-conversation``'s JSON."""
    try:
        data = json.loads(stdout.decode("utf-8"))
        found = data["response"]["newConversation"]["conversationId"]
    except (ValueError, UnicodeDecodeError, KeyError, TypeError):
        return None
    return found if isinstance(found, str) and _ID.fullmatch(found) else None


def _wake_methods() -> list[type]:
    """Built on first use, so that a hook, which needs only the facts above, never
    loads the wake machinery."""
    from pathlib import Path

    from ..wake.methods import (
        SESSION_ID,
        ArgvMethod,
        Field,
        Job,
        Outcome,
        child_env,
        text_field,
    )
    from ..wake.process import Spawn, said_of

    class AgentApiMethod(ArgvMethod):
        name = "agentapi"
        summary = "sends the notice into an Antigravity conversation with `agentapi send-message`"
        needs = ("`agentapi` on the watcher's PATH, or Antigravity's own "
                 "~/.gemini/antigravity/bin/agentapi (or `executable`)",
                 "the credentials mailslot's sidecar writes into the mailbox "
                 "(`install antigravity --sidecar`), or a `credentials_file`",
                 "`conversation_id` (and `project_id` where the session uses one)")
        limits = (
            "undocumented by Antigravity: mailslot's contract is in docs/wake.md; check it "
            "against your install or point `executable` at a wrapper",
            "skipped (the mail waits in the inbox) while no sidecar's session runs",
        )
        fields = (
            Field("conversation_id", "the conversation (cascade) to send the notice to"),
            Field("credentials_file", "JSON file with address, token and the writer's pid "
                  "(default: the sidecar's, in the mailbox)", required=False),
            Field("project_id", "the project the conversation belongs to (default: "
                  "launch.antigravity.project_id, then the sidecar's)", required=False),
            Field("executable", "the agentapi program (default: `agentapi` on PATH, else "
                  "~/.gemini/antigravity/bin/agentapi)", required=False),
        )
        secret_env = (TOKEN_ENV,)
        reads_stdout = True

        def __init__(self, agent: str, conversation: str, project: str | None,
                     credentials: str | None, executable: str) -> None:
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
            credentials = text_field(agent, cfg, "credentials_file", required=False)
            executable = (text_field(agent, cfg, "executable", required=False)
                          or str(HOST.installed_program(os.environ)))
            return cls(agent, str(conversation), project, credentials, executable)

        def argv(self, job: Job) -> list[str]:
            return [self.executable, "send-message", self.conversation, job.notice]

        def _launch(self, job: Job) -> Mapping[str, Any]:
            launch = job.store.load_config().get("launch")
            entry = launch.get(HOST.name) if isinstance(launch, dict) else None
            own = {"credentials_file": self.credentials} if self.credentials else {}
            return {**(entry if isinstance(entry, dict) else {}), **own}

        def spawn(self, job: Job) -> Spawn | Outcome:
            launch = self._launch(job)
            path = credentials_path(launch, job.store.folder)
            found = path if isinstance(path, Unusable) else read_credentials(path)
            if isinstance(found, Unusable):
                if found.gone:
                    return Outcome(False, f"{found.reason}; the message waits in the inbox",
                                   retry=False, skip=True)
                return Outcome(False, found.reason)
            project, _ = _project_source(self.project, launch, found, "agent")
            return Spawn(self.argv(job), {**child_env(job), **agentapi_env(found, project)})

        def answered(self, stdout: bytes, env: Mapping[str, str]) -> str | None:
            error = agentapi_error(stdout)
            if error is None:
                return None
            return "agentapi send-message answered" + said_of("error", error.encode(), env)

        def probe(self) -> list[str]:
            problems = super().probe()
            if self.credentials:
                found = read_credentials(Path(self.credentials).expanduser())
                problems += [found.reason] if isinstance(found, Unusable) else []
            return problems

    return [AgentApiMethod]


HOST = Antigravity()
