"""The ``mailslot`` command: parse, call the service once, print.

Exit codes: 0 ok; 1 the operation failed (no such message, a refused action, an unusable
mailbox); 2 bad input or usage, as one line ``mailslot: error: ...`` with nothing written.
This module translates errors for the CLI; no rule lives here. Only ``serve``, ``watch``
and ``settings`` may import heavy modules (the MCP SDK, pydantic), and only when run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from . import install, render
from .errors import InvalidInput, MailslotError
from .mailbox import Mailbox
from .text import read_body

Handler = Callable[[argparse.Namespace, Mailbox], int]
_COMMANDS: dict[str, Handler] = {}


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit 2."""

    def error(self, message: str) -> NoReturn:
        hint = f" (see '{self.prog} --help')"
        self.exit(2, f"mailslot: error: {message}{hint}\n")


def command(name: str) -> Callable[[Handler], Handler]:
    def register(handler: Handler) -> Handler:
        _COMMANDS[name] = handler
        return handler

    return register


def _emit(args: argparse.Namespace, data: Any, text: str) -> None:
    if getattr(args, "json", False):
        print(json.dumps(data, ensure_ascii=False, indent=2))
    elif text:
        print(text)


def _body(args: argparse.Namespace, box: Mailbox) -> str:
    """The body from --body or stdin; identity is checked first so a refusal never waits."""
    box.check_identity()
    if args.body is not None:
        return str(args.body)
    if sys.stdin is None or sys.stdin.isatty():
        raise InvalidInput("no body: pass --body TEXT or pipe the body on stdin")
    return read_body(sys.stdin.buffer, box.max_body_bytes)


# Commands -------------------------------------------------------------------------
@command("send")
def _send(args: argparse.Namespace, box: Mailbox) -> int:
    body = _body(args, box)
    message = box.send(
        args.to, args.subject, body,
        re_issue=args.re_issue, expect_reply=args.expect_reply, wake=args.wake,
    )
    _emit(args, message.as_dict(), render.sent(message))
    return 0


@command("broadcast")
def _broadcast(args: argparse.Namespace, box: Mailbox) -> int:
    message = box.broadcast(args.subject, _body(args, box))
    _emit(args, message.as_dict(), render.sent(message))
    return 0


@command("reply")
def _reply(args: argparse.Namespace, box: Mailbox) -> int:
    message = box.reply(args.id, _body(args, box))
    _emit(args, message.as_dict(), render.sent(message))
    return 0


@command("inbox")
def _inbox(args: argparse.Namespace, box: Mailbox) -> int:
    items = box.inbox(args.for_, include_done=args.all, unread_only=args.unread, limit=args.limit)
    _emit(args, [i.as_dict() for i in items], render.inbox(items, mailboxes=args.for_ is not None))
    return 0


@command("read")
def _read(args: argparse.Namespace, box: Mailbox) -> int:
    item = box.read(args.id, mark=not args.peek)
    _emit(args, item.as_dict(with_body=True), render.full(item, box.path_of(item)))
    return 0


@command("mark-read")
def _mark_read(args: argparse.Namespace, box: Mailbox) -> int:
    item = box.mark_read(args.id)
    _emit(args, item.as_dict(), f"{item.state}: {item.message.id}")
    return 0


@command("done")
def _done(args: argparse.Namespace, box: Mailbox) -> int:
    items = box.done(args.ids)
    _emit(args, [i.as_dict() for i in items], "\n".join(f"done: {i.message.id}" for i in items))
    return 0


@command("retract")
def _retract(args: argparse.Namespace, box: Mailbox) -> int:
    message = box.retract(args.id)
    _emit(args, message.as_dict(with_body=False), f"retracted: {message.id}")
    return 0


@command("status")
def _status(args: argparse.Namespace, box: Mailbox) -> int:
    status = box.status(args.id)
    _emit(args, status.as_dict(), render.status(status))
    return 0


@command("who")
def _who(args: argparse.Namespace, box: Mailbox) -> int:
    agents = box.who()
    _emit(args, [a.as_dict() for a in agents], render.who(agents))
    return 0


