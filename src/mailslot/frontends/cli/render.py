"""Plain-text views of service results, for people at a terminal.

Nothing here decides anything; it only lays out what the service returned.
"""

from __future__ import annotations

import os
import sys

from ...core.dates import datetime
from ...core.message import Message
from ...core.results import (
    AgentInfo,
    DoctorReport,
    Found,
    InboxPage,
    Item,
    RecipientStatus,
    Status,
    ThreadEntry,
    WhoAmI,
    where_archived,
)
from ...core.text import for_terminal

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from typing import Any

    from ...launch.starting import Started
    from ...wake.choice import Diagnosis
    from ..install.changes import Report

_MARK = {"unread": "*", "read": "·", "done": "✓"}
_LEGEND = "* unread   · read, not done   ✓ done"


class Style:
    """Terminal emphasis, or none (off a terminal, NO_COLOR, --no-color)."""

    def __init__(self, *, colour: bool = False) -> None:
        self.colour = colour

    def _sgr(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.colour and text else text

    def bold(self, text: str) -> str:
        return self._sgr("1", text)

    def dim(self, text: str) -> str:
        return self._sgr("2", text)

    def accent(self, text: str) -> str:
        return self._sgr("36", text)


PLAIN = Style()


def _date(iso: str) -> str:
    """A stored date in the reader's local time with its zone: ``2026-09-21 16:48 CEST``."""
    try:
        when = datetime.fromisoformat(iso)
    except ValueError:
        return iso[:16].replace("T", " ")
    if when.tzinfo is None:
        return f"{when:%Y-%m-%d %H:%M}"
    local = when.astimezone()
    return f"{local:%Y-%m-%d %H:%M} {local.tzname() or local.strftime('%z')}"


def sent(message: Message) -> str:
    return f"sent {message.id} to {_to(message)}"


def _to(message: Message) -> str:
    """The recipients, with the one session an instance message is for."""
    if message.instance is not None:
        return f"{message.to[0]}@{message.instance}"
    return ", ".join(message.to)


def inbox(page: InboxPage, *, mailboxes: bool = False, style: Style = PLAIN) -> str:
    """One page; ``mailboxes`` (another's or every mailbox) says whose each line is."""
    if not page.items:
        if page.done_hidden:
            return (f"no unread or open mail ({page.done_hidden} done; "
                    "'mailslot inbox --all' shows them)")
        return f"no messages here; {page.archived_note()}" if page.archived \
            else "no messages"
    lines = []
    for item in page.items:
        m = item.message
        where = f" → {item.mailbox}" if mailboxes and not m.is_broadcast else ""
        kind = " (broadcast)" if m.is_broadcast else ""
        if m.instance is not None:  # for one session of the agent
            kind = f" (for @{m.instance[:8]})"
        subject = style.bold(for_terminal(m.subject)) if item.state == "unread" \
            else for_terminal(m.subject)
        lines.append(f"{_MARK[item.state]} {style.accent(item.shown_id)}  "
                     f"{style.dim(_date(m.date))}  {m.sender}{kind}{where}: {subject}")
    lines.append(style.dim(_LEGEND))
    if page.more:
        last = page.items[-1].shown_id
        lines.append(f"{page.more} more: mailslot inbox --before {last}")
    return "\n".join(lines)


def sent_list(page: list[Status], *, style: Style = PLAIN) -> str:
    """What I sent: one line per message, then each recipient's state."""
    if not page:
        return "nothing sent yet"
    lines = []
    for st in page:
        m = st.message
        states = _states(st.recipients)
        extra = " (retracted)" if st.retracted else ""
        lines.append(f"{style.accent(st.short or m.id)}  {style.dim(_date(m.date))}  "
                     f"to {_to(m)}{extra}: {m.subject}")
        lines.append(f"    {states or 'no recipients yet'}")
    return "\n".join(lines)


def whoami(me: WhoAmI) -> str:
    where = {"--agent": "the --agent option", "MAILSLOT_AGENT": "$MAILSLOT_AGENT",
             "git": f"the git checkout {me.git_toplevel}"}
    first = (f"agent:   {me.name} (from {where.get(me.source or '', me.source)})"
             if me.name else f"agent:   none ({me.problem})")
    lines = [first, f"mailbox: {me.mailbox}", f"store:   {me.store}"]
    if me.mailbox_missing:
        lines.append(f"note:    {me.mailbox_missing}")
    return "\n".join(lines)


def page_out(text: str) -> None:
    """Print ``text``; on a terminal, through a pager when it is taller than the screen."""
    if not sys.stdout.isatty():
        print(text)
        return
    import shutil

    if text.count("\n") + 1 < shutil.get_terminal_size().lines:
        print(text)
        return
    import pydoc

    os.environ.setdefault("LESS", "FRX")  # quit if one screen; keep colours
    pydoc.pager(text)


def full(item: Item, path: str | None, *, style: Style = PLAIN) -> str:
    m = item.message
    head = [
        f"id:       {style.accent(m.id)}",
        f"from:     {m.sender}",
        f"to:       {_to(m)}",
        f"date:     {_date(m.date)}",
        f"subject:  {style.bold(for_terminal(m.subject))}",
        f"state:    {item.state}"
        + (f" ({where_archived(m.id)})" if item.archived else ""),
    ]
    for label, value in (("re_issue", m.re_issue), ("in_reply_to", m.in_reply_to),
                         ("thread", m.thread)):
        if value:
            head.append(f"{label + ':':<10}{for_terminal(value)}")
    if m.expect_reply:
        head.append("expects:  a reply (mailslot reply ID)")
    if path:
        head.append(f"file:     {path}")
    return "\n".join(head) + "\n\n" + for_terminal(m.body)


def status(st: Status) -> str:
    """A message's delivery ladder, one block per recipient."""
    m = st.message
    lines = [f"{m.id}", f"  from {m.sender}: {for_terminal(m.subject)}",
             f"  stored {_date(m.date)}"]
    if m.notify_when:
        lines.append(f"  notify when: {m.notify_when}")
    if st.retracted:
        lines.append("  retracted")
    for r in st.recipients:
        lines.append(f"  {r.agent:<20} {_rung(r):<9} {r.state or 'missing'}".rstrip())
        lines += [f"    {label:<9} {text}" for label, text in _ladder(r)]
    for reply_id in st.replies:
        lines.append(f"  reply: {reply_id}")
    return "\n".join(lines)


def rungs(st: Status) -> str:
    """``bob stored, carol surfaced``: where each recipient is, in one line."""
    return ", ".join(f"{r.agent} {_rung(r)}" for r in st.recipients) or "no recipients"


def _rung(r: RecipientStatus) -> str:
    return "missing" if r.state is None else r.rung


def _ladder(r: RecipientStatus) -> list[tuple[str, str]]:
    """The rungs one recipient reached, with when and how, and why it waits."""
    rows: list[tuple[str, str]] = []
    if r.wake:
        why = f" ({r.wake['reason']})" if r.wake.get("reason") else ""
        rows.append(("wake", f"{str(r.wake.get('outcome')).replace('_', ' ')} by "
                             f"{r.wake.get('method') or '?'} {_date(str(r.wake.get('at')))}"
                             f"{why}"))
    if r.surfaced:
        s = r.surfaced
        more = f", {s['times']} times" if s.get("times", 1) > 1 else ""
        more += f", {s['again']} again (not seen)" if s.get("again") else ""
        rows.append(("surfaced", f"{_date(str(s.get('at')))} in {s.get('host') or '?'} "
                                 f"session {s.get('session') or '-'} by "
                                 f"{_HOW.get(str(s.get('how')), str(s.get('how')))}{more}"))
    if r.seen:
        rows.append(("seen", f"{_date(str(r.seen.get('at')))} in {r.seen.get('host') or '?'} "
                             "(its record shows the model was given it)"))
    elif r.surfaced and r.surfaced.get("marked") and r.state == "unread":
        rows.append(("seen", "not yet (its host's record does not show it given)"))
    for label, when in (("read", r.read_at), ("done", r.done_at), ("replied", r.replied_at)):
        if when:
            rows.append((label, _date(when)))
    if r.waiting:
        rows.append(("waiting", r.waiting))
    return rows


def stats(rows: list[dict[str, Any]]) -> str:
    """``mailslot stats``: one line per agent, host and step, with p50 and p99."""
    if not rows:
        return "no mail delivered in that time"
    table = [(r["agent"], r["host"], f"-> {r['step']}", str(r["count"]),
              _seconds(r["p50_seconds"]), _seconds(r["p99_seconds"])) for r in rows]
    head = ("AGENT", "HOST", "STEP", "N", "P50", "P99")
    widths = [max(len(row[i]) for row in [head, *table]) for i in range(len(head))]
    return "\n".join("  ".join(c.rjust(w) if i >= 3 else c.ljust(w)
                               for i, (c, w) in enumerate(zip(row, widths, strict=True)))
                     .rstrip() for row in [head, *table])


def _seconds(value: float) -> str:
    """``0.4 s``, ``12 s``, ``3.5 min``, ``2.0 h``."""
    if value < 10:
        return f"{value:.1f} s"
    if value < 120:
        return f"{value:.0f} s"
    return f"{value / 60:.1f} min" if value < 7200 else f"{value / 3600:.1f} h"


_HOW = {"start": "session start", "prompt": "a prompt", "midturn": "mid-turn",
        "stop": "stop", "tool": "a tool read", "notice": "a wake notice"}


def who(agents: list[AgentInfo], *, style: Style = PLAIN) -> str:
    """A table with a header; the last column says where mailslot knows each name from."""
    if not agents:
        return "no agents known yet"
    rows = [(a.name + (f" [gated: {a.gate_group}, {a.group_members} members]" if a.gate_group
                       else " [gated]" if a.gated else "") + _lifetime(a)
             + (f" [stale: link down since {_date(a.stale_since)}]" if a.stale_since else ""),
             str(a.unread), _presence(a),
             ", ".join(f"@{i}" for i in a.instances) or "-", a.subagent_of or "-", a.wake,
             a.notify, ", ".join(a.known_from)) for a in agents]
    head = ("AGENT", "UNREAD", "SERVER", "INSTANCES", "SUBAGENT OF", "WAKE", "NOTIFY",
            "KNOWN FROM")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]

    def line(row: tuple[str, ...]) -> str:
        cells = [row[0].ljust(widths[0]), row[1].rjust(widths[1]),
                 *(c.ljust(w) for c, w in zip(row[2:], widths[2:], strict=True))]
        return "  ".join(cells).rstrip()

    watching = next((a.watcher for a in agents if a.watcher), None)
    tail = [f"watcher: {watching.describe()}"] if watching else []
    tail += [f"unsurfaced: {a.name} has {'at least ' if a.unsurfaced_more else ''}"
             f"{a.unsurfaced} unread message(s) no model was "
             f"shown, the oldest from {_date(a.unsurfaced_since or '')} (mailslot status "
             "ID says why)" for a in agents if a.unsurfaced]
    tail += [f"unseen: {a.name} has {a.unseen} unread message(s) shown to its sessions "
             "that their host's record never showed given to the model (mailslot status "
             "ID shows each showing)" for a in agents if a.unseen]
    return "\n".join([style.bold(line(head)), *(line(r) for r in rows), *tail])


