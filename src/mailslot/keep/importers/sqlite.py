"""The SQLite stores of agent-mailbox and mcp-agent-mail (both on PyPI), read only.

agent-mailbox (``<home>/workbench/state.db``): ``messages`` with ``employees`` as sender
and recipient. ``title`` is the subject, ``created_at`` the date, ``reply_to`` and
``thread_id`` map. A message without a sender came from the person at the workbench
(imported as from ``owner``); one without a recipient went to the whole project
(imported as a broadcast). agent-mailbox has no read state on purpose, so everything
arrives unread. Not mapped: the project, ``request_work``, tasks.

mcp-agent-mail (``storage.sqlite3``): ``messages``, ``agents`` and
``message_recipients``. To, cc and bcc all become recipients; ``read_ts`` makes a
message read and ``ack_ts`` done for that recipient; ``ack_required`` becomes
``expect_reply``; ``thread_id`` maps when it names a message. Its agent names
(``GreenCastle``) are lowercased. Not mapped: the project, ``importance``,
attachments (reported when present).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator

from ...core.errors import InvalidInput
from ...core.message import State
from ..importing import Foreign, Report, Source

_FILES = {"agent-mailbox": ("workbench/state.db", "state.db"),
          "mcp-agent-mail": ("storage.sqlite3",)}


def open_source(fmt: str, path: str, report: Report) -> Source:
    found = path if os.path.isfile(path) else next(
        (os.path.join(path, f) for f in _FILES[fmt] if os.path.isfile(os.path.join(path, f))),
        None)
    if found is None:
        raise InvalidInput(f"no {fmt} database at {path} (looked for "
                           f"{', '.join(_FILES[fmt])})")
    try:
        db = sqlite3.connect(f"file:{found}?mode=ro", uri=True)
        db.row_factory = sqlite3.Row
        db.execute("SELECT count(*) FROM messages").fetchone()
    except sqlite3.Error as exc:
        raise InvalidInput(f"{found} is not a {fmt} database ({exc})") from None
    return (AgentMailbox if fmt == "agent-mailbox" else McpAgentMail)(db, report)


class AgentMailbox(Source):
    def __init__(self, db: sqlite3.Connection, report: Report) -> None:
        super().__init__(report)
        self.db = db

    def messages(self) -> Iterator[Foreign]:
        rows = self.db.execute(
            "SELECT m.*, s.name AS sender_name, r.name AS recipient_name, p.name AS project"
            " FROM messages m LEFT JOIN employees s ON s.id = m.sender_id"
            " LEFT JOIN employees r ON r.id = m.recipient_id"
            " LEFT JOIN projects p ON p.id = m.project_id ORDER BY m.created_at, m.id")
        self.report.note("agent-mailbox keeps no read state: every message arrives unread")
        for row in rows:
            if row["sender_id"] is None:
                self.report.note("agent-mailbox mail from the person at the workbench is "
                                 "imported as from 'owner'")
            yield Foreign(
                key=row["id"], sender=row["sender_name"] or "owner",
                to=[row["recipient_name"]] if row["recipient_name"] else [],
                broadcast=row["recipient_id"] is None, subject=row["title"],
                body=row["body"], date=row["created_at"], in_reply_to=row["reply_to"],
                thread=row["thread_id"] if row["thread_id"] != row["id"] else None,
                extra={"project": row["project"], "request_work": bool(row["request_work"]),
                       "task_id": row["task_id"]})


class McpAgentMail(Source):
    def __init__(self, db: sqlite3.Connection, report: Report) -> None:
        super().__init__(report)
        self.db = db

    def messages(self) -> Iterator[Foreign]:
        names = {r["id"]: r["name"] for r in self.db.execute("SELECT id, name FROM agents")}
        projects = {r["id"]: r["human_key"]
                    for r in self.db.execute("SELECT id, human_key FROM projects")}
        recipients: dict[int, list[sqlite3.Row]] = {}
        for row in self.db.execute("SELECT * FROM message_recipients"):
            recipients.setdefault(row["message_id"], []).append(row)
        for row in self.db.execute("SELECT * FROM messages ORDER BY created_ts, id"):
            to, states = [], {}
            for r in recipients.get(row["id"], []):
                name = names.get(r["agent_id"], f"agent-{r['agent_id']}")
                to.append(name)
                if r["kind"] != "to":
                    self.report.note(f"mcp-agent-mail {r['kind']} recipients are imported "
                                     "as recipients")
                state: State | None = "done" if r["ack_ts"] else "read" if r["read_ts"] \
                    else None
                if state:
                    states[name] = state
            thread = row["thread_id"]
            yield Foreign(
                key=str(row["id"]), sender=names.get(row["sender_id"], "unknown-sender"),
                to=to, subject=row["subject"], body=row["body_md"], date=row["created_ts"],
                states=states, thread=thread if thread and thread != str(row["id"]) else None,
                expect_reply=bool(row["ack_required"]),
                extra={"project": projects.get(row["project_id"]),
                       "importance": None if row["importance"] == "normal"
                       else row["importance"],
                       "attachments": None if row["attachments"] in (None, "[]")
                       else row["attachments"]})