@command("doctor")
def _doctor(args: argparse.Namespace, box: Mailbox) -> int:
    report = box.doctor(fix=args.fix)
    data = {"location": report.location, "problems": report.problems, "fixed": report.fixed}
    _emit(args, data, render.doctor(report))
    return 0 if report.healthy else 1


@command("serve")
def _serve(args: argparse.Namespace, box: Mailbox) -> int:
    box.bound_agent()  # refuse before the MCP SDK is even imported
    from . import mcp_server

    mcp_server.serve(lambda: Mailbox.open(args.dir, args.agent), channel=args.channel)
    return 0


@command("install")
def _install(args: argparse.Namespace, box: Mailbox) -> int:
    from .install.run import install as register

    report = register(
        args.host, box.bound_agent(), scope=args.scope, hooks=args.hooks, wake=args.wake,
        channel=args.channel, dry_run=args.dry_run,
        mailbox_dir=args.dir or os.environ.get("MAILSLOT_DIR"),
    )
    print(render.installed(report))
    for warning in report.warnings:
        print(f"mailslot: warning: {warning}", file=sys.stderr)
    return 0


def _hook(args: argparse.Namespace) -> int:
    """``mailslot hook HOST EVENT``: never fails a session, so no error translation here.

    ``mailslot.entry`` runs the same thing without loading this module.
    """
    from .hooks.run import run_hook

    return run_hook(args.host, args.event, agent=args.agent, root=args.dir)


_UNTRANSLATED: dict[str, Callable[[argparse.Namespace], int]] = {"hook": _hook}
"""Commands that must never fail their caller, so they skip the error translation."""


@command("watch")
def _watch(args: argparse.Namespace, box: Mailbox) -> int:
    if args.validate:
        from .wake.report import as_text, validate

        report = validate(box.store)
        _emit(args, report.as_dict(), as_text(report))
        return 0 if report.ok else 1
    from .wake.watcher import watch  # the only import of watchdog, and only here

    return watch(box.store, once=args.once, poll=args.poll)


def _seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not 0.01 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a number of seconds from 0.01 to 3600")
    return value


