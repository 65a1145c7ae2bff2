"""The ``seen`` rung of an MCP server's read results (:mod:`mailslot.service.seen`): what
they carried, kept in the server's memory until the host's record of its session shows
it given to the model. Loaded by ``serve`` only.
"""

from __future__ import annotations

import os

from ..core.framing import new_mark
from .seen import Showing, judge, receipt

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..host_registry import Host
    from ..store.base import Store


class ToolMarks:
    """What one MCP server's read results carried and the host has yet to show it gave
    its model, kept in the server's memory (a server that ends forgets them: the rung
    stays ``surfaced``). Its host and record are found once, at the first read that
    carries mail, from the server's environment and the call's ``_meta``."""

    def __init__(self) -> None:
        self.waiting: list[tuple[Store, str, str | None, Showing]] = []
        self.host: Host | None = None
        self.record: str | None = None

    def begin(self, env: dict[str, str], meta: dict[str, object], cwd: str) -> str | None:
        """A fingerprint for a read result about to be made, or ``None`` when this
        server's host keeps no record mailslot reads (or it cannot be found)."""
        if self.record is None:
            self.host, self.record = _server_record(env, meta, cwd)
        if self.host is None or self.record is None or "tool" not in self.host.record_holds:
            return None
        return new_mark()

    def offset(self) -> int:
        """Where the record ends now (0: not written yet)."""
        try:
            return os.stat(self.record).st_size if self.record else 0
        except OSError:
            return 0

    def shown(self, store: Store, agent: str, session: str | None, showing: Showing) -> None:
        """The result that carried ``showing`` was written to the host."""
        self.waiting.append((store, agent, session, showing))

    def check(self) -> None:
        """The next call's look: a receipt for each showing the record settled."""
        if not self.waiting or self.host is None or self.record is None:
            return
        verdicts = judge(self.host, self.record, [w[3] for w in self.waiting])
        left = []
        for store, agent, session, showing in self.waiting:
            if showing.mark not in verdicts:
                left.append((store, agent, session, showing))
                continue
            verdict, when = verdicts[showing.mark]
            receipt(store, agent, showing, verdict, host=self.host.name, session=session,
                    when=when)
        self.waiting = left


def _server_record(env: dict[str, str], meta: dict[str, object], cwd: str
                   ) -> tuple[Host | None, str | None]:
    """The host whose MCP server this is, and its record, as the first host that knows
    says."""
    from .. import host_registry as hosts

    for host in hosts.every(lambda h: h.record_holds):
        path = host.server_record(env, meta, cwd)
        if path is not None:
            return host, path
    return None, None
