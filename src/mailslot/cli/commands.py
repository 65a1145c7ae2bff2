"""The ``mailslot`` command: parse, call the service once, print.

Exit codes: 0 ok; 1 the operation failed (no such message, a refused action, an unusable
mailbox); 2 bad input or usage. Either way one line ``mailslot: error: ...`` on stderr
(with ``--json``, ``{"error": ..., "code": ...}``), nothing written. This module
translates errors for the CLI; no rule lives here. Only ``serve``, ``watch`` and
``settings`` may import heavy modules (the MCP SDK, pydantic), and only when run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence

from .. import __version__
from ..core.errors import InvalidInput, MailslotError, NoIdentity, NotFound, Refused
from ..core.names import closest
from ..core.text import read_body
from ..service.mailbox import Mailbox
from . import render

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from typing import Any, NoReturn

# The CLI speaks English throughout, so argparse's few words of its own ("usage:",
# "options") are not looked up in the system's message catalogues: every look-up loaded
# `locale` and searched the disk, a visible part of a short command's start.
argparse._ = str  # type: ignore[attr-defined]

Handler = Callable[[argparse.Namespace, Mailbox], int]
_COMMANDS: dict[str, Handler] = {}


def _columns() -> int:
    """The terminal's width, as ``shutil.get_terminal_size`` tells it to argparse (which
    would import ``shutil``, and with it three compression modules, on every command)."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def _formatter(*, prog: str) -> argparse.HelpFormatter:
    return argparse.HelpFormatter(prog, width=_columns() - 2)


def _raw_formatter(*, prog: str) -> argparse.HelpFormatter:
    return argparse.RawDescriptionHelpFormatter(prog, width=_columns() - 2)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr (JSON with --json) and exit 2."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        _fail(f"{message} (see '{self.prog} --help')", "usage", 2, as_json=_JSON_ASKED)
        raise SystemExit(2)


_JSON_ASKED = "--json" in sys.argv[1:]
"""Whether errors before parsing finishes (usage errors) are printed as JSON."""

_CODES: list[tuple[type[MailslotError], str]] = [
    (NoIdentity, "no_identity"), (InvalidInput, "invalid_input"), (NotFound, "not_found"),
    (Refused, "refused"), (MailslotError, "failed"),
]


def _fail(message: str, code: str, exit_code: int, *, as_json: bool) -> int:
    """The one shape of every error: a line, or with --json an object, on stderr."""
    if as_json:
        line = json.dumps({"error": message, "code": code, "exit": exit_code},
                          ensure_ascii=False)
    else:
        line = f"mailslot: error: {message}"
    print(line, file=sys.stderr)
    return exit_code


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


def _notes(box: Mailbox) -> None:
    """What the service wants the user told besides the result (stderr, not data)."""
    for note in box.notes:
        print(f"mailslot: note: {note}", file=sys.stderr)


def _style(args: argparse.Namespace) -> render.Style:
    """Colour only on a terminal, and never with NO_COLOR or --no-color."""
    wanted = (not args.no_color and not os.environ.get("NO_COLOR")
              and sys.stdout.isatty() and os.environ.get("TERM") != "dumb")
    return render.Style(colour=wanted)


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
        re_issue=args.re_issue, expect_reply=args.expect_reply, wake=args.wake, new=args.new,
    )
    _emit(args, message.as_dict(), render.sent(message))
    _notes(box)
    return 0


@command("broadcast")
def _broadcast(args: argparse.Namespace, box: Mailbox) -> int:
    message = box.broadcast(args.subject, _body(args, box))
    _emit(args, message.as_dict(), render.sent(message))
    return 0


@command("reply")
def _reply(args: argparse.Namespace, box: Mailbox) -> int:
    message = box.reply(args.id, _body(args, box), subject=args.subject)
    _emit(args, message.as_dict(), render.sent(message))
    return 0


@command("inbox")
def _inbox(args: argparse.Namespace, box: Mailbox) -> int:
    page = box.page(args.for_, include_done=args.all, unread_only=args.unread,
                    limit=args.limit, number=args.page, before=args.before)
    _emit(args, [i.as_dict() for i in page.items],
          render.inbox(page, mailboxes=args.for_ is not None, style=_style(args)))
    if page.items.unreadable:
        print(f"mailslot: {page.items.unreadable} unreadable message file(s) skipped; "
              "mailslot doctor names them", file=sys.stderr)
    return 0


@command("sent")
def _sent(args: argparse.Namespace, box: Mailbox) -> int:
    page = box.sent(limit=args.limit)
    _emit(args, [s.as_dict() for s in page], render.sent_list(page, style=_style(args)))
    return 0


@command("read")
def _read(args: argparse.Namespace, box: Mailbox) -> int:
    item = box.read(args.id, mark=not args.peek)
    if args.json:
        _emit(args, item.as_dict(with_body=True), "")
    else:
        render.page_out(render.full(item, box.path_of(item), style=_style(args)))
    return 0


@command("whoami")
def _whoami(args: argparse.Namespace, box: Mailbox) -> int:
    me = box.whoami()
    _emit(args, me.as_dict(), render.whoami(me))
    return 0 if me.name else 1


@command("mark-read")
def _mark_read(args: argparse.Namespace, box: Mailbox) -> int:
    item = box.mark_read(args.id)
    _emit(args, item.as_dict(), f"{item.state}: {item.message.id}")
    return 0


@command("done")
def _done(args: argparse.Namespace, box: Mailbox) -> int:
    if not args.ids and not args.all:
        raise InvalidInput("done needs message ids, or --all for everything your inbox "
                           "lists")
    items = box.done(args.ids, everything=args.all)
    _emit(args, [i.as_dict() for i in items],
          "\n".join(f"done: {i.message.id}" for i in items) or "nothing to mark done")
    if items.missing:  # each id is reported: what was done above, what was not here
        print(f"mailslot: no message {items.missing_text()} for {box.agent}", file=sys.stderr)
        return 1
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
    _emit(args, [a.as_dict() for a in agents], render.who(agents, style=_style(args)))
    return 0


