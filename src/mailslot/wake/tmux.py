"""Waking an agent that runs in a tmux pane: type the notice at its idle prompt.

Typing into a terminal is only safe into the right program at rest, so every step
checks first and refuses rather than guesses: the pane must exist, not be in copy mode,
and run the configured program in the foreground; its screen must stay unchanged for a
moment (idle); then the notice goes through a tmux buffer as a bracketed paste, Enter
follows about 100 ms later, and the notice must show up on the screen.
"""

from __future__ import annotations

import re
import secrets
import subprocess
import threading
import time
from collections.abc import Mapping
from typing import Any

from ..core.errors import StoreError
from .methods import OK, Check, Field, Job, Outcome, Setup, WakeMethod, text_field, where

_TARGET = re.compile(r"[A-Za-z0-9_%$@.:+=][A-Za-z0-9_%$@.:+=-]{0,127}")
_PROGRAM = re.compile(r"[A-Za-z0-9_.+][A-Za-z0-9_.+-]{0,63}")
SOCKET_NAME = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.-]{0,63}")
_POLL_SECONDS = 0.1
_ENTER_DELAY_SECONDS = 0.1
_CONFIRM_SECONDS = 3.0
_TMUX_TIMEOUT = 5.0


def literal(text: str) -> str:
    """``text`` for an argument tmux expands as a format, to reach tmux as written.

    tmux expands ``#{...}``, ``#(...)`` (a shell command: it runs) and ``#S``-style
    aliases in a window's name (``-n``), a start folder (``-c``), a session name
    (``-s``), ``-F`` and ``display-message``'s message, but not in ``-e``, ``-t``,
    ``-S`` or a command given as several arguments (measured with tmux 3.3a). ``##`` is
    its own escape for ``#`` (tmux(1), FORMATS), so nothing in ``text`` is expanded.
    """
    return text.replace("#", "##")


def _seconds(agent: str, cfg: Mapping[str, Any], name: str, default: float) -> float:
    value = cfg.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 3600:
        raise StoreError(f"{where(agent, name)} must be a number of seconds from 0 to 3600")
    return float(value)


