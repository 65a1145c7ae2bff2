"""The delivery ladder's ``seen`` rung: the host's own record of a session shows that its
model was given the mail a hook injected or a tool result carried.

``surfaced`` says the host took mailslot's output; it cannot say the host then sent it to
a model (a wrapper may throw it away, a request may fail). Several hosts keep a record of
each session (a transcript, a rollout, a chat record: docs/hosts.md says which) that
holds what was put into each request and the model's answers. So every showing in a
host whose record holds that moment (:attr:`~mailslot.host_registry.host.Host.record_holds`)
carries a **fingerprint**, ``mslt-`` and 12 random hex digits, new for each showing and
never made of a sender's text, placed first in the text; and the next time the host runs
a hook in that session (or calls a tool of the same MCP server) the record is read:

* **seen**: the fingerprint is in a line of the record that is what the host sent its
  model (:meth:`~mailslot.host_registry.host.Host.given`: not the hook's raw output, which
  some hosts keep even when nothing came of it), and a later line is a model's answer to
  a request that held it (:meth:`~mailslot.host_registry.host.Host.answers`). A ``seen``
  receipt is written: ``{"event": "seen", "ids", "agent", "host", "session", "mark",
  "how", "at"}``;
* **missed**: a model answered a request made after the showing (the first line the
  host sent after it was answered) and the fingerprint is in no such line: the text
  never reached the model. A ``missed`` receipt, and the messages not done yet are shown
  again at the session's next hook that can show mail, once per session (the session's
  record keeps ``again:ID``; the ``surfaced`` receipt of that showing names them in
  ``again``);
* **lost**: more than :data:`WINDOW` bytes were written since the showing with neither
  answer: the check stops looking (the rung stays ``surfaced``).

Until then the showing waits. The record is read from where it ended when the showing
was planned (its size then), at most :data:`WINDOW` bytes, and only lines holding one of
the host's :attr:`~mailslot.host_registry.host.Host.record_markers` are parsed: a check
costs the same in a record of 50 MB as in one of 50 KB (``bench/bench_seen.py``). A
record that shrank was rewritten: its last :data:`WINDOW` bytes are read instead.

What a session awaits is kept beside what it was shown: :class:`SessionMarks` (the one
piece of state this module keeps; lines of the store's session record under the key
``<session>.marks``). An MCP server keeps its own in memory (:class:`ToolMarks`).

On the hook path: ``os`` and the JSON reader only.
"""

from __future__ import annotations

import os

from ..core import jsontext
from ..core.durable import open_file
from ..core.errors import MailslotError, UnsafePath
from ..core.names import session_key
from .ladder import event_time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import Any

    from ..host_registry import Host
    from ..store.base import Store

PREFIX = "mslt-"
WINDOW = 1 << 20
"""Bytes of a record one check reads at most (the farthest answer seen after its
showing, in any host's record, was 111 KB)."""
SEEN, MISSED, LOST = "seen", "missed", "lost"


def new_mark() -> str:
    """A fingerprint for one showing: unguessable, and nothing any host escapes."""
    return PREFIX + os.urandom(6).hex()


def record_size(path: str | None) -> int:
    """How long the record is now (0: not written yet: one host writes it only once the
    first request was sent)."""
    if path is None:
        return 0
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


class Showing:
    """One showing that carried a fingerprint: where the record ended before it, how
    it was shown, the ids it showed."""

    __slots__ = ("how", "ids", "mark", "offset")

    def __init__(self, mark: str, offset: int, how: str, ids: Sequence[str]) -> None:
        self.mark, self.offset, self.how, self.ids = mark, offset, how, list(ids)


# Reading a record ---------------------------------------------------------------------
def judge(host: Host, path: str, showings: Sequence[Showing]) -> dict[str, tuple[str, str]]:
    """What ``path`` (the host's record) says of each showing: its mark -> (``seen``,
    ``missed`` or ``lost``, the host's time of the answer, if the line says). A showing
    left out awaits a later look."""
    try:
        fd = open_file(path, os.O_RDONLY, follow=True)  # the person's own host's file
    except (OSError, UnsafePath):
        return {}
    try:
        size = os.fstat(fd).st_size
        start = min(s.offset for s in showings)
        offsets = {s.mark: s.offset for s in showings}
        if start > size:  # rewritten (compacted) since: look at its end
            start = max(0, size - WINDOW)
            offsets = dict.fromkeys(offsets, start)
        at = max(0, start - 1)
        data = os.pread(fd, min(WINDOW, size - at), at)
    finally:
        os.close(fd)
    found = _scan(host, data, at, offsets)
    for mark, offset in offsets.items():
        if mark not in found and size - offset > WINDOW:
            found[mark] = (LOST, "")
    return found


def _lines(data: bytes, at: int) -> Iterator[tuple[int, bytes]]:
    """Every whole line of ``data`` (read from byte ``at``), with where it starts; the
    first is whole only if the byte before it was a line's end."""
    begin = 0 if at == 0 else data.find(b"\n") + 1
    if at and not begin:
        return
    while (end := data.find(b"\n", begin)) >= 0:  # a line without its end: being written
        yield at + begin, data[begin:end]
        begin = end + 1