@command("agent")
def _agent(args: argparse.Namespace, box: Mailbox) -> int:
    if args.action != "remove":
        return _registry(args, box)
    if args.name is None:
        raise InvalidInput("name the agent: mailslot agent remove NAME")
    where = box.remove_agent(args.name)
    _emit(args, {"name": args.name.lower(), "archived": where},
          f"archived {args.name.lower()}'s mailbox: {where} (kept on disk; out of who)")
    return 0


@command("completion")
def _completion(args: argparse.Namespace, box: Mailbox) -> int:
    from .completion import script, words

    if args.words:
        print("\n".join(words(box, args.words)))
    elif args.shell:
        print(script(args.shell, _COMMAND_NAMES))
    else:
        raise InvalidInput("name a shell: bash, zsh or fish")
    return 0


@command("doctor")
def _doctor(args: argparse.Namespace, box: Mailbox) -> int:
    report = box.doctor(fix=args.fix, deep=args.deep)
    data = {"location": report.location, "problems": report.problems, "fixed": report.fixed}
    _emit(args, data, render.doctor(report))
    return 0 if report.healthy else 1


@command("serve")
def _serve(args: argparse.Namespace, box: Mailbox) -> int:
    if args.http is not None:
        return _serve_http(args, box)
    box.bound_agent()  # refuse before the MCP SDK is even imported
    from ..access.fencing import new_session_id
    from ..hooks.host_process import host_process
    from ..mcp import server as mcp_server

    session = new_session_id()
    host = host_process()[0]
    for note in box.start_session(session, exclusive=args.exclusive or bool(
            args.replace_session), replace=args.replace_session):
        print(f"mailslot: note: {note}", file=sys.stderr)  # stdout is the MCP stream

    def open_box() -> Mailbox:
        opened = Mailbox.open(args.dir, args.agent, credential=args.credential,
                              peer_of=args.peer_of)
        opened.session = session
        opened.host_pid = host
        return opened

    mcp_server.serve(open_box, channel=args.channel)
    return 0


@command("install")
def _install(args: argparse.Namespace, box: Mailbox) -> int:
    from ..install.changes import install as register

    agent = _remote_agent(args) if args.remote is not None else box.bound_agent()
    report = register(
        args.host, agent, scope=args.scope, hooks=args.hooks, wake=args.wake,
        channel=args.channel, dry_run=args.dry_run,
        mailbox_dir=args.dir or os.environ.get("MAILSLOT_DIR"),
        allow_outside=args.allow_outside,
        credential=args.credential, remote=args.remote,
    )
    print(render.installed(report))
    for warning in report.warnings:
        print(f"mailslot: warning: {warning}", file=sys.stderr)
    return 0


def _hook(args: argparse.Namespace) -> int:
    """``mailslot hook HOST EVENT``: never fails a session, so no error translation here.

    ``mailslot.entry`` runs the same thing without loading this module.
    """
    from ..hooks.hook_entry import run_hook

    return run_hook(args.host, args.event, agent=args.agent, root=args.dir,
                    remote=args.remote, credential=args.credential)


_UNTRANSLATED: dict[str, Callable[[argparse.Namespace], int]] = {"hook": _hook}
"""Commands that must never fail their caller, so they skip the error translation."""


@command("watch")
def _watch(args: argparse.Namespace, box: Mailbox) -> int:
    if args.validate:
        from ..wake.report import as_text, validate

        report = validate(box.store)
        _emit(args, report.as_dict(), as_text(report))
        return 0 if report.ok else 1
    from ..wake.watcher import watch  # the only import of watchdog, and only here

    return watch(box.store, once=args.once, poll=args.poll, as_json=args.json)


# The local web page -----------------------------------------------------
@command("web")
def _web(args: argparse.Namespace, box: Mailbox) -> int:
    from ..web.page_server import serve  # starlette and uvicorn only here

    return serve(box.store, args.port)


def _port(raw: str) -> int:
    if not raw.isdigit() or int(raw) > 65535:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a port from 0 to 65535")
    return int(raw)


# Starting agent sessions -------------------------------------------------
@command("start")
def _start(args: argparse.Namespace, box: Mailbox) -> int:
    from ..launch.starting import Request, start

    if args.prompt is None and (sys.stdin is None or sys.stdin.isatty()):
        raise InvalidInput("no prompt: pass --prompt TEXT or pipe it on stdin")
    prompt = args.prompt or read_body(sys.stdin.buffer, box.max_body_bytes)
    started = start(box, Request(
        args.host, args.folder, prompt, name=args.name, model=args.model, effort=args.effort,
        permission_mode=args.permission_mode, handoff=args.handoff, project=args.project,
        register_as=args.register_as), via="cli")
    _emit(args, started.as_dict(), render.started(started))
    return 1 if started.outcome == "failed" else 0


# Registered agents and credentials ----------------------------------------
def _confirm(args: argparse.Namespace, question: str) -> None:
    """Administration asks on a terminal; elsewhere it needs ``--yes``."""
    if args.yes:
        return
    if sys.stdin is None or not sys.stdin.isatty():
        raise InvalidInput(f"{question.rstrip('?')}: confirm with --yes (not on a terminal)")
    if input(f"{question} [y/N] ").strip().lower() not in ("y", "yes"):
        raise InvalidInput("not confirmed; nothing was changed")


def _registry(args: argparse.Namespace, box: Mailbox) -> int:
    """``agent add|list|show|rotate|revoke``: the secret is written to its file, never
    printed."""
    from ..access import authority

    if args.action == "list":
        found = [authority.describe(r) for r in authority.records(box.store)]
        _emit(args, found, render.registered(found))
        return 0
    if args.name is None:
        raise InvalidInput(f"name the agent: mailslot agent {args.action} NAME")
    if args.action == "show":
        one = authority.describe(authority.record(box.store, args.name))
        _emit(args, one, render.registered([one]))
        return 0
    name = args.name.lower()
    if args.action == "revoke":
        _confirm(args, f"Revoke {name} for good (its children too)?")
        one = authority.describe(authority.revoke(box.store, name))
        _emit(args, one, f"revoked {name}: its credential (and its children's) no longer "
                         "works")
        return 0
    if args.action == "add":
        _confirm(args, f"Register {name} and write its credential?")
        issued = authority.register(box.store, name, parent=args.parent,
                                    runtime=args.runtime, path=args.credential_file)
    else:
        _confirm(args, f"Rotate {name}'s credential (the old one stops working)?")
        issued = authority.rotate(box.store, name, path=args.credential_file)
    data = {**authority.describe(issued.record), "credential_file": issued.path}
    _emit(args, data, f"{args.action}: {name} generation {issued.record.generation}; "
                      f"credential written to {issued.path} (0600; keep it private)")
    return 0


