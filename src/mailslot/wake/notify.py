"""Notifiers: telling someone that mail arrived, without waking anyone.

Per agent, in ``config.json``, a list run by the watcher for every directed message the
agent receives, whatever ``wake_on_mail`` says::

    "agents": {"reviewer": {"notify": [
        {"kind": "command", "command": ["notify-me", "{from}", "{id}"]},
        {"kind": "desktop"},
        {"kind": "bank"}]}}

``command`` is the wake method of that name (an argv template, no shell, the message as
JSON on stdin); ``desktop`` is the platform's own notifier (``notify-send``,
``osascript``), naming sender and id only unless ``"subjects": true``; ``bank`` keeps a
folder of notices (:mod:`.bank`).

Each notifier has its own queue (:func:`.claims.notifier_queue`, the lane being its place
in the list), run by :class:`NotifyRunner`: the wake runner with another plan, so the
claim, retry, backoff and logging are the wake queue's own (events ``notify_queued``,
``notify_attempt``, ``notify_ok``, ``notify_failed``, ``notify_skipped``: ids, names and
our reasons, never a subject or a body). A notifier that fails for good tells nobody
(it has no one to tell that would not be another notice); it never blocks a wake or a
delivery, which have queues of their own.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

from ..core.config import Config
from ..core.errors import MailslotError, StoreError
from ..core.framing import one_line
from ..core.ids import reference
from ..core.message import Message
from ..store import Store, WakeEntry
from .bank import BankNotifier
from .claims import notifier_queue
from .methods import ArgvMethod, CommandMethod, Field, Job, WakeMethod, where
from .notify_queue import MAX_NOTIFIERS, NOTIFIER_KINDS, label, notifier_entries
from .policy import WakeSettings, retry_for
from .runner import WakeRunner, _Plan

_SUBJECT_CHARS = 80


class DesktopNotifier(ArgvMethod):
    name = "desktop"
    summary = "shows a desktop notification (notify-send on Linux, osascript on macOS)"
    needs = ("`notify-send` (libnotify) on Linux or `osascript` on macOS, on the watcher's "
             "PATH, and a desktop session the watcher can reach",)
    limits = ("names the sender and the message id; the subject only with "
              '`"subjects": true`, never the body',)
    fields = (
        Field("subjects", "true: show each message's subject too (default false)",
              required=False),
        Field("executable", "the notifier program, if not notify-send/osascript",
              required=False),
    )

    def __init__(self, agent: str, executable: str, subjects: bool, mac: bool) -> None:
        super().__init__(agent, executable)
        self.subjects = subjects
        self.mac = mac

    @classmethod
    def from_config(cls, agent: str, cfg: Mapping[str, Any]) -> DesktopNotifier:
        subjects = cfg.get("subjects", False)
        if not isinstance(subjects, bool):
            raise StoreError(f"{where(agent, 'subjects')} must be true or false")
        mac = sys.platform == "darwin"
        executable = cfg.get("executable", "osascript" if mac else "notify-send")
        if not isinstance(executable, str) or not executable or "\x00" in executable:
            raise StoreError(f"{where(agent, 'executable')} must be non-empty text")
        return cls(agent, executable, subjects, mac)

    def text(self, job: Job) -> str:
        """One line per message: sender and id (and subject, if allowed)."""
        lines = []
        for message in job.messages:
            line = f"{one_line(message.sender)} sent message {reference(one_line(message.id))}"
            if self.subjects and message.subject:
                subject = one_line(message.subject)
                if len(subject) > _SUBJECT_CHARS:
                    subject = subject[:_SUBJECT_CHARS - 3] + "..."
                line += f": {subject}"
            lines.append(line)
        return "\n".join(lines)

    def argv(self, job: Job) -> list[str]:
        title = f"mailslot: mail for {job.agent}"
        if self.mac:  # the text goes in as data (argv), never into AppleScript source
            return [self.executable, "-e", "on run argv", "-e",
                    "display notification (item 2 of argv) with title (item 1 of argv)",
                    "-e", "end run", title, self.text(job)]
        # notify-send reads a little markup in the body: no < or & reaches it as such
        body = self.text(job).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        return [self.executable, "--app-name=mailslot", title, body]


KINDS: dict[str, type[WakeMethod]] = {
    "command": CommandMethod, "desktop": DesktopNotifier, "bank": BankNotifier,
}
assert tuple(KINDS) == NOTIFIER_KINDS


def notifier_at(config: Config, agent: str, lane: int) -> WakeMethod:
    """The checked notifier at place ``lane`` of ``agent``'s list."""
    entries = notifier_entries(config, agent)
    if lane >= len(entries):
        raise StoreError(f"config.json: agents.{agent}.notify has no notifier {lane} "
                         "(removed since the notice was queued)")
    kind = str(entries[lane]["kind"])
    return KINDS[kind].from_config(f"{agent}.notify[{lane}]", entries[lane])


def notifier_lines(store: Store, config: Config, agent: str) -> tuple[list[str], list[str]]:
    """What ``watch --validate`` says of ``agent``'s notifiers: lines, and problems."""
    try:
        entries = notifier_entries(config, agent)
    except MailslotError as exc:
        return [], [str(exc)]
    lines: list[str] = []
    problems: list[str] = []
    sample = Message(id="<message-id>", date="", sender="<sender>", to=(agent,), subject="")
    job = Job(agent, (sample,), "", store, 0)
    for lane, item in enumerate(entries):
        try:
            method = notifier_at(config, agent, lane)
        except MailslotError as exc:
            problems.append(str(exc))
            continue
        lines.append(f"notify[{lane}]: {item['kind']}: {method.summary}")
        lines += [f"  → {line}" for line in method.preview(job)]
        lines += [f"  warning: {w}" for w in method.probe()]
    return lines, problems


class NotifyRunner(WakeRunner):
    """Runs one notifier queue (``lane``): the wake runner, planned from ``notify``."""

    kind = "notify"

    def __init__(self, store: Store, lane: int, **options: Any) -> None:
        super().__init__(store, queue=notifier_queue(store, lane), **options)
        self.lane = lane

    def _plan(self, agent: str) -> _Plan:
        try:
            config = Config(self.store.load_config())
            method = notifier_at(config, agent, self.lane)
            retry = retry_for(config, agent)
        except MailslotError as exc:
            return _Plan(None, None, str(exc))
        fields = notifier_entries(config, agent)[self.lane]
        settings = WakeSettings(agent, "always", label(self.lane, fields), fields, retry)
        return _Plan(settings, method, None, config)

    def _wanted(self, settings: WakeSettings | None) -> tuple[str, ...]:
        # The bank keeps a notice until the message is done; the others only tell of
        # mail nobody has read yet.
        bank = settings is not None and settings.fields.get("kind") == BankNotifier.name
        return ("unread", "read") if bank else ("unread",)

    def _give_up(self, entry: WakeEntry, outcome: Any) -> str | None:
        return None  # logged and shown by the watcher; nobody to tell


def notify_runners(store: Store, **options: Any) -> list[NotifyRunner]:
    """A runner for every notifier queue."""
    return [NotifyRunner(store, lane, **options) for lane in range(MAX_NOTIFIERS)]
