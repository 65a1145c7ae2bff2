"""The mail commands: send, inbox, sent, read, mark-read, done, reply, broadcast,
retract, status. ``send``, ``inbox``, ``read``, ``done`` and ``reply`` also run against a
``serve --http`` server (``--remote URL``, :mod:`.remote_cli`)."""

from __future__ import annotations

import sys

from ...core.errors import InvalidInput, MailslotError, Throttled
from ...core.message import NOTIFY_RUNGS
from ...core.text import piped_body
from . import render
from .command import Command, emit, limit_option, style

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable

    from ...core.message import Message
    from ...service.mailbox import Mailbox


def _body_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--body", help="message text (default: read from stdin)")


def _body(args: argparse.Namespace, box: Mailbox) -> str:
    """The body from --body or stdin; identity is checked first so a refusal never waits."""
    box.check_identity()
    if args.body is not None:
        return str(args.body)
    return piped_body(sys.stdin, box.max_body_bytes)


def _kept(args: argparse.Namespace, body: str, deliver: Callable[[str], Message]) -> Message:
    """``deliver(body)``; when the loop governor stops it, a body read from stdin is
    written back on stdout unchanged (the error line goes to stderr), so nothing typed
    or piped is lost. A ``--body`` is still in the command line."""
    try:
        return deliver(body)
    except Throttled:
        if args.body is None:
            sys.stdout.write(body)
            sys.stdout.flush()
        raise


def _notes(box: Mailbox) -> None:
    """What the service wants the user told besides the result (stderr, not data)."""
    for note in box.notes:
        print(f"mailslot: note: {note}", file=sys.stderr)


SEND = Command("send", "Send a message to one or more agents.", remote=True, examples=[
    "mailslot send --to reviewer --subject 'Schema ready' --body 'See PR 12.'",
    "git diff | mailslot send --to builder,reviewer --subject 'Review this' --wake"])


@SEND.arguments
def _send_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--to", required=True, action="append",
                   help="recipient name; repeat or separate with commas for several")
    p.add_argument("--subject", required=True, help="one line, at most 200 characters")
    _body_option(p)
    p.add_argument("--re-issue", help="the issue or ticket this is about, stored as given")
    p.add_argument("--expect-reply", action="store_true", help="ask the recipient to answer")
    p.add_argument("--wake", action="store_true",
                   help="ask for the recipient to be woken (its own config decides)")
    p.add_argument("--new", action="store_true",
                   help="send even to a new name close to a known agent's (not a typo)")
    p.add_argument("--notify-when", choices=NOTIFY_RUNGS, metavar="RUNG",
                   help="one notice from mailslot when the first recipient's copy is "
                        "surfaced (shown to a model), read or done")
    _ack_option(p)


def _ack_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ack", action="store_true",
                   help="it only acknowledges (thanks, noted): delivered, it wakes nobody "
                        "(a short text of thanks alone is taken for one anyway)")


@SEND.handler
def _send(args: argparse.Namespace, box: Mailbox) -> int:
    message = _kept(args, _body(args, box), lambda body: box.send(
        args.to, args.subject, body,
        re_issue=args.re_issue, expect_reply=args.expect_reply, wake=args.wake, new=args.new,
        notify_when=args.notify_when, ack=args.ack,
    ))
    emit(args, message.as_dict(), render.sent(message))
    _notes(box)
    return 0


INBOX = Command("inbox", "List messages, newest first, without reading their bodies.",
                remote=True, existing=True, examples=[
                    "mailslot inbox", "mailslot inbox --page 2",
                    "mailslot inbox --all --limit 50", "mailslot inbox --for all"])


@INBOX.arguments
def _inbox_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--for", dest="for_", metavar="NAME|all", help="another mailbox, or all")
    p.add_argument("--all", action="store_true", help="include done mail and served broadcasts")
    p.add_argument("--unread", action="store_true", help="only unread mail")
    limit_option(p)
    p.add_argument("--page", type=int, default=1, help="which page (default 1)")
    p.add_argument("--before", metavar="ID", help="the page after this message")


@INBOX.handler
def _inbox(args: argparse.Namespace, box: Mailbox) -> int:
    page = box.page(args.for_, include_done=args.all, unread_only=args.unread,
                    limit=args.limit, number=args.page, before=args.before)
    emit(args, [i.as_dict() for i in page.items],
         render.inbox(page, mailboxes=args.for_ is not None, style=style(args)))
    _notes(box)
    if page.items.unreadable:
        print(f"mailslot: {page.items.unreadable} unreadable message file(s) skipped; "
              "mailslot doctor names them", file=sys.stderr)
    return 0


SENT = Command("sent", "What you sent, newest first, with each recipient's state.",
               existing=True, examples=["mailslot sent", "mailslot sent --limit 5 --json"])
SENT.arguments(limit_option)


@SENT.handler
def _sent(args: argparse.Namespace, box: Mailbox) -> int:
    page = box.sent(limit=args.limit)
    emit(args, [s.as_dict() for s in page], render.sent_list(page, style=style(args)))
    _notes(box)
    return 0


READ = Command("read", "Show a message in full and mark it read.", remote=True,
               existing=True, examples=[
    "mailslot read 7f3a9c2e", "mailslot read 2026-09-21_1448 --peek"])


@READ.arguments
def _read_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("id")
    p.add_argument("--peek", action="store_true", help="do not mark it read")


@READ.handler
def _read(args: argparse.Namespace, box: Mailbox) -> int:
    item = box.read(args.id, mark=not args.peek)
    if args.json:
        emit(args, item.as_dict(with_body=True), "")
    else:
        render.page_out(render.full(item, box.path_of(item), style=style(args)))
    return 0