# Gates and admission ------------------------------------------------------
@command("join")
def _join(args: argparse.Namespace, box: Mailbox) -> int:
    message = box.gate.join(args.name, args.note)
    _emit(args, message.as_dict(), f"asked {message.to[0]} for access ({message.id}); "
                                   "you are told when it answers")
    return 0


@command("admit")
def _admit(args: argparse.Namespace, box: Mailbox) -> int:
    changed = box.gate.admit(args.name)
    _emit(args, box.gate.status(), f"admitted {args.name.lower()}" if changed
          else f"{args.name.lower()} was a member already")
    return 0


@command("refuse")
def _refuse(args: argparse.Namespace, box: Mailbox) -> int:
    box.gate.refuse(args.name)
    _emit(args, box.gate.status(), f"refused {args.name.lower()}'s request (it is told)")
    return 0


@command("revoke")
def _revoke(args: argparse.Namespace, box: Mailbox) -> int:
    changed = box.gate.revoke(args.name)
    _emit(args, box.gate.status(), f"{args.name.lower()} is no longer a member" if changed
          else f"{args.name.lower()} was not a member")
    return 0


@command("pending")
def _pending(args: argparse.Namespace, box: Mailbox) -> int:
    found = box.gate.pending()
    _emit(args, found, "\n".join(f"{who}  {mid}" for who, mid in sorted(found.items()))
          or "no pending requests")
    return 0


@command("sessions")
def _sessions(args: argparse.Namespace, box: Mailbox) -> int:
    if args.started:  # the sessions mailslot started
        records = box.store.started_sessions()
        _emit(args, records, render.started_sessions(records))
        return 0
    found = box.sessions(args.name)
    _emit(args, found, render.sessions(found))
    return 0


@command("gate")
def _gate(args: argparse.Namespace, box: Mailbox) -> int:
    if args.state is not None:
        box.gate.switch(args.state == "on", args.name)
    elif args.name is not None:
        raise InvalidInput("--name GROUP goes with 'gate on' or 'gate off'")
    status = box.gate.status()
    _emit(args, status, render.gate(status))
    return 0


# Creating a store and moving between stores
@command("init")
def _init(args: argparse.Namespace, box: Mailbox) -> int:
    print(box.store.init())
    return 0


@command("migrate")
def _migrate(args: argparse.Namespace, box: Mailbox) -> int:
    from ..keep.transfer import migrate

    copied, skipped = migrate(args.source, args.target)
    data = {"copied": dict(copied), "unreadable": skipped}
    kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(copied.items()) if n)
    text = f"copied {kinds}" if kinds else "nothing to copy: the target has everything"
    _emit(args, data, "\n".join([text, *(f"not copied (unreadable): {s}" for s in skipped)]))
    return 1 if skipped else 0


@command("pg")
def _pg(args: argparse.Namespace, box: Mailbox) -> int:
    grant = getattr(box.store, "grant", None)
    if grant is None:
        raise InvalidInput("pg grant needs a postgresql:// store (--store URL or "
                           "MAILSLOT_STORE)")
    print(grant(args.name))
    return 0


# Changing the config on any store (config.json, or PostgreSQL's row) -------------------
_CONFIG_ARGS = {"show": (0, 0), "get": (1, 1), "set": (2, 2), "unset": (1, 1),
                "import": (1, 1), "export": (0, 1)}
"""How many words each ``config`` action takes after it (at least, at most)."""


@command("config")
def _config(args: argparse.Namespace, box: Mailbox) -> int:
    from ..service import config_edit as edit

    words, (least, most) = args.words, _CONFIG_ARGS[args.action]
    if not least <= len(words) <= most:
        usage = {"show": "", "get": " KEY", "set": " KEY VALUE", "unset": " KEY",
                 "import": " FILE", "export": " [FILE]"}[args.action]
        raise InvalidInput(f"usage: mailslot config {args.action}{usage}")
    store, expected = box.store, args.if_version
    if args.action in ("show", "get"):
        value, seen = (edit.current(store) if args.action == "show"
                       else edit.get(store, words[0]))
        _emit(args, {"version": seen, "value": value},
              edit.as_text(value).rstrip("\n"))  # type: ignore[arg-type]
        _version_note(args, seen)
        return 0
    if args.action == "export":
        if words:
            seen = edit.export_to(store, words[0])
            _emit(args, {"version": seen, "file": words[0]},
                  f"exported the config (version {seen}) to {words[0]}")
        else:
            raw, seen = edit.current(store)
            print(edit.as_text(raw), end="")
            _version_note(args, seen)
        return 0
    if args.action == "set":
        now = edit.set_value(store, words[0], edit.parse_value(words[1]), expected=expected)
    elif args.action == "unset":
        now = edit.unset(store, words[0], expected=expected)
    else:
        now = edit.import_from(store, words[0], expected=expected)
    done = {"set": f"set {words[0]}", "unset": f"unset {words[0]}",
            "import": f"imported the config from {words[0]}"}[args.action]
    _emit(args, {"version": now}, f"{done} (config version {now})")
    return 0


def _version_note(args: argparse.Namespace, seen: str) -> None:
    if not args.json:
        print(f"mailslot: note: config version {seen} (a change given --if-version {seen} "
              "is refused if the config moves meanwhile)", file=sys.stderr)


# Search, threads and the search index ----------------------------------
@command("search")
def _search(args: argparse.Namespace, box: Mailbox) -> int:
    from ..keep import finding

    items = finding.search(box, args.query, sender=args.from_, recipient=args.to,
                           since=args.since, until=args.until, states=args.state or (),
                           thread=args.thread, limit=args.limit)
    _emit(args, [i.as_dict(with_body=True) for i in items],
          render.found(items, style=_style(args)))
    return 0