def _lifetime(agent: AgentInfo) -> str:
    """When a registered agent's credential expires, or that it has."""
    if agent.expires is None:
        return ""
    return (f" [expired {_date(agent.expires)}]" if agent.expired
            else f" [expires {_date(agent.expires)}]")


def _presence(agent: AgentInfo) -> str:
    if agent.online:
        programs = sorted({s.program or "?" for s in agent.sessions})
        return f"online ({', '.join(programs)})"
    if agent.last_seen:
        return f"last seen {_date(agent.last_seen)}"
    return "no server seen"


def doctor(report: DoctorReport) -> str:
    lines = [f"mailbox: {report.location}"]
    if report.watcher is not None and (report.watcher.wanted or report.watcher.running):
        lines.append(f"watcher: {report.watcher.describe()}")
    lines += [f"wake path: {r}" for r in report.routes]
    lines += [f"bridge: {b}" for b in report.bridges]
    lines += [f"fixed: {f}" for f in report.fixed]
    lines += [f"problem: {p}" for p in report.problems]
    if report.healthy:
        lines.append("ok: no problems found")
    if not report.deep:
        lines.append(_CHECKED.get(report.kind, _CHECKED["files"]))
    return "\n".join(lines)


_CHECKED = {
    "files": "checked: the layout, the counts and the newest 200 files of each folder; "
             "done mail and archives were left out (`mailslot doctor --deep` checks every "
             "file and reads every message)",
    "postgresql": "checked: the schema's version, the rows whose sender looks forged, "
                  "the quarantine table, the config and the wakes; no other message was "
                  "read (`mailslot doctor --deep` reads every message and names the "
                  "unreadable ones)"}
