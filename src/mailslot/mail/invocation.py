"""How a model's shell runs this mailslot, as this agent, on this mailbox.

Every command mailslot shows a model (answer hints in framed mail, wake notices, hook
injections, MCP results) starts with :func:`invocation`. The model's shell may know
neither the agent's name (it came from ``--agent``), nor the mailbox (``--dir`` given to
a hook or a server), nor where mailslot is installed (hosts run it by absolute path,
often from a venv that is not on ``PATH``), so the command says all three:

* ``--agent NAME``, always;
* ``--dir D`` when the mailbox is not the default ``~/mailslot``: a folder as its absolute
  path, a ``postgresql://`` URL as it is (the store's location, which never holds a
  password: libpq's own sources give it);
* the program as ``mailslot`` only when the first ``mailslot`` on ``PATH`` is this one,
  else its absolute path.

On the hook path: only ``os`` and ``sys`` at import time.
"""

from __future__ import annotations

import os
import sys

from ..backends import DEFAULT_ROOT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_~")


def invocation(agent: str, root: str, env: Mapping[str, str] = os.environ) -> str:
    """``PROGRAM --agent AGENT [--dir ROOT]``, ready to have a subcommand appended."""
    words = [program(env), "--agent", agent]
    if "://" in root:  # a store URL is no path: made absolute it names a folder of the cwd
        words += ["--dir", root]
    else:
        folder = os.path.abspath(os.path.expanduser(root))
        if folder != os.path.abspath(os.path.expanduser(DEFAULT_ROOT)):
            words += ["--dir", folder]
    return " ".join(map(_quote, words))


def program(env: Mapping[str, str] = os.environ) -> str:
    """``mailslot`` if ``PATH`` finds this installation's command, else its path."""
    mine = os.path.join(os.path.dirname(os.path.abspath(sys.executable)), "mailslot")
    if not os.access(mine, os.X_OK):
        return "mailslot"  # not an installed command (an embedding program): the name
    for folder in env.get("PATH", "").split(os.pathsep):
        found = os.path.join(folder or ".", "mailslot")
        if os.access(found, os.X_OK) and not os.path.isdir(found):
            try:
                return "mailslot" if os.path.samefile(found, mine) else mine
            except OSError:
                return mine
    return mine


def _quote(word: str) -> str:
    """A shell word; quoted only when it must be (a path with spaces, say)."""
    if word and _SAFE.issuperset(word):
        return word
    import shlex  # rare

    return shlex.quote(word)