@command("thread")
def _thread(args: argparse.Namespace, box: Mailbox) -> int:
    from ..keep import finding

    entries = finding.thread(box, args.id)
    _emit(args, [e.as_dict() for e in entries], render.thread(entries, style=_style(args)))
    return 0


@command("index")
def _index(args: argparse.Namespace, box: Mailbox) -> int:
    from ..keep import finding

    count = finding.reindex(box)
    _emit(args, {"indexed": count}, f"search index rebuilt: {count} message(s)")
    return 0


@command("export")
def _export(args: argparse.Namespace, box: Mailbox) -> int:
    from ..keep import exporting

    count = exporting.export(box.store, args.format, args.output, agent=args.for_,
                             since=args.since)
    if args.output != "-":
        _emit(args, {"exported": count, "output": args.output},
              f"exported {count} message(s) to {args.output}")
    return 0


@command("backup")
def _backup(args: argparse.Namespace, box: Mailbox) -> int:
    from ..keep import backup, sealing

    seal = None
    if args.encrypt or args.recipient or args.passphrase:
        secret = sealing.passphrase(confirm=True) if args.passphrase else None
        seal = sealing.sealer(args.recipient or [], secret)
    summary = backup.backup(box.store, args.file, seal=seal)
    _emit(args, {"output": args.file, "encrypted": seal is not None, **summary.as_dict()},
          f"backed up {', '.join(backup.members(summary)) or 'an empty mailbox'} to "
          f"{args.file}" + "".join(f"\nnot backed up (unreadable): {s}"
                                   for s in summary.skipped))
    return 1 if summary.skipped else 0


@command("restore")
def _restore(args: argparse.Namespace, box: Mailbox) -> int:
    from ..keep import backup, sealing

    unseal = None
    if args.identity or args.passphrase:
        secret = sealing.passphrase(confirm=False) if args.passphrase else None
        unseal = sealing.unsealer(args.identity, secret)
    into = args.into or box.store.location
    if args.max_bytes is not None and args.max_bytes < 1:
        raise InvalidInput("--max-bytes must be a positive number of bytes")
    summary = backup.restore(args.file, into, merge=args.merge, unseal=unseal,
                             max_bytes=args.max_bytes or backup.MAX_ARCHIVE_BYTES)
    _emit(args, {"into": into, **summary.as_dict()},
          (f"restored {', '.join(backup.members(summary))} into {into}"
           if summary.counts else f"nothing to restore: {into} has everything")
          + "".join(f"\nnot restored (unreadable): {s}" for s in summary.skipped))
    return 1 if summary.skipped else 0


@command("import")
def _import(args: argparse.Namespace, box: Mailbox) -> int:
    from ..keep.importing import import_mail

    report = import_mail(box.store, args.format, args.path,
                         max_body_bytes=box.max_body_bytes)
    added = ", ".join(f"{n} {kind}" for kind, n in sorted(report.added.items()) if n)
    _emit(args, report.as_dict(),
          "\n".join([f"imported {added}" if added else "nothing to import: the mailbox "
                      "has everything", *(f"not mapped: {u}" for u in report.unmapped)]))
    return 0


# Serve --http, and the everyday commands against it (--remote URL) ----------
def _serve_http(args: argparse.Namespace, box: Mailbox) -> int:
    from ..http.http_server import Listen, parse_listen, serve_http

    if args.agent or args.credential or args.peer_of or args.exclusive \
            or args.replace_session:
        raise InvalidInput("serve --http speaks as each request's credential: drop --agent, "
                           "--credential, --peer-of, --exclusive and --replace-session")
    host, port = parse_listen(args.http)
    if not 0 < args.session_idle < float("inf"):
        raise InvalidInput(f"--session-idle {args.session_idle:g}: expected a positive "
                           "number of seconds")
    listen = Listen(host, port, args.tls_cert, args.tls_key, args.behind_proxy,
                    tuple(args.allow_host))
    serve_http(_authenticate(box), listen, max_body_bytes=4 * box.max_body_bytes + 65536,
               rate_per_minute=args.rate_limit, session_idle=args.session_idle)
    return 0


def _authenticate(box: Mailbox) -> Callable[[str], Mailbox]:
    """Where each request's bearer secret becomes its agent's checked mailbox (the
    registered agents' credentials); the one place ``--http`` authenticates."""
    from ..access.bearer import Bearers

    return Bearers(box.store).open


def _remote_agent(args: argparse.Namespace) -> str:
    """``install --remote``: the agent is the credential's (its file is read, not sent)."""
    from ..access.credentials import read_credential

    if args.credential is None:
        raise InvalidInput("install --remote needs --credential FILE: it names the agent, "
                           "and the hooks read its secret from it")
    return read_credential(args.credential).agent


def _remote_or_local(name: str) -> None:
    """``--remote URL`` runs the command against ``serve --http``; else as before."""
    local = _COMMANDS[name]

    def handler(args: argparse.Namespace, box: Mailbox) -> int:
        if args.remote is None:
            return local(args, box)
        from . import remote_cli

        return remote_cli.run(name, args)

    _COMMANDS[name] = handler


_REMOTE_COMMANDS = ("send", "inbox", "read", "done", "reply")
for _name in _REMOTE_COMMANDS:
    _remote_or_local(_name)


def _seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not 0.01 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a number of seconds from 0.01 to 3600")
    return value