"""What a bounded ``doctor`` looked at, in the store's own terms (by its kind)."""


def wake_diagnosis(found: Diagnosis) -> str:
    """``doctor --wake``: the configured wake and its probe, then the ladder in order."""
    choice = found.choice
    lines = [f"{found.agent}: {found.opt_in}; wake_method: {found.method or 'not set'}"]
    lines += [f"  problem now: {w}" for w in found.warnings]
    if found.ok:
        lines.append("  probe: nothing wrong is visible now")
    version = f" {choice.version}" if choice.version else ""
    lines.append(f"ladder of {choice.title}{version} (install --wake takes the first ✓):")
    if not choice.steps:
        lines.append(f"  none: {choice.unreachable}")
    for n, step in enumerate(choice.steps, 1):
        mark = "✓" if step.ok else "✗"
        tags = " (configured)" if step.method == found.method else ""
        tags += " ← chosen" if step is choice.chosen else ""
        lines.append(f"  {n}. {mark} {step.method}{tags}: {step.said}")
    return "\n".join(lines)


def installed(report: Report) -> str:
    """What ``install`` did (or, with --dry-run, would do) to each file, then advice;
    one line, and only notes not shown before, when it changed nothing."""
    if report.quiet:
        return "\n".join([f"{report.host.title} already runs mailslot as agent "
                          f"'{report.agent}': nothing changed.",
                          *(f"note: {n}" for n in report.notes)])
    lines: list[str] = []
    for change in report.changes:
        if report.dry_run and change.changed:
            lines.append(change.diff().rstrip("\n"))
            if change.real != change.path:
                lines.append(f"(writes {change.shown})")
        elif not change.changed:
            lines.append(f"unchanged: {change.shown}")
        else:
            lines.append(f"{'updated' if change.before is not None else 'created'}: "
                         f"{change.shown}")
    lines += [f"note: {n}" for n in report.notes]
    if report.dry_run:
        lines.append("dry run: nothing was written")
    elif any(c.changed for c in report.changes):
        lines.append(f"{report.host.title} now runs mailslot as agent '{report.agent}'; "
                     "restart it (or start a new session) to load the change.")
    else:
        lines.append(f"{report.host.title} already runs mailslot as agent "
                     f"'{report.agent}'.")
    return "\n".join(lines)