# Parser ---------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    # Global options are accepted before or after the command name.
    common = _Parser(add_help=False)
    common.add_argument("--dir", default=argparse.SUPPRESS,
                        help="mailbox folder (default: $MAILSLOT_DIR or ~/mailslot)")
    common.add_argument("--agent", default=argparse.SUPPRESS,
                        help="who this process speaks as (default: $MAILSLOT_AGENT or the git "
                             "toplevel's name)")
    data = _Parser(add_help=False)
    data.add_argument("--json", action="store_true", help="print JSON instead of text")

    parser = _Parser(prog="mailslot", description="A local mailbox for AI coding agents.")
    parser.add_argument("--dir", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--agent", default=None, help=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    def add(name: str, help_text: str, *, prints_data: bool = True) -> argparse.ArgumentParser:
        parents = [common, data] if prints_data else [common]
        return sub.add_parser(name, help=help_text, description=help_text, parents=parents)

    def body_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--body", help="message text (default: read from stdin)")

    p = add("send", "Send a message to one or more agents.")
    p.add_argument("--to", required=True, action="append",
                   help="recipient name; repeat or separate with commas for several")
    p.add_argument("--subject", required=True, help="one line, at most 200 characters")
    body_options(p)
    p.add_argument("--re-issue", help="the issue or ticket this is about, stored as given")
    p.add_argument("--expect-reply", action="store_true", help="ask the recipient to answer")
    p.add_argument("--wake", action="store_true",
                   help="ask for the recipient to be woken (its own config decides)")

    p = add("inbox", "List messages, newest first, without reading their bodies.")
    p.add_argument("--for", dest="for_", metavar="NAME|all", help="another mailbox, or all")
    p.add_argument("--all", action="store_true", help="include done mail and served broadcasts")
    p.add_argument("--unread", action="store_true", help="only unread mail")
    p.add_argument("--limit", type=int, default=20, help="page size (default 20)")

    p = add("read", "Show a message in full and mark it read.")
    p.add_argument("id")
    p.add_argument("--peek", action="store_true", help="do not mark it read")

    p = add("mark-read", "Mark a message read without showing it.")
    p.add_argument("id")

    p = add("done", "Mark messages handled (they are kept, never deleted).")
    p.add_argument("ids", nargs="+", metavar="ID")

    p = add("reply", "Answer a message: to its sender, in its thread; marks it done.")
    p.add_argument("id")
    body_options(p)

    p = add("broadcast", "Send a message every other agent is shown once.")
    p.add_argument("--subject", required=True)
    body_options(p)

    p = add("retract", "Withdraw your broadcast from agents not yet served it.")
    p.add_argument("id")

    p = add("status", "Where a message stands with each recipient, and its replies.")
    p.add_argument("id")

    add("who", "Agents known to this mailbox, with unread counts.")

    p = add("doctor", "Check the mailbox folder's permissions, config and leftovers.")
    p.add_argument("--fix", action="store_true",
                   help="tighten permissions and remove staging files older than 36 hours")

    p = add("serve", "Run the MCP server (stdio) for one agent: --agent NAME or "
                     "MAILSLOT_AGENT.", prints_data=False)
    p.add_argument("--channel", action="store_true",
                   help="also push a notice into Claude Code when mail arrives (Claude Code "
                        "channels, research preview; see docs/claude-wake.md)")

    p = add("install", "Register mailslot with an agent host (its MCP server; with --hooks "
                       "its hooks), as the agent given by --agent.", prints_data=False)
    p.add_argument("host", choices=install.HOST_NAMES)
    p.add_argument("--scope", choices=install.SCOPES,
                   help="project (the git checkout or this folder) or user (your home); "
                        "default: project, except user for copilot")
    p.add_argument("--hooks", action="store_true",
                   help="also register hooks that show mail at session start, prompt, stop")
    p.add_argument("--wake", action="store_true",
                   help="claude with --hooks: a background hook that wakes Claude for mail "
                        "(and config.json's wake_method \"claude-rewake\")")
    p.add_argument("--channel", action="store_true",
                   help="claude: serve --channel pushes mail into the session (research "
                        "preview; config.json's wake_method \"claude-channel\")")
    p.add_argument("--dry-run", action="store_true", help="print the change; write nothing")

    p = add("hook", "Show pending mail to an agent from a host's hook (prints the host's JSON).",
            prints_data=False)
    p.add_argument("host", metavar="HOST",
                   help="claude, codex, qwen, gemini, cursor, copilot or pi")
    p.add_argument("event", metavar="EVENT",
                   help="claude, codex, qwen: session-start, user-prompt-submit, stop, "
                        "post-tool-use; gemini: session-start, before-agent, after-agent, "
                        "after-tool; cursor: session-start, stop; copilot: "
                        "session-start, stop, post-tool-use; pi: "
                        "session-start, before-agent, tool-result (see docs/hooks.md)")

    p = add("watch", "Wake opted-in agents when mail arrives (runs in the foreground).")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true",
                      help="process the wakes due now, then exit")
    mode.add_argument("--validate", action="store_true",
                      help="check each agent's wake config and print what its wake would do")
    p.add_argument("--poll", type=_seconds, metavar="SECONDS",
                   help="poll the queue this often instead of using file-system events")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    if not (sys.argv[1:] if argv is None else argv):
        parser.print_help()  # `mailslot` alone: show what it can do
        return 2
    args = parser.parse_args(argv)
    if args.command in _UNTRANSLATED:
        return _UNTRANSLATED[args.command](args)
    try:
        box = Mailbox.open(args.dir, args.agent)
        return _COMMANDS[args.command](args, box)
    except InvalidInput as exc:
        print(f"mailslot: error: {exc}", file=sys.stderr)
        return 2
    except MailslotError as exc:
        print(f"mailslot: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