# Parser ---------------------------------------------------------------------------
_EXAMPLES: dict[str, list[str]] = {
    "send": ["mailslot send --to gemini --subject 'Schema ready' --body 'See PR 12.'",
             "git diff | mailslot send --to codex,gemini --subject 'Review this' --wake"],
    "inbox": ["mailslot inbox", "mailslot inbox --page 2", "mailslot inbox --all --limit 50",
              "mailslot inbox --for all"],
    "sent": ["mailslot sent", "mailslot sent --limit 5 --json"],
    "read": ["mailslot read 7f3a9c2e", "mailslot read 2026-09-21_1448 --peek"],
    "mark-read": ["mailslot mark-read 7f3a9c2e"],
    "done": ["mailslot done 7f3a9c2e 81be02d4", "mailslot done --all"],
    "reply": ["mailslot reply 7f3a9c2e --body 'Merged, thanks.'"],
    "broadcast": ["mailslot broadcast --subject 'main is frozen' --body 'Until 18:00.'"],
    "retract": ["mailslot retract 7f3a9c2e"],
    "status": ["mailslot status 7f3a9c2e"],
    "who": ["mailslot who", "mailslot who --json"],
    "whoami": ["mailslot whoami", "mailslot --agent claude whoami --json"],
    "agent": ["mailslot agent remove gemnii",
              "mailslot agent add claude --runtime claude-code --yes",
              "mailslot agent add reviewer --parent claude --yes",
              "mailslot agent list", "mailslot agent rotate claude --yes"],
    "doctor": ["mailslot doctor", "mailslot doctor --fix"],
    "init": ["mailslot init", "mailslot init --store postgresql://mailslot@db.example/mail"],
    "pg": ["mailslot pg grant gemini --store postgresql://admin@db.example/mail"],
    "config": ["mailslot config show",
               "mailslot config set agents.codex.wake_method unsupported   # text: not JSON",
               "mailslot config set agents.codex.wake_on_mail false         # JSON",
               "mailslot config get agents.codex.wake_method",
               "mailslot config set launch.allowed_callers '[\"orchestrator\"]'",
               "mailslot config unset agents.codex.note --if-version 3f9c0a1b2c3d4e5f",
               "mailslot config export config-backup.json",
               "mailslot config import config-backup.json --store "
               "postgresql://mailslot@db.example/mail"],
    "migrate": ["mailslot migrate --from ~/mailslot --to postgresql://mailslot@db.example/mail"],
    "serve": ["mailslot serve --agent claude"],
    "install": ["mailslot install claude --agent claude --hooks",
                "mailslot install codex --agent codex --dry-run"],
    "hook": ["mailslot hook claude session-start --agent claude < input.json"],
    "watch": ["mailslot watch", "mailslot watch --validate",
              "mailslot watch --validate --json   # also lists every wake method's fields",
              "(wake methods and their config.json fields: docs/wake.md)"],
    "web": ["mailslot web", "mailslot web --port 8025"],
    "join": ["mailslot --agent codex join gemini --note 'I review your schema PRs.'"],
    "gate": ["mailslot gate", "mailslot gate on", "mailslot admit codex", "mailslot pending"],
    "completion": ["mailslot completion bash > ~/.local/share/bash-completion/completions/"
                   "mailslot", "mailslot completion zsh > ~/.zfunc/_mailslot",
                   "mailslot completion fish > ~/.config/fish/completions/mailslot.fish"],
    # Starting agent sessions
    "start": ["mailslot start claude --folder ~/src/app --handoff tmux --register-as "
              "builder-1 --prompt 'Fix the login test; mail orchestrator when done.'"],
    "sessions": ["mailslot sessions --started", "mailslot sessions --started --json"],
    # Search, threads and the search index
    "search": ["mailslot search 'database migration'",
               "mailslot search '\"schema change\" OR deploy*' --from codex --since 2026-09-01",
               "mailslot search 'release NOT staging' --state unread --json"],
    "thread": ["mailslot thread 7f3a9c2e"],
    "index": ["mailslot index --rebuild"],
    "export": ["mailslot export > mail.jsonl", "mailslot export --format mbox --output mail.mbox",
               "mailslot export --format maildir --for gemini --output gemini-mail"],
    "backup": ["mailslot backup mail-2026-09-21.tar.gz",
               "mailslot backup mail.tar.gz.age --recipient age1ql3z7hjy54pw3hyww5ayyfg7zqgv"
               "c7w3j2elw8zmrj2kg5sfn9aqmcac8p"],
    "restore": ["mailslot restore mail-2026-09-21.tar.gz --into ~/mailslot-restored",
                "mailslot restore mail.tar.gz.age --identity ~/keys/mailslot.txt --merge",
                "mailslot restore mail.tar.gz --into postgresql://mailslot@db.example/mail"],
    "import": ["mailslot import jsonl mail.jsonl",
               "mailslot import letterbox ~/.letterbox",
               "mailslot import a2a-mailbox ~/.agents-mailbox --json"],
}
_COMMAND_NAMES: list[str] = []
_AGENT_HELP = "who this process speaks as (default: $MAILSLOT_AGENT, then the git toplevel's name)"
_SERVER_AGENT_HELP = ("who the server (or what install registers) speaks as: required, here "
                      "or as $MAILSLOT_AGENT (the git checkout's name is not used)")


def _globals(parser: argparse.ArgumentParser, *, top: bool, agent_help: str = _AGENT_HELP
             ) -> None:
    """--dir, --agent, --credential, --json and --no-color, before or after the command.

    On the top parser they hold the defaults; on a command's parser they are set only when
    given (``SUPPRESS``), so a value given before the command is not reset after it.
    """
    def default(value: object) -> object:
        return value if top else argparse.SUPPRESS

    group = parser.add_argument_group("global options (before or after the command)")
    group.add_argument("--dir", "--store", default=default(None), metavar="DIR|URL",
                       help="mailbox folder or postgresql:// URL (default: $MAILSLOT_STORE, "
                            "then $MAILSLOT_DIR, then ~/mailslot)")
    group.add_argument("--agent", default=default(None), metavar="NAME", help=agent_help)
    group.add_argument("--credential", default=default(None), metavar="FILE",
                       help="speak as the registered agent this credential file names "
                            "(default: $MAILSLOT_CREDENTIAL); with --remote, the file "
                            "holding the secret (default: $MAILSLOT_SECRET)")
    group.add_argument("--json", action="store_true", default=default(False),
                       help="print JSON (results on stdout, errors on stderr)")
    group.add_argument("--no-color", action="store_true", default=default(False),
                       help="no colour even on a terminal (NO_COLOR does the same)")


