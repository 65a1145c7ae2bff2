"""The owner's guardrails for starting sessions, and the one way a window is opened.

Apart from :mod:`mailslot.launch.starting` so the watcher's recovery
(:mod:`mailslot.launch.restart`) can use them without importing the service that starts
sessions for agents.
"""

from __future__ import annotations

import os
import re
import subprocess
from typing import Any

from ..core.errors import InvalidInput, Refused
from ..host_registry import Host, listed, names
from ..host_registry.host import Failed
from ..wake.session_mcp import clean_environ
from ..wake.tmux import SOCKET_NAME, literal

DEFAULT_MAX_RUNNING = 4
TMUX_SESSION = "mailslot"
_MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}")
HOST_TIMEOUT = 30.0


def matches(pattern: str, model: str) -> bool:
    """Whole-string, case-insensitive glob where only ``*`` is special."""
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, model, re.IGNORECASE | re.DOTALL) is not None


class Guardrails:
    """The owner's ``launch`` section, read for one host; a malformed value refuses."""

    def __init__(self, section: dict[str, Any], host: Host) -> None:
        self.section = section
        self.host = host
        entry = section.get(host.name, {})
        if not isinstance(entry, dict):
            raise Refused(f"config.json: launch.{host.name} must be an object; every "
                          f"{host.name} start is refused until it is fixed")
        self.entry = entry

    def _where(self, key: str) -> str:
        return f"config.json: launch.{self.host.name}.{key}"

    def _text(self, key: str) -> str | None:
        value = self.entry.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise Refused(f"{self._where(key)} must be non-empty text; every "
                          f"{self.host.name} start is refused until it is fixed")
        return value

    def model(self, asked: str | None) -> str | None:
        """The resolved model (asked, else ``default_model``), checked against
        ``blocked_models``; a blocked default is refused like an asked one."""
        model = asked if asked is not None else self._text("default_model")
        if model is not None and not _MODEL.fullmatch(model):
            raise InvalidInput(f"model {model!r} is not a model name")
        blocked = self.entry.get("blocked_models", [])
        if not isinstance(blocked, list) or not all(isinstance(p, str) and p for p in blocked):
            raise Refused(f"{self._where('blocked_models')} must be a list of non-empty "
                          f"globs; every {self.host.name} start is refused until it is fixed")
        if blocked and model is None:
            raise Refused(f"no model given and {self._where('default_model')} is not set, so "
                          "blocked_models cannot be checked: give a model or set a default")
        for pattern in blocked:
            if model is not None and matches(pattern, model):
                raise Refused(f"model {model!r} is blocked by {pattern!r} "
                              f"({self._where('blocked_models')})")
        return model

    def permission_mode(self, asked: str | None) -> str | None:
        """The resolved mode, which must be the host's and in the allowed list."""
        host = self.host
        mode = asked if asked is not None else self._text("default_permission_mode")
        mode = mode if mode is not None else host.default_mode
        if not host.modes:
            if mode is not None:
                raise InvalidInput(f"{host.name} takes no permission_mode")
            return None
        if mode not in host.modes:
            raise InvalidInput(f"permission mode {mode!r} is not one of {host.name}'s: "
                               + ", ".join(host.modes))
        allowed = self.entry.get("allowed_permission_modes")
        if allowed is None:
            allowed = list(host.default_allowed)
        if not isinstance(allowed, list) or not all(isinstance(m, str) for m in allowed):
            raise Refused(f"{self._where('allowed_permission_modes')} must be a list of "
                          f"modes; every {host.name} start is refused until it is fixed")
        if mode not in allowed:
            kind = "skips the host's permission prompts and " if mode in host.bypass else ""
            raise Refused(f"permission mode {mode!r} {kind}is not in "
                          f"{self._where('allowed_permission_modes')}")
        return mode

    def allow_tools(self) -> list[str]:
        """The tool patterns the owner listed (``allow_tools``) for a host that keeps no
        approvals between runs (:attr:`~mailslot.host_registry.host.Host.takes_tools`): a
        started headless session may use a tool only if the owner listed it here (e.g.
        ``"mailslot"``: every tool of the session's mailslot server). Never a bypass:
        allowing every tool stays a permission mode."""
        value = self.entry.get("allow_tools", [])
        host = self.host
        if host.takes_tools and not (isinstance(value, list) and all(
                isinstance(t, str) and host.valid_tool(t) for t in value)):
            raise Refused(f"{self._where('allow_tools')} must be a list of {host.title} tool "
                          f"patterns such as \"mailslot\" or \"shell(git:*)\"; every "
                          f"{host.name} start is refused until it is fixed")
        if value and not host.takes_tools:
            offered = listed(names(lambda h: h.takes_tools))
            raise Refused(f"{self._where('allow_tools')} is for {offered} only")
        return list(value)

    def executable(self) -> str:
        return (self._text("executable") or self.host.installed_program(os.environ)
                or self.host.name)

    def tmux_program(self) -> str:
        """What tmux shows as the session's program when it is at its prompt."""
        return self._text("tmux_program") or self.host.program or self.host.name

    def max_running(self) -> int:
        value = self.section.get("max_running", DEFAULT_MAX_RUNNING)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise Refused("config.json: launch.max_running must be a whole number from 0; "
                          "every start is refused until it is fixed")
        return value

    def allowed_callers(self) -> list[str]:
        value = self.section.get("allowed_callers", [])
        if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
            raise Refused("config.json: launch.allowed_callers must be a list of agent "
                          "names; every start from an agent is refused until it is fixed")
        return [n.lower() for n in value]

    def tmux_server(self) -> list[str]:
        socket = self.section.get("tmux_socket")
        if socket is None:
            return []
        if not isinstance(socket, str) or not SOCKET_NAME.fullmatch(socket):
            raise Refused("config.json: launch.tmux_socket must be a tmux socket name")
        return ["-L", socket]


