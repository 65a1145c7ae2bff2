"""Starting a helper process detached: the on-demand watcher, the hook relay and the
notification hub each start this way, from a hook, a send or a long-running server,
and nothing waits for them.

On the hook path: it imports ``os`` and ``sys`` only at load time.
"""

from __future__ import annotations

import os
import sys

from .durable import FILE_MODE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

_spawned: list[int] = []  # children this process started, reaped when next it looks


def spawn(argv: list[str], env: Mapping[str, str], log: str) -> str | None:
    """Start ``argv`` detached (a session of its own, stdin from ``/dev/null``, output
    appended to ``log``, no other descriptor inherited, SIGINT and SIGTERM at their
    defaults) without waiting for it; returns why it could not be started, else
    ``None``. The on-demand watcher, the hook relay (:mod:`mailslot.frontends.hooks.relay`) and
    the notification hub (:mod:`mailslot.backends.postgres.pg_hub`) start this way."""
    _reap()
    try:
        os.makedirs(os.path.dirname(log), mode=0o700, exist_ok=True)
        actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                   (os.POSIX_SPAWN_OPEN, 1, log,
                    os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE),
                   (os.POSIX_SPAWN_DUP2, 1, 2)]
        actions += _closing(_inherited())
        import signal  # rare: at most once per watcher's or relay's life

        _spawned.append(os.posix_spawn(sys.executable, argv, env, file_actions=actions,
                                       setsid=True, setsigmask=(),
                                       setsigdef=(signal.SIGINT, signal.SIGTERM)))
    except (OSError, NotImplementedError) as exc:
        return getattr(exc, "strerror", None) or type(exc).__name__
    return None


def _closing(fds: list[int]) -> list[tuple[int, int]]:
    """Close actions for ``fds``; one at or above the soft descriptor limit cannot be
    named in a close action (``posix_spawn`` refuses it with EBADF, as a sender run
    under ``ulimit -n 64`` holding descriptor 100 found), so that one is made
    close-on-exec here instead: our own use of it is unchanged, the child gets none."""
    limit = os.sysconf("SC_OPEN_MAX")
    actions = []
    for fd in fds:
        if 0 <= fd < limit:
            actions.append((os.POSIX_SPAWN_CLOSE, fd))
        else:
            os.set_inheritable(fd, False)
    return actions


def _inherited() -> list[int]:
    """Descriptors above 2 the child would inherit (opened without close-on-exec, such
    as a pipe a host handed its hook): each is closed in the child, so a watcher living
    for minutes never holds open a pipe whose reader waits for its end."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        found = []
        for name in names:
            fd = int(name) if name.isdigit() else -1
            try:
                if fd > 2 and os.get_inheritable(fd):
                    found.append(fd)
            except OSError:  # the listing's own descriptor, closed by now
                continue
        return found
    return []


def _reap() -> None:
    """Collect helpers this process started that have ended (a long-running server
    starts one now and then; without this each would stay a zombie until it exits)."""
    for pid in list(_spawned):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _spawned.remove(pid)
