"""The everyday commands against a remote ``serve --http``: ``send``, ``inbox``, ``read``,
``done`` and ``reply`` with ``--remote URL [--credential FILE]``.

Same options, same output (text or ``--json``) and exit codes as the local commands: the
server runs the same service call and answers the CLI's JSON shapes, which this prints
with the same renderers. The identity is the credential's; ``--agent`` and ``--dir`` do
not apply.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from ...core.message import Message
from ...core.results import InboxPage, Item, Page
from ...core.text import DEFAULT_MAX_BODY_BYTES, piped_body
from ..http.client import Remote, read_secret
from . import render


def run(command: str, args: argparse.Namespace) -> int:
    """Run one everyday command remotely; errors are raised for the CLI to translate."""
    remote = Remote(args.remote, read_secret(args.credential))
    return _HANDLERS[command](args, remote)


def _send(args: argparse.Namespace, remote: Remote) -> int:
    to = args.to
    answer = remote.post("send", {
        "to": to, "subject": args.subject, "body": _body(args), "re_issue": args.re_issue,
        "expect_reply": args.expect_reply, "wake": args.wake, "new": args.new,
        "notify_when": args.notify_when, "ack": args.ack})
    message = answer["message"]
    _emit(args, message, render.sent(_message(message)))
    for note in answer.get("notes", []):
        print(f"mailslot: note: {note}", file=sys.stderr)
    return 0


def _inbox(args: argparse.Namespace, remote: Remote) -> int:
    answer = remote.get("inbox", **{"for": args.for_, "all": args.all, "unread": args.unread,
                                    "limit": args.limit, "page": args.page,
                                    "before": args.before})
    items = [_item(i) for i in answer["items"]]
    page = InboxPage(Page(items, answer["unreadable"]), answer["more"], answer["done_hidden"])
    _emit(args, answer["items"], render.inbox(page, mailboxes=args.for_ is not None))
    return 0


def _read(args: argparse.Namespace, remote: Remote) -> int:
    item = remote.post("read", {"id": args.id, "peek": args.peek})
    _emit(args, item, render.full(_item(item), None))
    return 0


def _done(args: argparse.Namespace, remote: Remote) -> int:
    answer = remote.post("done", {"ids": args.ids, "all": args.all})
    _emit(args, answer["items"],
          "\n".join(f"done: {i['id']}" for i in answer["items"]) or "nothing to mark done")
    if answer["missing"]:
        print(f"mailslot: no message {answer['missing_text']}", file=sys.stderr)
        return 1
    return 0


def _reply(args: argparse.Namespace, remote: Remote) -> int:
    message = remote.post("reply", {"id": args.id, "body": _body(args),
                                    "subject": args.subject, "ack": args.ack})
    _emit(args, message, render.sent(_message(message)))
    return 0


_HANDLERS: dict[str, Callable[[argparse.Namespace, Remote], int]] = {
    "send": _send, "inbox": _inbox, "read": _read, "done": _done, "reply": _reply}


def _body(args: argparse.Namespace) -> str:
    if args.body is not None:
        return str(args.body)
    return piped_body(sys.stdin, DEFAULT_MAX_BODY_BYTES)


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    print(json.dumps(data, ensure_ascii=False, indent=2) if args.json else text)


def _message(d: dict[str, Any]) -> Message:
    return Message(d["id"], d["date"], d["from"], tuple(d["to"]), d["subject"],
                   d.get("body", ""), d.get("re_issue"), d.get("in_reply_to"),
                   d.get("thread"), bool(d.get("expect_reply")), d.get("delivery", "inbox"))


def _item(d: dict[str, Any]) -> Item:
    short = d.get("short", "")
    return Item(_message(d), d["state"], d["mailbox"], "" if short == d["id"] else short)