def open_link(opener: list[str], link: str) -> None:
    """Hand ``link`` to the platform's opener, one argument, no shell."""
    try:
        done = subprocess.run([*opener, link], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL,
                              timeout=HOST_TIMEOUT, check=False, env=clean_environ())
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Failed(f"{opener[0]} could not be run ({type(exc).__name__})") from None
    if done.returncode != 0:
        raise Failed(f"{opener[0]} could not open the link "
                     f"(exit status {done.returncode})")


def open_window(server: list[str], argv: list[str], env: dict[str, str], folder: str,
          title: str) -> tuple[str, int]:
    """Start ``argv`` in a new window of the ``mailslot`` tmux session (made if absent);
    with several arguments tmux runs the program itself, never through a shell. The
    folder and title are a caller's: tmux would expand them as formats (a ``#(...)``
    runs a shell command), so they are passed :func:`~mailslot.wake.tmux.literal`."""
    def tmux(*args: str) -> subprocess.CompletedProcess[str]:
        try:  # a server this starts must not take the caller's MAILSLOT_* as its own
            return subprocess.run(["tmux", *server, *args], capture_output=True, text=True,
                                  timeout=HOST_TIMEOUT, check=False, env=clean_environ())
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise Failed(f"tmux could not be run ({type(exc).__name__})") from None

    if not os.path.isdir(folder):  # tmux would open the window elsewhere, saying nothing
        raise Failed(f"the folder {folder} does not exist")
    # A running server's global environment is every new window's; a MAILSLOT_* there
    # (from whoever started the server) is blanked, which mailslot reads as unset.
    shown = tmux("show-environment", "-g").stdout if tmux("has-session").returncode == 0 \
        else ""
    inherited = {line.split("=", 1)[0] for line in shown.splitlines()
                 if line.startswith("MAILSLOT_") and "=" in line}
    env = {**dict.fromkeys(sorted(inherited - set(env)), ""), **env}
    where = ["-c", literal(folder), "-n", literal(title), "-P", "-F", "#{pane_id} #{pane_pid}"]
    where += [part for k, v in env.items() for part in ("-e", f"{k}={v}")]
    if tmux("has-session", "-t", f"={TMUX_SESSION}").returncode == 0:
        done = tmux("new-window", "-d", "-t", f"={TMUX_SESSION}:", *where, "--", *argv)
    else:
        done = tmux("new-session", "-d", "-s", TMUX_SESSION, *where, "--", *argv)
    target, _, pid = done.stdout.strip().partition(" ")
    if done.returncode != 0 or not target.startswith("%") or not pid.isdigit():
        raise Failed("tmux could not open a window: " + done.stderr.strip()[:200])
    return target, int(pid)