def _scan(host: Host, data: bytes, at: int, offsets: dict[str, int]
          ) -> dict[str, tuple[str, str]]:
    """One pass over the lines: each mark's first given line, the first given line after
    each showing, and the answers that settle them."""
    marks = {mark: mark.encode() for mark in offsets}
    held: dict[str, object] = {}  # mark -> the key of the given line holding it
    first: dict[str, object] = {}  # mark -> the key of the first given line after it
    found: dict[str, tuple[str, str]] = {}
    for begin, line in _lines(data, at):
        if not any(m in line for m in host.record_markers):
            continue
        entry = _entry(line)
        if entry is None:
            continue
        for mark in marks:
            if mark in found:
                continue
            if mark in held and host.answers(entry, held[mark]):
                found[mark] = (SEEN, _when(entry))
            elif mark in first and mark not in held and host.answers(entry, first[mark]):
                found[mark] = (MISSED, _when(entry))
        key = host.given(entry)
        if key is None:
            continue
        for mark, raw in marks.items():
            if mark in found or begin < offsets[mark]:
                continue
            first.setdefault(mark, key)
            if mark not in held and raw in line:
                held[mark] = key
        if len(found) == len(marks):
            break
    return found


def _entry(line: bytes) -> dict[str, Any] | None:
    try:
        entry = jsontext.loads(line)
    except (ValueError, RecursionError):
        return None
    return entry if isinstance(entry, dict) else None


def _when(entry: dict[str, Any]) -> str:
    """The host's own time of an answer line, where it writes one."""
    value = entry.get("timestamp")
    return value if isinstance(value, str) else ""


# What a session awaits ------------------------------------------------------------------
class SessionMarks:
    """The showings of one hook session that await the record's word, kept as words of
    the store's session record ``<session>.marks`` (pruned with the session):
    ``shown:MARK:OFFSET:HOW:ID,ID``, ``seen:MARK`` (or ``missed:``, ``lost:``) once
    settled, ``again:ID`` once shown again."""

    def __init__(self, store: Store, agent: str, session: str) -> None:
        self.store, self.agent = store, agent
        self.key = session_key(f"{session}.marks")

    def load(self) -> tuple[list[Showing], set[str], set[str]]:
        """The showings awaiting a look, the ids due to be shown again (a missed
        showing's), and those shown again already."""
        words = self.store.shown(self.agent, self.key)
        settled = {w.split(":", 1)[1]: w.split(":", 1)[0] for w in words
                   if w.startswith((SEEN + ":", MISSED + ":", LOST + ":"))}
        again = {w[6:] for w in words if w.startswith("again:")}
        waiting, due = [], set()
        for word in words:
            showing = _showing(word)
            if showing is None:
                continue
            verdict = settled.get(showing.mark)
            if verdict is None:
                waiting.append(showing)
            elif verdict == MISSED:
                due.update(showing.ids)
        return waiting, due - again, again

    def add(self, showing: Showing) -> None:
        self.store.add_shown(self.agent, self.key, [
            f"shown:{showing.mark}:{showing.offset}:{showing.how}:{','.join(showing.ids)}"])

    def settle(self, verdicts: dict[str, tuple[str, str]]) -> None:
        if verdicts:
            self.store.add_shown(self.agent, self.key,
                                 [f"{v}:{mark}" for mark, (v, _) in verdicts.items()])

    def shown_again(self, ids: Sequence[str]) -> None:
        if ids:
            self.store.add_shown(self.agent, self.key, [f"again:{i}" for i in ids])


def _showing(word: str) -> Showing | None:
    parts = word.split(":")
    if len(parts) != 5 or parts[0] != "shown" or not parts[2].isdigit():
        return None
    return Showing(parts[1], int(parts[2]), parts[3], [i for i in parts[4].split(",") if i])


def check_session(store: Store, agent: str, session: str, host: Host, record: str
                  ) -> list[str]:
    """The hook's look: settle what the record says of the session's waiting showings
    (a ``seen`` or ``missed`` receipt each); returns the ids due to be shown again."""
    marks = SessionMarks(store, agent, session)
    waiting, due, again = marks.load()
    if waiting:
        verdicts = judge(host, record, waiting)
        marks.settle(verdicts)
        for showing in waiting:
            if showing.mark in verdicts:
                verdict, when = verdicts[showing.mark]
                receipt(store, agent, showing, verdict, host=host.name, session=session,
                        when=when)
                if verdict == MISSED:
                    due.update(showing.ids)
    return sorted(due - again)  # once per session


def receipt(store: Store, agent: str, showing: Showing, verdict: str, *, host: str,
            session: str | None, when: str = "") -> None:
    """The ``seen`` (or ``missed``) line of the events log; a lost showing gets none.
    Best effort, as every receipt: the rung is shown lower at worst."""
    if verdict == LOST:
        return
    event: dict[str, object] = {"ts": event_time(), "event": verdict, "ids": showing.ids,
                                "agent": agent, "host": host, "session": session,
                                "mark": showing.mark, "how": showing.how}
    if when:
        event["at"] = when
    try:
        store.append_event(event)
    except MailslotError:
        return


# An MCP server's read results ------------------------------------------------------------
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
        return record_size(self.record)

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