class _Skipped:
    """Stands in for the parser of a command that is not being run: building every
    command's parser was a tenth of a short command's whole time."""

    def add_argument(self, *args: Any, **kwargs: Any) -> None:
        return None

    def add_mutually_exclusive_group(self, **kwargs: Any) -> _Skipped:
        return self


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or with ``only`` one that knows just that command."""
    parser = _Parser(prog="mailslot", description="A local mailbox for AI coding agents.",
                     epilog="Run 'mailslot COMMAND --help' for a command's options and "
                            "examples. Message ids may be shortened to their random tail "
                            "or any unique prefix of 6+ characters.")
    parser.add_argument("--version", action="version", version=f"mailslot {__version__}")
    _globals(parser, top=True)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    def add(name: str, help_text: str, *, server: bool = False
            ) -> argparse.ArgumentParser | _Skipped:
        _COMMAND_NAMES.append(name)
        if only is not None and name != only:
            return _Skipped()
        examples = "\n".join(f"  {e}" for e in _EXAMPLES.get(name, []))
        p = sub.add_parser(name, help=help_text, description=help_text,
                           epilog=f"examples:\n{examples}" if examples else None,
                           formatter_class=_raw_formatter)
        _globals(p, top=False, agent_help=_SERVER_AGENT_HELP if server else _AGENT_HELP)
        return p

    def body_options(p: argparse.ArgumentParser | _Skipped) -> None:
        p.add_argument("--body", help="message text (default: read from stdin)")

    def limit_option(p: argparse.ArgumentParser | _Skipped) -> None:
        p.add_argument("--limit", type=int, default=20, help="page size (default 20)")

    _COMMAND_NAMES.clear()
    p = add("send", "Send a message to one or more agents.")
    p.add_argument("--to", required=True, action="append",
                   help="recipient name; repeat or separate with commas for several")
    p.add_argument("--subject", required=True, help="one line, at most 200 characters")
    body_options(p)
    p.add_argument("--re-issue", help="the issue or ticket this is about, stored as given")
    p.add_argument("--expect-reply", action="store_true", help="ask the recipient to answer")
    p.add_argument("--wake", action="store_true",
                   help="ask for the recipient to be woken (its own config decides)")
    p.add_argument("--new", action="store_true",
                   help="send even to a new name close to a known agent's (not a typo)")

    p = add("inbox", "List messages, newest first, without reading their bodies.")
    p.add_argument("--for", dest="for_", metavar="NAME|all", help="another mailbox, or all")
    p.add_argument("--all", action="store_true", help="include done mail and served broadcasts")
    p.add_argument("--unread", action="store_true", help="only unread mail")
    limit_option(p)
    p.add_argument("--page", type=int, default=1, help="which page (default 1)")
    p.add_argument("--before", metavar="ID", help="the page after this message")

    p = add("sent", "What you sent, newest first, with each recipient's state.")
    limit_option(p)

    p = add("read", "Show a message in full and mark it read.")
    p.add_argument("id")
    p.add_argument("--peek", action="store_true", help="do not mark it read")

    p = add("mark-read", "Mark a message read without showing it.")
    p.add_argument("id")

    p = add("done", "Mark messages handled (they are kept, never deleted).")
    p.add_argument("ids", nargs="*", metavar="ID")
    p.add_argument("--all", action="store_true",
                   help="instead of ids: mark everything your inbox lists done (unread and "
                        "read mail; broadcasts not yet served are recorded as served)")

    p = add("reply", "Answer a message: to its sender, in its thread; marks it done.")
    p.add_argument("id")
    p.add_argument("--subject", help="the reply's subject (default: 'Re: ' and the "
                                     "original's)")
    body_options(p)

    p = add("broadcast", "Send a message every other agent is shown once.")
    p.add_argument("--subject", required=True)
    body_options(p)

    p = add("retract", "Withdraw your broadcast from agents not yet served it.")
    p.add_argument("id")

    p = add("status", "Where a message stands with each recipient, and its replies.")
    p.add_argument("id")

    add("who", "Agents known to this mailbox: unread mail, server presence and wake-up.")

    add("whoami", "The identity in use and where it came from, the mailbox folder and store.")

    p = add("agent", "Manage the roster: 'agent remove NAME' archives a mailbox; 'agent "
                     "add|list|show|rotate|revoke' manage registered agents and credentials.")
    p.add_argument("action", choices=["remove", "add", "list", "show", "rotate", "revoke"])
    p.add_argument("name", metavar="NAME", nargs="?")
    p.add_argument("--parent", metavar="P", help="add: a child agent of P (it may talk to "
                                                  "P only)")
    p.add_argument("--runtime", metavar="R", help="add: the host it runs in (claude-code, "
                                                   "codex-cli, gemini-cli, ... or free text)")
    p.add_argument("--credential-file", metavar="FILE",
                   help="add, rotate: where to write the credential (default: "
                        "$XDG_CONFIG_HOME/mailslot/credentials/NAME.json)")
    p.add_argument("--yes", action="store_true", help="confirm without asking")

    p = add("doctor", "Check the mailbox folder's permissions, config and leftovers.")
    p.add_argument("--deep", action="store_true",
                   help="also read every message and name the unreadable ones")
    p.add_argument("--fix", action="store_true",
                   help="tighten permissions, remove staging files older than 36 hours and "
                        "move unreadable messages to the quarantine folder (implies --deep)")

    p = add("serve", "Run the MCP server (stdio) for one agent: --agent NAME or "
                     "MAILSLOT_AGENT.", server=True)
    p.add_argument("--channel", action="store_true",
                   help="also push a notice into Claude Code when mail arrives (Claude Code "
                        "channels, research preview; see docs/claude-wake.md)")
    p.add_argument("--exclusive", action="store_true",
                   help="refuse to start while another session of this agent runs")
    p.add_argument("--replace-session", metavar="ID",
                   help="replace (fence) the running session ID of this agent: its next "
                        "write is refused (implies --exclusive)")
    p.add_argument("--peer-of", metavar="P",
                   help="speak as a child of P: send and reply only to P, read only its own "
                        "inbox (default: $MAILSLOT_PEER_OF)")

    p = add("install", "Register mailslot with an agent host (its MCP server; with --hooks "
                       "its hooks), as the agent given by --agent.", server=True)
    hosts, scopes = _install_choices() if isinstance(p, argparse.ArgumentParser) else ((), ())
    p.add_argument("host", choices=hosts)
    p.add_argument("--scope", choices=scopes,
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
    p.add_argument("--allow-outside", action="append", default=[], metavar="REAL_PATH",
                   help="write a project settings file that links out of the project, to "
                        "this real path (refused otherwise)")

    p = add("hook", "Show pending mail to an agent from a host's hook (prints the host's JSON).")
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
                      help="check each configured agent's wake settings; print what is wrong")
    p.add_argument("--poll", type=_seconds, metavar="SECONDS",
                   help="poll the queue this often instead of using file-system events")

    p = add("completion", "Print a shell completion script (agent names and ids included).")
    p.add_argument("shell", nargs="?", choices=["bash", "zsh", "fish"])
    p.add_argument("--words", choices=["commands", "agents", "ids"],
                   help="print the words to complete, one a line (what the scripts call)")
    # The local web page
    p = add("web", "Serve a local web page (127.0.0.1 only) to watch mail live, send as the "
                   "owner and edit wake settings; prints a one-time login link.")
    p.add_argument("--port", type=_port, default=3344,
                   help="port on 127.0.0.1 (default 3344; a busy port falls back to a free "
                        "one, and 0 always picks a free one)")

    # Gates and admission
    p = add("join", "Ask a gated agent for access: a request that always reaches it.")
    p.add_argument("name", metavar="NAME")
    p.add_argument("--note", required=True, help="why you ask (shown to it as mail)")
    for verb, text in (("admit", "Let NAME write to you (answers its request)."),
                       ("refuse", "Turn down NAME's pending request (it is told)."),
                       ("revoke", "Take NAME off your gate's members.")):
        p = add(verb, text)
        p.add_argument("name", metavar="NAME")
    add("pending", "Requests waiting at your gate.")
    p = add("sessions", "Sessions of an agent, or of every agent: its servers and the "
                        "host sessions its hooks ran in, with their session ids.")
    p.add_argument("name", metavar="NAME", nargs="?")
    p.add_argument("--started", action="store_true",
                   help="the sessions mailslot started (the session log), "
                        "oldest first")
    p = add("gate", "Show your gate; 'gate on' takes mail from admitted members only, "
                    "'gate off' from anyone.")
    p.add_argument("state", nargs="?", choices=["on", "off"])
    p.add_argument("--name", metavar="GROUP",
                   help="a group gate: every agent behind it shares its members and join "
                        "requests (joining an existing group needs admission to it)")

    # Creating a store and moving between stores
    add("init", "Create the mailbox (a folder, or a PostgreSQL database's schema), or "
                "upgrade an older one; safe to run twice.")
    p = add("migrate", "Copy every message, state, broadcast, seen set, event, queued wake "
                       "and the config from one store to another; a second run copies "
                       "nothing.")
    p.add_argument("--from", dest="source", required=True, metavar="DIR|URL")
    p.add_argument("--to", dest="target", required=True, metavar="DIR|URL")
    p = add("config", "Show or change the config (config.json, or the database's) on any "
                      "store: show, get KEY, set KEY VALUE, unset KEY, export [FILE], "
                      "import FILE. KEY is a dotted path (agents.codex.wake_on_mail); "
                      "VALUE is JSON if it parses as JSON, else text. A change is saved "
                      "whole or not at all, and refused if doctor or watch --validate "
                      "would report a new problem.")
    p.add_argument("action", choices=list(_CONFIG_ARGS))
    p.add_argument("words", nargs="*", metavar="KEY|VALUE|FILE")
    p.add_argument("--if-version", metavar="VERSION",
                   help="refuse the change if the config is no longer at this version (as "
                        "show, get and export print it)")
    p = add("pg", "PostgreSQL administration (as the admin role): grant NAME creates the "
                  "database role mailslot_NAME, which reads only NAME's mail and sends only "
                  "as NAME.")
    p.add_argument("action", choices=["grant"])
    p.add_argument("name", metavar="NAME")

    # Starting agent sessions
    p = add("start", "Start an agent session (claude, codex, gemini, copilot, antigravity) "
                     "under the owner's guardrails (config.json: launch; docs/launch.md).")
    p.add_argument("host", choices=["claude", "codex", "gemini", "copilot", "antigravity"])
    p.add_argument("--folder", required=True, help="absolute path of an existing folder")
    p.add_argument("--prompt", help="the first prompt (default: read from stdin)")
    p.add_argument("--name", help="the session's name or title (also its tmux window)")
    p.add_argument("--model", help="default: launch.HOST.default_model, then the host's")
    p.add_argument("--effort", help="reasoning effort, where the host has one")
    p.add_argument("--permission-mode", help="one of the host's modes the owner allows")
    p.add_argument("--handoff", choices=["background", "tmux", "desktop"],
                   default="background",
                   help="background (unattended; default), tmux (a window you can "
                        "attach to and mailslot can wake) or desktop (claude: the prompt "
                        "prefilled in the Claude desktop app, for you to send)")
    p.add_argument("--project", help="antigravity: the project id")
    p.add_argument("--register-as", metavar="NAME",
                   help="also register the session as a new recipient NAME that wakes it")


    # Search, threads and the search index
    p = add("search", "Find your mail by words in subjects and bodies, best match first.")
    p.add_argument("query", help="words (all must appear), \"a phrase\", prefix*, AND, OR, "
                                 "NOT, -word, (groups)")
    p.add_argument("--from", dest="from_", metavar="NAME", help="only mail from this agent")
    p.add_argument("--to", metavar="NAME", help="only mail addressed to this agent (or all)")
    p.add_argument("--since", metavar="DATE", help="only mail from this date or time on "
                                                   "(ISO 8601; a date is your local day)")
    p.add_argument("--until", metavar="DATE", help="only mail before this time (a date "
                                                   "includes that whole day)")
    p.add_argument("--state", action="append", choices=["unread", "read", "done"],
                   help="only mail in this state for you; repeat for several")
    p.add_argument("--thread", metavar="ID", help="only the thread of this message")
    limit_option(p)

    p = add("thread", "Show a conversation in order, with each message's state.")
    p.add_argument("id")

    p = add("index", "Manage the search index (derived from the messages; safe to rebuild).")
    p.add_argument("--rebuild", action="store_true", required=True,
                   help="build it again from the message files")

    p = add("export", "Write every message with each recipient's state (jsonl, mbox, maildir); "
                      "the output is private (0600) and never overwrites.")
    p.add_argument("--format", choices=["jsonl", "mbox", "maildir"], default="jsonl",
                   help="jsonl (default; one message a line), mbox (one file) or maildir "
                        "(a folder), the last two readable by mutt or Thunderbird")
    p.add_argument("--output", default="-", metavar="PATH",
                   help="a new file (jsonl, mbox) or folder (maildir); jsonl default: stdout")
    p.add_argument("--for", dest="for_", metavar="NAME",
                   help="only mail to or from this agent (maildir: its state sets the flags)")
    p.add_argument("--since", metavar="DATE", help="only mail from this date or time on")

    p = add("backup", "Write a consistent snapshot of the mailbox to FILE (tar.gz with a "
                      "manifest of checksums; private, never overwrites), optionally "
                      "encrypted with age.")
    p.add_argument("file", metavar="FILE", help="a new file")
    p.add_argument("--encrypt", action="store_true",
                   help="encrypt (age format) to --recipient or with --passphrase")
    p.add_argument("--recipient", action="append", metavar="KEY",
                   help="an age X25519 recipient (age1...); repeat for several")
    p.add_argument("--passphrase", action="store_true",
                   help="encrypt with a passphrase asked for on the terminal "
                        "(or $MAILSLOT_PASSPHRASE)")

    p = add("restore", "Check a backup's every checksum, then copy it into an empty "
                       "mailbox (or, with --merge, add what one lacks); any store.")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--into", metavar="DIR|URL",
                   help="the store to restore into (default: this mailbox, --dir/--store)")
    p.add_argument("--merge", action="store_true",
                   help="add to a mailbox that is not empty (never overwrites; a second run "
                        "adds nothing)")
    p.add_argument("--max-bytes", type=int, metavar="N",
                   help="refuse a backup that unpacks to more than N bytes (default 8 GiB)")
    p.add_argument("--identity", metavar="FILE",
                   help="an encrypted backup: the age identity file (age-keygen's)")
    p.add_argument("--passphrase", action="store_true",
                   help="an encrypted backup: ask for its passphrase (or "
                        "$MAILSLOT_PASSPHRASE)")

    p = add("import", "Bring in mail from another agent mailbox (or a mailslot export); "
                      "a second run adds nothing; prints what could not be mapped.")
    p.add_argument("format", metavar="FORMAT",
                   choices=["jsonl", "dead-drop", "repo-mailbox", "a2a-mailbox", "letterbox",
                            "agent-mailbox", "mcp-agent-mail"],
                   help="jsonl (mailslot export), dead-drop, repo-mailbox, a2a-mailbox, "
                        "letterbox, agent-mailbox, mcp-agent-mail")
    p.add_argument("path", metavar="PATH", help="the file or folder of that mailbox")

    # Serve --http, remote hooks and the remote everyday commands
    def remote_options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--remote", metavar="URL",
                       help="run against a 'mailslot serve --http' server at URL (see "
                            "docs/remote.md); the identity is the credential's")

    for name in (*_REMOTE_COMMANDS, "hook"):
        if name in sub.choices:
            remote_options(sub.choices[name])
    if "install" in sub.choices:
        sub.choices["install"].add_argument(
            "--remote", metavar="URL",
            help="register a 'mailslot serve --http' server at URL instead of a local one "
                 "(claude, codex, gemini, cursor); needs --credential FILE, whose secret "
                 "the host reads from $MAILSLOT_SECRET (see docs/remote.md)")
    if "serve" in sub.choices:
        p = sub.choices["serve"]
        p.add_argument("--http", metavar="[ADDR:]PORT",
                       help="serve the MCP tools over Streamable HTTP instead of stdio, to "
                            "agents with credentials; loopback unless ADDR says otherwise")
        p.add_argument("--tls-cert", metavar="FILE", help="--http: TLS certificate (PEM)")
        p.add_argument("--tls-key", metavar="FILE", help="--http: TLS private key (PEM)")
        p.add_argument("--behind-proxy", metavar="ADDR",
                       help="--http: a TLS proxy at this IP address forwards to us; no one "
                            "else may connect")
        p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                       help="--http: another Host name clients use (repeatable)")
        p.add_argument("--rate-limit", type=int, default=600, metavar="N",
                       help="--http: requests per minute per credential (default 600)")
        p.add_argument("--session-idle", type=float, default=1800.0, metavar="SECONDS",
                       help="--http: end an MCP session after this long with no request "
                            "in flight (its client is gone; default 1800)")
    return parser


def _install_choices() -> tuple[tuple[str, ...], tuple[str, ...]]:
    from ..hosts import NAMES
    from ..hosts.host import SCOPES

    return NAMES, SCOPES


def command_word(argv: Sequence[str]) -> str | None:
    """The command the line names, if it can be told before parsing: the first word
    that is not an option or an option's value, with no help asked for before it."""
    words = iter(argv)
    for word in words:
        if word in ("-h", "--help", "--version"):
            return None
        if word in ("--dir", "--store", "--agent", "--credential"):
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def _mistyped(word: str | None) -> str | None:
    """'did you mean' for a command word that is no command; ``None`` when it is one."""
    if word is None or word in _COMMAND_NAMES:
        return None
    near = closest(word, _COMMAND_NAMES)
    hint = f": did you mean {near}?" if near else ""
    return f"unknown command {word!r}{hint} (see 'mailslot --help')"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    global _JSON_ASKED
    _JSON_ASKED = "--json" in argv
    word = command_word(argv)
    parser = build_parser(only=word)
    if not argv:
        parser.print_help()  # `mailslot` alone: show what it can do
        return 2
    typo = _mistyped(word)
    if typo is not None:
        return _fail(typo, "usage", 2, as_json=_JSON_ASKED)
    args = parser.parse_args(argv)
    if args.command in _UNTRANSLATED:
        return _UNTRANSLATED[args.command](args)
    try:
        remote = getattr(args, "remote", None)  # the credential is the server's
        box = Mailbox.open(args.dir, args.agent,
                           credential=None if remote else args.credential,
                           peer_of=getattr(args, "peer_of", None))
        return _COMMANDS[args.command](args, box)
    except MailslotError as exc:
        code = next(c for kind, c in _CODES if isinstance(exc, kind))
        return _fail(str(exc), code, 2 if isinstance(exc, InvalidInput) else 1,
                     as_json=args.json)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