# Registered agents
def registered(found: list[dict[str, object]]) -> str:
    """``agent list`` / ``agent show``: one line per registered agent (no secret, no hash)."""
    if not found:
        return "no registered agents (mailslot agent add NAME)"
    return "\n".join(
        f"{r['name']}  generation {r['generation']}"
        + (f"  child of {r['parent']}" if r["parent"] else "")
        + (f"  runtime {r['runtime']}" if r["runtime"] else "")
        + ("  REVOKED" if r["revoked"] else "") + f"  since {r['created']}"
        + (f"  EXPIRED at {r['expires']}" if r.get("expired")
           else f"  expires {r['expires']}" if r.get("expires") else "")
        for r in found)


def gate(status: dict[str, object]) -> str:
    """``gate``: whether the inbox is gated, its members and waiting requests."""
    accept = "members only (gated)" if status["accept"] == "members" else "anyone (open)"
    lines = [f"{status['agent']} accepts mail from {accept}"]
    if status.get("group"):
        agents = status.get("group_agents")
        assert isinstance(agents, list)
        lines.append(f"group gate {status['group']}, shared by {', '.join(agents)}")
    for key in ("members", "pending"):
        names = status[key]
        assert isinstance(names, list)
        lines.append(f"{key}: {', '.join(names) if names else 'none'}")
    return "\n".join(lines)


