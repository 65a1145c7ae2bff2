"""``mailslot watch --service install|remove|status``: the watcher as a login service.

For always-on machines: a systemd user unit on Linux
(``~/.config/systemd/user/mailslot-watch-<hash>.service``, enabled with ``systemctl
--user enable --now`` when a user manager runs) and a launchd agent on macOS
(``~/Library/LaunchAgents/org.mailslot.watch.<hash>.plist``, ``launchctl bootstrap``).
``<hash>`` is of the store's location, so each mailbox has its own unit. The unit runs
``python -m mailslot [--dir FOLDER] watch --started service``, told the store as every
process mailslot starts is (:func:`mailslot.backends.handed_over`); it holds the
same lock as any watcher (:mod:`mailslot.mail.watchers`), so no on-demand watcher starts
beside it.

Every word of the unit built from the interpreter's path or the store's location is
quoted for the unit's own format (systemd: double quotes, ``\\`` escapes, ``%%`` for
``%`` and ``$$`` for ``$``; launchd: XML by :mod:`plistlib`). What neither format can
carry (a newline or another control character) is refused in one line, nothing written.
"""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
import sys
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from ...backends import handed_over
from ...core.errors import InvalidInput, StoreError
from ...mail.watchers import SERVICE, base_path, record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from ...store import Store

ACTIONS = ("install", "remove", "status")
_TIMEOUT = 30


@dataclass(frozen=True)
class ServiceReport:
    """What ``watch --service`` did or found, for people and ``--json``."""

    action: str
    kind: str  # "systemd" or "launchd"
    path: str
    installed: bool
    lines: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return {"action": self.action, "kind": self.kind, "path": self.path,
                "installed": self.installed, "notes": self.lines}


def name_for(location: str) -> str:
    import hashlib

    return hashlib.sha256(location.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _expressible(what: str, value: str) -> str:
    """``value`` if a unit file can hold it; refused otherwise (nothing is written)."""
    if any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise InvalidInput(f"{what} holds a newline or control character, which a service "
                           f"file cannot express: {value!r}")
    return value


def systemd_word(value: str) -> str:
    """One word for ``ExecStart=`` or ``Environment=``: double-quoted, ``\\`` and ``"``
    escaped, ``%`` as ``%%`` (a specifier otherwise) and ``$`` as ``$$`` (a variable
    otherwise; ``Environment=`` does not expand it, so ``$`` is doubled in argv only)."""
    text = value.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    return f'"{text}"'


def systemd_unit(argv: Sequence[str], env: Mapping[str, str], location: str) -> str:
    for word in argv:
        _expressible("the watcher's command", word)
    for key, value in env.items():
        _expressible(f"${key}", value)
    exec_start = " ".join(systemd_word(w).replace("$", "$$") for w in argv)
    environment = "\n".join(f"Environment={systemd_word(f'{k}={v}')}" for k, v in env.items())
    described = _expressible("the store's location", location).replace("%", "%%")
    return (f"[Unit]\nDescription=mailslot watcher for {described}\n\n"
            "[Service]\nType=simple\n"
            f"{environment}\nExecStart={exec_start}\nWorkingDirectory=%h\n"
            "Restart=on-failure\nRestartSec=5\n\n"
            "[Install]\nWantedBy=default.target\n")


def launchd_plist(label: str, argv: Sequence[str], env: Mapping[str, str],
                  log: str) -> bytes:
    for word in [*argv, *env.values(), log]:
        _expressible("the watcher's command", word)
    return plistlib.dumps({"Label": label, "ProgramArguments": list(argv),
                           "EnvironmentVariables": dict(env), "RunAtLoad": True,
                           "KeepAlive": {"SuccessfulExit": False},
                           "StandardOutPath": log, "StandardErrorPath": log,
                           "WorkingDirectory": os.path.expanduser("~")})


class _Service(ABC):
    """One platform's unit: where it goes, what it holds, how it is started."""

    kind: str

    def __init__(self, store: Store, env: Mapping[str, str]) -> None:
        self.store, self.env = store, env
        self.key = name_for(store.location)

    @property
    @abstractmethod
    def path(self) -> str:
        """Where the unit file goes."""

    @abstractmethod
    def content(self) -> bytes:
        """The unit file; refuses (:class:`InvalidInput`) what it cannot express."""

    @abstractmethod
    def enable(self) -> list[str]:
        """Start it now and at every login; what happened, a line each."""

    @abstractmethod
    def disable(self) -> list[str]:
        """Stop it and keep it from starting again."""

    @abstractmethod
    def state(self) -> list[str]:
        """What the service manager says of it."""

    def child_env(self) -> dict[str, str]:
        """The unit's environment: the store as :func:`handed_over` names it (a
        database's whole address: the unit file is 0600), and this ``PATH``."""
        return {**handed_over(self.store)[1],
                **({"PATH": self.env["PATH"]} if "PATH" in self.env else {})}

    def argv(self) -> list[str]:
        """``python -m mailslot [--dir FOLDER] watch --started service``."""
        return [sys.executable, "-m", "mailslot", *handed_over(self.store)[0], "watch",
                "--started", SERVICE]


def _run(argv: Sequence[str]) -> tuple[bool, str]:
    """Run a service manager's command; whether it worked and its last words."""
    if shutil.which(argv[0]) is None:
        return False, f"{argv[0]} was not found"
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=_TIMEOUT,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{argv[0]} failed ({type(exc).__name__})"
    said = (done.stderr or done.stdout).strip().splitlines()
    return done.returncode == 0, said[-1] if said else f"exit status {done.returncode}"


class _Systemd(_Service):
    kind = "systemd"

    @property
    def unit(self) -> str:
        return f"mailslot-watch-{self.key}.service"

    @property
    def path(self) -> str:
        config = self.env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"),
                                                                 ".config")
        return os.path.join(config, "systemd", "user", self.unit)

    def content(self) -> bytes:
        return systemd_unit(self.argv(), self.child_env(), self.store.location).encode()

    def _running(self) -> bool:
        return _run(["systemctl", "--user", "show-environment"])[0]

    def enable(self) -> list[str]:
        if not self._running():
            return [f"systemd is not running for this user here: the unit is written; "
                    f"where it runs, `systemctl --user enable --now {self.unit}`"]
        _run(["systemctl", "--user", "daemon-reload"])
        ok, said = _run(["systemctl", "--user", "enable", "--now", self.unit])
        return [f"enabled and started {self.unit}" if ok
                else f"systemctl --user enable --now {self.unit} failed: {said}"]

    def disable(self) -> list[str]:
        if not self._running():
            return ["systemd is not running for this user here: nothing to stop"]
        ok, said = _run(["systemctl", "--user", "disable", "--now", self.unit])
        _run(["systemctl", "--user", "daemon-reload"])
        return [f"stopped and disabled {self.unit}" if ok
                else f"systemctl --user disable --now {self.unit} failed: {said}"]

    def state(self) -> list[str]:
        if not self._running():
            return ["systemd is not running for this user here"]
        active = _run(["systemctl", "--user", "is-active", self.unit])[1]
        enabled = _run(["systemctl", "--user", "is-enabled", self.unit])[1]
        return [f"{self.unit}: {enabled}, {active}"]