def _one_id(p: argparse.ArgumentParser) -> None:
    p.add_argument("id")


MARK_READ = Command("mark-read", "Mark a message read without showing it.",
                    existing=True, examples=["mailslot mark-read 7f3a9c2e"])
MARK_READ.arguments(_one_id)


@MARK_READ.handler
def _mark_read(args: argparse.Namespace, box: Mailbox) -> int:
    item = box.mark_read(args.id)
    emit(args, item.as_dict(), f"{item.state}: {item.message.id}")
    return 0


DONE = Command("done", "Mark messages handled (they are kept, never deleted).", remote=True,
               existing=True, examples=["mailslot done 7f3a9c2e 81be02d4", "mailslot done --all"])


@DONE.arguments
def _done_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("ids", nargs="*", metavar="ID")
    p.add_argument("--all", action="store_true",
                   help="instead of ids: mark everything your inbox lists done (unread and "
                        "read mail; broadcasts not yet served are recorded as served)")


@DONE.handler
def _done(args: argparse.Namespace, box: Mailbox) -> int:
    if not args.ids and not args.all:
        raise InvalidInput("done needs message ids, or --all for everything your inbox "
                           "lists")
    items = box.done(args.ids, everything=args.all)
    emit(args, [i.as_dict() for i in items],
         "\n".join(f"done: {i.message.id}" for i in items) or "nothing to mark done")
    if items.missing:  # each id is reported: what was done above, what was not here
        print(f"mailslot: no message {items.missing_text()} for {box.agent}", file=sys.stderr)
        return 1
    return 0


REPLY = Command("reply", "Answer a message: to its sender, in its thread; marks it done.",
                remote=True, existing=True,
                examples=["mailslot reply 7f3a9c2e --body 'Merged, thanks.'"])


@REPLY.arguments
def _reply_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("id")
    p.add_argument("--subject", help="the reply's subject (default: 'Re: ' and the "
                                     "original's)")
    _body_option(p)
    _ack_option(p)


@REPLY.handler
def _reply(args: argparse.Namespace, box: Mailbox) -> int:
    message = _kept(args, _body(args, box),
                    lambda body: box.reply(args.id, body, subject=args.subject,
                                           ack=args.ack))
    emit(args, message.as_dict(), render.sent(message))
    return 0


BROADCAST = Command("broadcast", "Send a message every other agent is shown once.",
                    examples=["mailslot broadcast --subject 'main is frozen' "
                              "--body 'Until 18:00.'"])


@BROADCAST.arguments
def _broadcast_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--subject", required=True)
    _body_option(p)


@BROADCAST.handler
def _broadcast(args: argparse.Namespace, box: Mailbox) -> int:
    message = _kept(args, _body(args, box), lambda body: box.broadcast(args.subject, body))
    emit(args, message.as_dict(), render.sent(message))
    return 0


RETRACT = Command("retract", "Withdraw your broadcast from agents not yet served it.",
                  existing=True, examples=["mailslot retract 7f3a9c2e"])
RETRACT.arguments(_one_id)


@RETRACT.handler
def _retract(args: argparse.Namespace, box: Mailbox) -> int:
    message = box.retract(args.id)
    emit(args, message.as_dict(with_body=False), f"retracted: {message.id}")
    return 0


STATUS = Command("status", "Where a message stands: each recipient's delivery ladder, "
                 "and its replies.", existing=True,
                 examples=["mailslot status 7f3a9c2e",
                           "mailslot status 7f3a9c2e --wait surfaced --timeout 60"])


@STATUS.arguments
def _status_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("id")
    p.add_argument("--wait", choices=("surfaced", "seen", "read", "done", "replied"),
                   metavar="RUNG", help="block until a recipient reaches RUNG (surfaced, "
                   "seen, read, done or replied); exit 1 with one line if none does in "
                   "time")
    p.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="how long --wait waits (default 60)")


@STATUS.handler
def _status(args: argparse.Namespace, box: Mailbox) -> int:
    if args.wait is None:
        status = box.status(args.id)
    else:
        status, reached = box.wait_for(args.id, args.wait, args.timeout)
        if not reached:  # exit 1, one line (JSON with --json), as every failure
            raise MailslotError(f"timed out: no recipient of {status.message.id} reached "
                                f"{args.wait!r} within {args.timeout:g} s "
                                f"({render.rungs(status)})")
    emit(args, status.as_dict(), render.status(status))
    return 0


STATS = Command("stats", "How long mail takes at each step of the delivery ladder "
                         "(stored, woken, surfaced, seen, read, replied), per agent and host.",
                existing=True, examples=["mailslot stats", "mailslot stats reviewer --since 2h",
                                         "mailslot stats --since 2026-12-01 --json"])


@STATS.arguments
def _stats_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("recipient", nargs="?", metavar="AGENT", help="only mail to this agent")
    p.add_argument("--since", metavar="WHEN", help="mail delivered since: a date or time "
                   "(2026-12-01, 2026-12-01T14:30) or a while ago (30m, 2h, 7d); default 7d")


@STATS.handler
def _stats(args: argparse.Namespace, box: Mailbox) -> int:
    found = box.stats(args.recipient, since=args.since)
    emit(args, found, render.stats(found))
    return 0


COMMANDS = (SEND, INBOX, SENT, READ, MARK_READ, DONE, REPLY, BROADCAST, RETRACT, STATUS,
            STATS)