def paused(names: list[str], agent: str | None, paused: bool) -> str:
    """``pause``/``resume`` of ``agent`` (``None``: every agent): what was done, then who
    the loop governor holds now (``names``)."""
    named = agent.lower() if agent and agent.lower() != "all" else "every agent"
    done = f"{'paused' if paused else 'resumed'} {named}"
    if "all" in names:
        held = "every agent is paused now (mailslot resume)"
        return done + ("; " if paused else ", but ") + held
    if not names:
        return f"{done}; nobody is paused now"
    return f"{done}; paused now: {', '.join(names)}"


def sessions(found: list[dict[str, object]]) -> str:
    """``sessions``: one line per session, a server's or a host session its hooks ran in."""
    if not found:
        return "no sessions recorded"
    return "\n".join(
        f"{s['agent']}@{s['session'] or '-'}  {s['program'] or '?'} "
        + ("hooks" if s.get("kind") == "hook" else "server")
        + (f" pid {s['pid']}" if s.get("pid") is not None else "") + "  "
        f"since {s['started']}  " + ("online" if s["online"] else "offline")
        + (f" (last hook {s['last_seen']})" if s.get("kind") == "hook" else "")
        + (f"  replaced by {s['replaced_by']}" if s["replaced_by"] else "")
        for s in found)


# Starting agent sessions
def started(result: Started) -> str:
    """What ``start`` did: the outcome, where the session runs, and how to reach it."""
    lines = [f"{result.host}: {result.outcome.replace('_', ' ')}"
             + (f": {result.error}" if result.error else "")]
    for label, value in (("folder", result.folder), ("model", result.model),
                         ("mode", result.permission_mode), ("session", result.session_id),
                         ("pid", result.pid), ("tmux", result.tmux_target),
                         ("agent", result.register_as)):
        if value is not None:
            lines.append(f"  {label + ':':9}{for_terminal(str(value))}")
    return "\n".join(lines)


def started_sessions(records: list[dict[str, object]]) -> str:
    """The session log, one line each: when, host, outcome, folder, from whom."""
    if not records:
        return "no sessions started yet"
    return "\n".join(
        for_terminal(f"{r.get('ts', '?')}  {r.get('launcher', '?'):11} "
                     f"{r.get('outcome', '?'):11} {r.get('folder', '?')}  from "
                     f"{r.get('from') or '?'}" + (f" as {r['register_as']}"
                                                  if r.get("register_as") else ""))
        for r in records)


