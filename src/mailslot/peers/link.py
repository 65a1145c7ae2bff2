"""The link to a peer: ``ssh`` running ``mailslot peer serve`` on the other side.

The command line that reaches the remote shell is made of two things only: the remote
program (``--remote-mailslot``, a path the person chose, quoted with
:func:`shlex.quote`) and the fixed words ``peer serve``. Everything else (which store,
who this node is, every message) goes as frames on the program's standard input
(:mod:`.wire`), so no caller's data is ever parsed by a shell. ``--ssh-command``
replaces ``ssh`` (split into words here, never run through a local shell), as git's
``core.sshCommand`` does: ``ssh -F FILE`` names another configuration, since ssh reads
``~/.ssh/config`` from the password database rather than ``$HOME``.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import threading
from collections import deque

from ..core.errors import InvalidInput
from ..core.text import quoted
from .frames import Stream, WireError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

DEFAULT_SSH = "ssh"
DEFAULT_REMOTE = "mailslot"
CONNECT_SECONDS = 30.0
"""How long a link may take to greet (ssh's own connect and login included)."""
_STDERR_LINES = 20


def check_destination(dest: str) -> str:
    """What ``ssh`` takes as a destination: an alias, ``host`` or ``user@host``; never
    an option (``-oProxyCommand=...``), never a space, quote or control character."""
    if not dest or dest.startswith("-") or any(c.isspace() or not c.isprintable()
                                               or c in "'\"\\`$;|&<>" for c in dest):
        raise InvalidInput(f"SSH_DEST {quoted(dest)} is not an ssh destination (an alias "
                           "from ~/.ssh/config, host or user@host)")
    return dest


def check_program(path: str) -> str:
    """The remote program: one word (it is quoted for the remote shell, never split)."""
    if not path or "\n" in path or "\0" in path:
        raise InvalidInput(f"--remote-mailslot {quoted(path)} is not a program path")
    return path


def ssh_words(command: str | None) -> list[str]:
    """``--ssh-command`` as words (default ``ssh``)."""
    try:
        words = shlex.split(command or DEFAULT_SSH)
    except ValueError as exc:
        raise InvalidInput(f"--ssh-command cannot be read: {exc}") from None
    if not words:
        raise InvalidInput("--ssh-command is empty")
    return words


def argv(settings: Mapping[str, Any]) -> list[str]:
    """The local command line of a link to the peer whose settings these are."""
    remote = check_program(str(settings.get("remote_mailslot") or DEFAULT_REMOTE))
    return [*ssh_words(settings.get("ssh_command")), check_destination(str(settings["ssh"])),
            f"{shlex.quote(remote)} peer serve"]


class Link(Stream):
    """A running ssh, its standard input and output as a frame stream, its standard
    error kept (the last lines) to say why a link failed."""

    def __init__(self, words: list[str], env: Mapping[str, str] | None = None) -> None:
        try:
            self.process = subprocess.Popen(
                words, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=dict(env) if env is not None else None,
                start_new_session=True)
        except OSError as exc:
            raise WireError(f"cannot run {words[0]}: {exc.strerror or exc}") from None
        assert self.process.stdin and self.process.stdout and self.process.stderr
        super().__init__(self.process.stdout.fileno(), self.process.stdin.fileno())
        self._errors: deque[str] = deque(maxlen=_STDERR_LINES)
        self._drain = threading.Thread(target=self._read_errors, daemon=True,
                                       name="peer-ssh-stderr")
        self._drain.start()

    def _read_errors(self) -> None:
        stream = self.process.stderr
        assert stream is not None
        for line in iter(stream.readline, b""):
            text = line.decode("utf-8", "replace").strip()
            if text:
                self._errors.append(text)

    def why(self, fallback: str) -> str:
        """The ssh's last words, if it said any (its error, not ours)."""
        if self.process.poll() is not None:
            self._drain.join(timeout=1.0)
        said = [line for line in self._errors if not line.startswith("Warning: Permanently")]
        return f"{fallback}: {said[-1]}" if said else fallback

    def greet(self, timeout: float = CONNECT_SECONDS) -> None:
        try:
            self.preamble(timeout)
        except WireError as exc:
            self.close()
            raise WireError(self.why(str(exc))) from None

    def close(self) -> None:
        """End the link: standard input closed (the remote end sees the end and stops),
        then ssh ended if it lingers."""
        for stream in (self.process.stdin, self.process.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stderr is not None:
            self._drain.join(timeout=1.0)
            self.process.stderr.close()


def local(words: list[str]) -> Link:
    """A link to a program on this machine (no ssh): the tests' and benchmarks' way to
    talk to ``peer serve`` straight through pipes."""
    link = Link(words)
    link.greet()
    return link


def spawn(settings: Mapping[str, Any]) -> Link:
    """A greeted link to the peer these settings describe."""
    link = Link(argv(settings), os.environ)
    link.greet()
    return link