class TmuxMethod(WakeMethod):
    name = "tmux"
    summary = "types the notice at the idle prompt of the agent's tmux pane"
    needs = ("`tmux` on the watcher's PATH, and the agent running in a pane of that server",
             "`tmux_program`: the pane's foreground program when the agent is at its prompt")
    limits = (
        "refuses (and retries later) while the pane runs another program or is in copy mode",
        "waits for the screen to be still for `tmux_idle_seconds`; gives up after "
        "`tmux_busy_seconds`",
        "not retried once typed: if the notice does not show up it reports the wake failed",
    )
    fields = (
        Field("tmux_target", "the pane, e.g. \"work:1.0\" or \"%3\""),
        Field("tmux_program", "expected foreground program, as tmux's "
              "#{pane_current_command} shows it (e.g. the host's program, \"node\", \"python3\")"),
        Field("tmux_socket", "tmux server socket name (tmux -L); default server if absent",
              required=False),
        Field("tmux_socket_path", "tmux server socket path (tmux -S)", required=False),
        Field("tmux_idle_seconds", "how long the screen must be unchanged (default 1)",
              required=False, kind="number"),
        Field("tmux_busy_seconds", "how long to wait for it to be idle (default 60)",
              required=False, kind="number"),
    )

    def __init__(self, target: str, program: str, server: list[str], idle: float,
                 busy: float) -> None:
        self.target = target
        self.program = program
        self.server = server
        self.idle = idle
        self.busy = busy

    @classmethod
    def from_config(cls, agent: str, cfg: Mapping[str, Any]) -> TmuxMethod:
        target = text_field(agent, cfg, "tmux_target", pattern=_TARGET, what="a tmux pane target")
        program = text_field(agent, cfg, "tmux_program", pattern=_PROGRAM, what="a program name")
        socket = text_field(agent, cfg, "tmux_socket", required=False, pattern=SOCKET_NAME,
                            what="a tmux socket name")
        path = text_field(agent, cfg, "tmux_socket_path", required=False)
        if socket and path:
            raise StoreError(f"{where(agent, 'tmux_socket')}: give tmux_socket or "
                             "tmux_socket_path, not both")
        if path is not None and not path.startswith(("/", "~")):
            raise StoreError(f"{where(agent, 'tmux_socket_path')} must be an absolute path")
        server = ["-L", socket] if socket else ["-S", path] if path else []
        return cls(str(target), str(program), server,
                   _seconds(agent, cfg, "tmux_idle_seconds", 1.0),
                   _seconds(agent, cfg, "tmux_busy_seconds", 60.0))

    @classmethod
    def check(cls, setup: Setup) -> Check:
        """The pane this command runs in (``$TMUX_PANE`` of the server in ``$TMUX``),
        unless config.json names one: the agent is to run in it, at its prompt."""
        fields: dict[str, Any] = {}
        if "tmux_target" not in setup.entry:
            pane, server = setup.env.get("TMUX_PANE", ""), setup.env.get("TMUX", "")
            if not pane or not server:
                return Check(False, "not run inside tmux ($TMUX_PANE is not set) and no "
                                    f"{where(setup.agent, 'tmux_target')}")
            fields = {"tmux_target": pane, "tmux_socket_path": server.split(",")[0]}
        if "tmux_program" not in setup.entry:
            if setup.program is None:
                return Check(False, f"no {where(setup.agent, 'tmux_program')}, and the host "
                                    "has no program to expect in the pane")
            fields["tmux_program"] = setup.program
        try:
            method = cls.from_config(setup.agent, {**setup.entry, **fields})
            shown = method._tmux("display-message", "-p", "-t", method.target, "#{pane_id}")
        except StoreError as exc:
            return Check(False, str(exc))
        except (OSError, subprocess.SubprocessError):
            return Check(False, "tmux is not on PATH (or did not answer)")
        if shown.returncode != 0 or not shown.stdout.strip():
            return Check(False, f"tmux pane {method.target} was not found")
        return Check(True, f"pane {method.target}: types the notice when {method.program} is "
                           "at its prompt there", fields)

    # tmux ---------------------------------------------------------------------------
    def _tmux(self, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            ["tmux", *self.server, *args], input=stdin, capture_output=True,
            timeout=_TMUX_TIMEOUT, check=False,
        )

    def _screen(self) -> str:
        done = self._tmux("capture-pane", "-p", "-J", "-t", self.target)
        return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else ""

    def _check(self) -> Outcome | None:
        """``None`` if the pane checks out, else why we must not type into it."""
        shown = self._tmux("display-message", "-p", "-t", self.target,
                           "#{pane_id}|#{pane_dead}|#{pane_in_mode}|#{pane_current_command}")
        parts = shown.stdout.decode("utf-8", "replace").strip().split("|", 3)
        if shown.returncode != 0 or len(parts) != 4 or not parts[0]:  # tmux 3.3 exits 0
            return Outcome(False, f"tmux pane {self.target} was not found")
        _, dead, in_mode, command = parts
        if dead == "1":
            return Outcome(False, f"tmux pane {self.target} is dead")
        if in_mode == "1":
            return Outcome(False, f"tmux pane {self.target} is in copy mode")
        if command != self.program:
            shown_command = re.sub(r"[^A-Za-z0-9_.+-]", "?", command)[:64]
            return Outcome(False, f"tmux pane {self.target} runs {shown_command}, not "
                                  f"{self.program}; nothing was typed")
        return None

    def _wait_idle(self, stop: threading.Event) -> bool:
        """True once the screen has been unchanged for ``idle`` seconds."""
        deadline = time.monotonic() + self.busy
        last, still_since = self._screen(), time.monotonic()
        while time.monotonic() < deadline:
            if stop.wait(_POLL_SECONDS):
                return False
            screen = self._screen()
            if screen != last:
                last, still_since = screen, time.monotonic()
            elif time.monotonic() - still_since >= self.idle:
                return True
        return False

    # WakeMethod -----------------------------------------------------------------------
    def probe(self) -> list[str]:
        try:
            problem = self._check()
        except (OSError, subprocess.SubprocessError):
            return ["tmux is not on the watcher's PATH (or did not answer)"]
        return [problem.reason] if problem else []

    def preview(self, job: Job) -> list[str]:
        server = " ".join(["tmux", *self.server])
        return [
            f"checks: {server} pane {self.target} runs {self.program}, not in copy mode",
            f"waits:  until its screen is unchanged for {self.idle:g} s (at most {self.busy:g} s)",
            f"types:  {job.notice}",
            "then:   Enter, and checks the notice appeared",
        ]

    def wake(self, job: Job) -> Outcome:
        try:
            return self._wake(job)
        except FileNotFoundError:
            return Outcome(False, "tmux was not found on PATH")
        except subprocess.TimeoutExpired:
            return Outcome(False, f"tmux did not answer within {_TMUX_TIMEOUT:g} s")

    def _wake(self, job: Job) -> Outcome:
        problem = self._check()
        if problem:
            return problem
        if not self._wait_idle(job.stop):
            if job.stop.is_set():
                return Outcome(False, "the watcher stopped while the pane was busy")
            return Outcome(False, f"tmux pane {self.target} stayed busy for {self.busy:g} s")
        problem = self._check()  # it may have changed while we waited
        if problem:
            return problem
        marker = job.messages[0].id
        before = self._screen().count(marker)
        buffer = f"mailslot-{secrets.token_hex(4)}"
        if self._tmux("load-buffer", "-b", buffer, "-", stdin=job.notice.encode()).returncode:
            return Outcome(False, "tmux could not load the notice into a buffer")
        if self._tmux("paste-buffer", "-p", "-d", "-b", buffer, "-t", self.target).returncode:
            self._tmux("delete-buffer", "-b", buffer)
            return Outcome(False, f"tmux could not paste into pane {self.target}")
        time.sleep(_ENTER_DELAY_SECONDS)
        if self._tmux("send-keys", "-t", self.target, "Enter").returncode:
            return Outcome(False, f"tmux could not send Enter to pane {self.target}", retry=False)
        deadline = time.monotonic() + _CONFIRM_SECONDS
        while time.monotonic() < deadline:
            if self._screen().count(marker) > before:
                return OK
            time.sleep(_POLL_SECONDS)
        return Outcome(False, f"typed the notice into pane {self.target} but it did not show "
                              "up on screen; not typing it again", retry=False)