class _Launchd(_Service):
    kind = "launchd"

    @property
    def label(self) -> str:
        return f"org.mailslot.watch.{self.key}"

    @property
    def path(self) -> str:
        return os.path.join(os.path.expanduser("~"), "Library", "LaunchAgents",
                            f"{self.label}.plist")

    def content(self) -> bytes:
        log = base_path(self.store, self.env) + ".service.log"
        plist = launchd_plist(self.label, self.argv(), self.child_env(), log)
        os.makedirs(os.path.dirname(log), mode=0o700, exist_ok=True)  # launchd makes none
        return plist

    def _domain(self) -> str:
        return f"gui/{os.getuid()}"

    def enable(self) -> list[str]:
        ok, said = _run(["launchctl", "bootstrap", self._domain(), self.path])
        return [f"loaded {self.label}" if ok else f"launchctl bootstrap failed: {said}"]

    def disable(self) -> list[str]:
        ok, said = _run(["launchctl", "bootout", self._domain(), self.path])
        return [f"unloaded {self.label}" if ok else f"launchctl bootout failed: {said}"]

    def state(self) -> list[str]:
        ok, _ = _run(["launchctl", "print", f"{self._domain()}/{self.label}"])
        return [f"{self.label}: {'loaded' if ok else 'not loaded'}"]


def service_for(store: Store, env: Mapping[str, str] = os.environ,
                platform: str = sys.platform) -> _Service:
    if platform.startswith("linux"):
        return _Systemd(store, env)
    if platform == "darwin":
        return _Launchd(store, env)
    raise InvalidInput(f"watch --service: no service manager mailslot knows on {platform} "
                       "(systemd on Linux, launchd on macOS); run `mailslot watch` instead")


def run_service(store: Store, action: str, env: Mapping[str, str] = os.environ,
                platform: str = sys.platform) -> ServiceReport:
    """Install (write, then enable and start), remove (stop, disable, delete) or show."""
    service = service_for(store, env, platform)
    path = service.path
    if action == "install":
        content = service.content()  # refused before anything is written
        _write(path, content)
        return ServiceReport(action, service.kind, path, True,
                             [f"wrote {path}", *service.enable()])
    if action == "remove":
        if not os.path.exists(path):
            return ServiceReport(action, service.kind, path, False,
                                 [f"no unit at {path}: nothing to remove"])
        notes = service.disable()
        try:
            os.unlink(path)
        except OSError as exc:
            raise StoreError(f"cannot remove {path} ({exc.strerror})") from None
        return ServiceReport(action, service.kind, path, False, [*notes, f"removed {path}"])
    installed = os.path.exists(path)
    notes = service.state() if installed else [f"not installed (no unit at {path})"]
    running = record(service.store, env)
    notes.append(f"watcher: running here ({running.get('how')}, pid {running.get('pid')})"
                 if running else "watcher: none running here")
    return ServiceReport(action, service.kind, path, installed, notes)


def _write(path: str, content: bytes) -> None:
    """The unit file, 0600 (it names the store, which for a database may hold a
    password), written whole and renamed into place."""
    staged = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, content)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(staged, path)
    except OSError as exc:
        raise StoreError(f"cannot write {path} ({exc.strerror})") from None