# Search and threads ---------------------------------------------------------
def found(items: Found, *, style: Style = PLAIN) -> str:
    """Search hits, best first: the inbox's line, then the body's first line; an
    archived hit is marked, and a last line says what the search did not cover yet."""
    if not items:
        return "\n".join(filter(None, ["no messages match", items.still_indexing]))
    lines = []
    for item in items:
        m = item.message
        kind = " (broadcast)" if m.is_broadcast else " (archived)" if item.archived else ""
        first = for_terminal(next((ln for ln in m.body.splitlines() if ln.strip()), ""))
        lines.append(f"{_MARK[item.state]} {style.accent(item.shown_id)}  "
                     f"{style.dim(_date(m.date))}  {m.sender}{kind}: "
                     f"{for_terminal(m.subject)}")
        if first:
            lines.append(f"    {first[:100]}")
    lines.append(style.dim(_LEGEND))
    if items.still_indexing:
        lines.append(items.still_indexing)
    return "\n".join(lines)


def months(counts: dict[str, int], done: str, nothing: str) -> str:
    """Message copies per archived month: ``archived 2026-03: 120 message(s)``."""
    if not counts:
        return f"no done mail {nothing}" if nothing != "archived" else "no archives"
    return "\n".join(f"{done} {month}: {n} message(s)" for month, n in counts.items())


def thread(entries: list[ThreadEntry], *, style: Style = PLAIN) -> str:
    """A conversation, oldest first: each message whole, with every recipient's state."""
    if not entries:
        return "no messages in this thread"
    parts = []
    for entry in entries:
        m = entry.message
        states = _states(entry.status.recipients)
        head = (f"{style.accent(m.id)}  {style.dim(_date(m.date))}\n"
                f"{m.sender} → {', '.join(m.to)}: {style.bold(for_terminal(m.subject))}\n"
                f"[{states or 'no recipients yet'}]")
        parts.append(head + "\n\n" + for_terminal(m.body))
    return "\n\n".join(parts)


def _states(recipients: list[RecipientStatus]) -> str:
    """``reviewer read, builder stored (why)``: each recipient's rung, in one line."""
    return ", ".join(f"{r.agent} {_rung(r)}" + (f" ({r.waiting})" if r.waiting else "")
                     for r in recipients)


def peers(me: dict[str, object], found: list[dict[str, object]]) -> str:
    """This node and each peer: its destination, key, roster, link and queue."""
    lines = [f"this node: {me.get('node')} (key {me.get('fingerprint') or 'not made yet'})"]
    if not found:
        lines.append("no peers yet (mailslot peer add NAME SSH_DEST)")
    for peer in found:
        link = peer.get("link")
        state = "not tried yet" if not isinstance(link, dict) else (
            f"up, last exchange {_date(str(link.get('last_ok')))}" if link.get("up")
            else f"down since {_date(str(link.get('since')))}: {link.get('error')}")
        roster = peer.get("roster") or []
        lines += [f"{peer['name']}  {peer.get('ssh') or '(connects here)'}",
                  f"  key      {peer.get('fingerprint') or 'not pinned yet'}",
                  f"  agents   {', '.join(map(str, roster)) if roster else '-'}",  # type: ignore[call-overload]
                  f"  link     {state}",
                  f"  queued   {peer.get('queued')}"]
    return "\n".join(lines)


def peer_added(added: dict[str, object]) -> str:
    if added.get("ssh") is None:
        return f"peer {added['name']} added: {added.get('note')}"
    roster = added.get("roster") or []
    verb = "pinned" if added.get("new") else "already pinned, unchanged"
    return (f"peer {added['name']} at {added['ssh']}: node key {added['fingerprint']} "
            f"({verb}); this node {added.get('node')} is {added.get('own_fingerprint')}\n"
            f"  agents: {', '.join(map(str, roster)) or '-'}")  # type: ignore[call-overload]


def synced(done: list[dict[str, object]]) -> str:
    if not done:
        return "no peer this node reaches (mailslot peer add NAME SSH_DEST)"
    return "\n".join(f"{d['name']}: {d['moved']} envelope(s) moved" if d["ok"]
                     else f"{d['name']}: failed: {d['error']}" for d in done)
