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
the host's :attr:`~mailslot.host_registry.host.Host.given_markers` and
:attr:`~mailslot.host_registry.host.Host.answer_markers` are parsed, each once: a check
costs the same in a record of 50 MB as in one of 50 KB (``bench/bench_seen.py``). A
record that shrank was rewritten: its last :data:`WINDOW` bytes are read instead.

What a session awaits is kept in the store's ``marks`` namespace, one set of words a
session, forgotten with it (:class:`mailslot.service.delivery.SessionMarks`: the one
piece of state the rung keeps,
read by every hook of a host that keeps a record, so this module is loaded only when a
showing waits). An MCP server keeps its own in memory
(:class:`mailslot.service.tool_marks.ToolMarks`).

On the hook path: ``os`` and the JSON reader only.
"""

from __future__ import annotations

import os

from ..core import jsontext
from ..core.durable import open_file
from ..core.errors import MailslotError, UnsafePath
from .ladder import event_time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from ..host_registry import Host
    from ..store.base import Store

WINDOW = 1 << 20
"""Bytes of a record one check reads at most (the farthest answer seen after its
showing, in any host's record, was 111 KB)."""
SEEN, MISSED, LOST = "seen", "missed", "lost"


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


class _Window:
    """The bytes read of a record, reached by position: the whole line around a byte,
    each line parsed once, and the next place one of some needles is found (each
    needle's search going on from where it stopped, so no byte is searched twice)."""

    def __init__(self, data: bytes, at: int, parsed: dict[int, dict[str, Any] | None]
                 ) -> None:
        self.data = data
        first = 0 if at == 0 else data.find(b"\n") + 1
        self.first = first if first or at == 0 else len(data)  # whole lines only
        self.parsed = parsed  # shared by the windows of one read
        self.next: dict[bytes, int] = {}  # each needle's next place (searches only go on)

    def find(self, needles: tuple[bytes, ...], start: int) -> int:
        """The first place at or after ``start`` (in ``data``) of any of ``needles``."""
        found = -1
        for needle in needles:
            place = self.next.get(needle, -2)
            if place == -2 or 0 <= place < start:
                place = self.data.find(needle, max(start, self.first))
                self.next[needle] = place
            if place >= 0 and (found < 0 or place < found):
                found = place
        return found

    def line(self, place: int) -> tuple[int, int, dict[str, Any] | None] | None:
        """The whole line holding byte ``place``: its start and end in ``data``, and
        its value (``None``: not JSON); ``None`` when it is not whole yet."""
        begin = self.data.rfind(b"\n", self.first, place) + 1 or self.first
        end = self.data.find(b"\n", place)
        if end < 0:
            return None  # the host is still writing it
        if begin not in self.parsed:
            self.parsed[begin] = _entry(self.data[begin:end])
        return begin, end, self.parsed[begin]


def _given_after(host: Host, window: _Window, start: int, needles: tuple[bytes, ...]
                 ) -> tuple[int, object] | None:
    """The first line at or after ``start`` holding one of ``needles`` that is what the
    host sent its model: its start and :meth:`Host.given` key."""
    place = window.find(needles, start)
    while place >= 0:
        found = window.line(place)
        if found is None:
            return None
        begin, end, entry = found
        key = None if entry is None else host.given(entry)
        if key is not None:
            return begin, key
        place = window.find(needles, end + 1)
    return None


def _settle(host: Host, window: _Window, mark: bytes, start: int) -> tuple[str, str] | None:
    """The showing that carried ``mark`` from ``start`` on: seen, missed or waiting
    (``None``), by the answers after the lines that matter."""
    first = _given_after(host, window, start, host.given_markers)
    if first is None:
        return None
    held = _given_after(host, window, start, (mark,))
    place = window.find(host.answer_markers, first[0])
    while place >= 0:
        found = window.line(place)
        if found is None:
            return None
        begin, end, entry = found
        if entry is not None:
            if held is not None and held[0] < begin and host.answers(entry, held[1]):
                return SEEN, _when(entry)
            if (held is None or held[0] > begin) and host.answers(entry, first[1]):
                return MISSED, _when(entry)
        place = window.find(host.answer_markers, end + 1)
    return None


def _scan(host: Host, data: bytes, at: int, offsets: dict[str, int]
          ) -> dict[str, tuple[str, str]]:
    """Each showing's verdict, if the window holds one: its fingerprint in a line given
    to the model and an answer after it (seen), or an answer to what was given after it
    and no such line (missed)."""
    found: dict[str, tuple[str, str]] = {}
    parsed: dict[int, dict[str, Any] | None] = {}
    for mark, offset in offsets.items():
        verdict = _settle(host, _Window(data, at, parsed), mark.encode(),
                          max(0, offset - at))
        if verdict is not None:
            found[mark] = verdict
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
