"""Plain-text views of service results, for people at a terminal.

Nothing here decides anything; it only lays out what the service returned.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .message import Message
from .results import AgentInfo, DoctorReport, Item, Status
from .text import for_terminal

if TYPE_CHECKING:
    from .install.run import Report

_MARK = {"unread": "*", "read": " ", "done": "✓"}


def _date(iso: str) -> str:
    """``2026-09-21T16:48:08.123456+02:00`` as ``2026-09-21 16:48``."""
    return iso[:16].replace("T", " ")


def sent(message: Message) -> str:
    return f"sent {message.id} to {', '.join(message.to)}"


def inbox(items: list[Item], *, mailboxes: bool = False) -> str:
    """One page; ``mailboxes`` (another's or every mailbox) says whose each line is."""
    if not items:
        return "no messages"
    lines = []
    for item in items:
        m = item.message
        where = f" → {item.mailbox}" if mailboxes and not m.is_broadcast else ""
        kind = " (broadcast)" if m.is_broadcast else ""
        lines.append(
            f"{_MARK[item.state]} {_date(m.date)}  {m.sender}{kind}{where}: "
            f"{for_terminal(m.subject)}"
        )
        lines.append(f"    {m.id}")
    return "\n".join(lines)


def full(item: Item, path: str | None) -> str:
    m = item.message
    head = [
        f"id:       {m.id}",
        f"from:     {m.sender}",
        f"to:       {', '.join(m.to)}",
        f"date:     {m.date}",
        f"subject:  {for_terminal(m.subject)}",
        f"state:    {item.state}",
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
    m = st.message
    lines = [f"{m.id}", f"  from {m.sender}: {for_terminal(m.subject)}"]
    if st.retracted:
        lines.append("  retracted")
    for r in st.recipients:
        state = r.state or "missing"
        when = ", ".join(
            f"{label} {_date(t)}" for label, t in (("read", r.read_at), ("done", r.done_at)) if t
        )
        lines.append(f"  {r.agent:<20} {state:<8} {when}".rstrip())
    for reply_id in st.replies:
        lines.append(f"  reply: {reply_id}")
    return "\n".join(lines)


def who(agents: list[AgentInfo]) -> str:
    if not agents:
        return "no agents known yet"
    width = max(len(a.name) for a in agents)
    wake = max(len(a.wake) for a in agents) + len("wake: ")
    return "\n".join(
        f"{a.name:<{width}}  {a.unread:>4} unread  {_presence(a):<24}  "
        f"{'wake: ' + a.wake:<{wake}}  ({', '.join(a.known_from)})"
        for a in agents
    )


def _presence(agent: AgentInfo) -> str:
    if agent.online:
        programs = sorted({s.program or "?" for s in agent.sessions})
        return f"online ({', '.join(programs)})"
    if agent.last_seen:
        return f"last seen {_date(agent.last_seen)}"
    return "no server seen"


def doctor(report: DoctorReport) -> str:
    lines = [f"mailbox: {report.location}"]
    lines += [f"fixed: {f}" for f in report.fixed]
    lines += [f"problem: {p}" for p in report.problems]
    if report.healthy:
        lines.append("ok: no problems found")
    return "\n".join(lines)


def installed(report: Report) -> str:
    """What ``install`` did (or, with --dry-run, would do) to each file, then advice."""
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
                     f"'{report.agent}'; nothing to do.")
    return "\n".join(lines)
