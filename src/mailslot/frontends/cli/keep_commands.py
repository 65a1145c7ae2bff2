"""The commands that find and keep mail: search, thread, index, export, backup, restore,
import and migrate. Each imports its part of :mod:`mailslot.keep` only when it runs."""

from __future__ import annotations

import sys

from ...core.errors import InvalidInput
from . import render
from .command import Command, emit, limit_option, style

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from ...service.mailbox import Mailbox


# Search, threads and the search index ---------------------------------------------
SEARCH = Command("search", "Find your mail by words in subjects and bodies, best match "
                           "first.", existing=True, examples=[
                     "mailslot search 'database migration'",
                     "mailslot search '\"schema change\" OR deploy*' --from builder --since "
                     "2026-09-01",
                     "mailslot search 'release NOT staging' --state unread --json"])


@SEARCH.arguments
def _search_arguments(p: argparse.ArgumentParser) -> None:
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


@SEARCH.handler
def _search(args: argparse.Namespace, box: Mailbox) -> int:
    from ...keep import finding

    items = finding.search(box, args.query, sender=args.from_, recipient=args.to,
                           since=args.since, until=args.until, states=args.state or (),
                           thread=args.thread, limit=args.limit)
    emit(args, [i.as_dict(with_body=True) for i in items],
         render.found(items, style=style(args)))
    if args.json and items.still_indexing:
        print(f"mailslot: {items.still_indexing}", file=sys.stderr)  # JSON stays a list
    return 0


THREAD = Command("thread", "Show a conversation in order, with each message's state.",
                 existing=True, examples=["mailslot thread 7f3a9c2e"])


@THREAD.arguments
def _thread_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("id")


@THREAD.handler
def _thread(args: argparse.Namespace, box: Mailbox) -> int:
    from ...keep import finding

    entries = finding.thread(box, args.id)
    emit(args, [e.as_dict() for e in entries], render.thread(entries, style=style(args)))
    return 0


INDEX = Command("index", "Manage the search index (derived from the messages; safe to "
                         "rebuild).", existing=True, examples=["mailslot index --rebuild"])


@INDEX.arguments
def _index_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rebuild", action="store_true", required=True,
                   help="build it again from the message files")


@INDEX.handler
def _index(args: argparse.Namespace, box: Mailbox) -> int:
    from ...keep import finding

    count = finding.reindex(box)
    emit(args, {"indexed": count}, f"search index rebuilt: {count} message(s)")
    return 0


# Retention: month archives of done mail ---------------------------------------------
ARCHIVE = Command("archive", "Owner only: move done mail older than an age into compressed, "
                             "still searchable month archives, or bring it back.",
                  existing=True,
                  examples=["mailslot --agent sarah archive --older-than 90d --dry-run"
                            "   # as the owner",
                            "mailslot --agent sarah archive --older-than 12w",
                            "mailslot --agent sarah archive --list",
                            "mailslot --agent sarah archive --restore --all"])


@ARCHIVE.arguments
def _archive_arguments(p: argparse.ArgumentParser) -> None:
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--older-than", metavar="AGE",
                      help="archive done mail older than this: days or weeks (90d, 12w)")
    what.add_argument("--restore", metavar="MONTH", nargs="*",
                      help="move the archives of these months (YYYY-MM) back into done/")
    what.add_argument("--list", action="store_true", help="the archived months")
    p.add_argument("--all", action="store_true", help="with --restore: every month")
    p.add_argument("--dry-run", action="store_true",
                   help="with --older-than: say what would move, move nothing")


@ARCHIVE.handler
def _archive(args: argparse.Namespace, box: Mailbox) -> int:
    from ...keep import archiving

    if args.restore is not None:
        if bool(args.restore) == args.all:
            raise InvalidInput("--restore needs months (YYYY-MM) or --all, not both")
        moved = archiving.restore(box, None if args.all else args.restore)
        emit(args, {"restored": moved}, render.months(moved, "restored", "to restore"))
    elif args.list:
        held = archiving.months(box)
        emit(args, {"archived": held}, render.months(held, "archived", "archived"))
    else:
        if args.all:
            raise InvalidInput("--all goes with --restore")
        moved = archiving.archive(box, args.older_than, dry_run=args.dry_run)
        done = "would archive" if args.dry_run else "archived"
        emit(args, {"archived": moved, "dry_run": args.dry_run},
             render.months(moved, done, "to archive"))
    return 0


# Export, backup and restore, import ----------------------------------------------
EXPORT = Command("export", "Write every message with each recipient's state (jsonl, mbox, "
                           "maildir); the output is private (0600) and never overwrites.",
                 existing=True, examples=["mailslot export > mail.jsonl",
                           "mailslot export all-mail.jsonl",
                           "mailslot export --format mbox mail.mbox",
                           "mailslot export --format maildir --for reviewer reviewer-mail"])


@EXPORT.arguments
def _export_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=["jsonl", "mbox", "maildir"], default="jsonl",
                   help="jsonl (default; one message a line), mbox (one file) or maildir "
                        "(a folder), the last two readable by mutt or Thunderbird")
    p.add_argument("file", nargs="?", metavar="PATH",
                   help="a new file (jsonl, mbox) or folder (maildir); jsonl default: "
                        "standard output (-)")
    p.add_argument("--output", metavar="PATH", help="the same as PATH")
    p.add_argument("--for", dest="for_", metavar="NAME",
                   help="only mail to or from this agent (maildir: its state sets the flags)")
    p.add_argument("--since", metavar="DATE", help="only mail from this date or time on")


@EXPORT.handler
def _export(args: argparse.Namespace, box: Mailbox) -> int:
    from ...keep import exporting

    if args.file is not None and args.output is not None:
        raise InvalidInput("give the export's PATH or --output PATH, not both")
    output = args.file or args.output or "-"
    count = exporting.export(box.store, args.format, output, agent=args.for_,
                             since=args.since)
    if output != "-":
        emit(args, {"exported": count, "output": output},
             f"exported {count} message(s) to {output}")
    return 0


BACKUP = Command("backup", "Write a consistent snapshot of the mailbox to FILE (tar.gz with a "
                           "manifest of checksums; private, never overwrites), optionally "
                           "encrypted with age.", existing=True, examples=[
                     "mailslot backup mail-2026-09-21.tar.gz",
                     "mailslot backup mail.tar.gz.age --recipient age1ql3z7hjy54pw3hyww5ayyf"
                     "g7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"])


@BACKUP.arguments
def _backup_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="a new file")
    p.add_argument("--encrypt", action="store_true",
                   help="encrypt (age format) to --recipient or with --passphrase")
    p.add_argument("--recipient", action="append", metavar="KEY",
                   help="an age X25519 recipient (age1...); repeat for several")
    p.add_argument("--passphrase", action="store_true",
                   help="encrypt with a passphrase asked for on the terminal "
                        "(or $MAILSLOT_PASSPHRASE)")


@BACKUP.handler
def _backup(args: argparse.Namespace, box: Mailbox) -> int:
    from ...keep import backup, sealing

    seal = None
    if args.encrypt or args.recipient or args.passphrase:
        secret = sealing.passphrase(confirm=True) if args.passphrase else None
        seal = sealing.sealer(args.recipient or [], secret)
    summary = backup.backup(box.store, args.file, seal=seal)
    emit(args, {"output": args.file, "encrypted": seal is not None, **summary.as_dict()},
         f"backed up {', '.join(backup.members(summary)) or 'an empty mailbox'} to "
         f"{args.file}" + "".join(f"\nnot backed up (unreadable): {s}"
                                  for s in summary.skipped))
    return 1 if summary.skipped else 0


RESTORE = Command("restore", "Check a backup's every checksum, then copy it into an empty "
                             "mailbox (or, with --merge, add what one lacks); any store.",
                  examples=[
                      "mailslot restore mail-2026-09-21.tar.gz --into ~/mailslot-restored",
                      "mailslot restore mail.tar.gz.age --identity ~/keys/mailslot.txt "
                      "--merge",
                      "mailslot restore mail.tar.gz --into "
                      "postgresql://mailslot@db.example/mail"])


@RESTORE.arguments
def _restore_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE")
    p.add_argument("--into", metavar="DIR|URL",
                   help="the store to restore into (default: this mailbox, --dir/--store)")
    p.add_argument("--merge", action="store_true",
                   help="add to a mailbox that is not empty (never overwrites; a second run "
                        "adds nothing)")
    p.add_argument("--max-bytes", type=int, metavar="N",
                   help="refuse a backup that unpacks to more than N bytes (default 8 GiB)")
    _init_option(p)
    p.add_argument("--identity", metavar="FILE",
                   help="an encrypted backup: the age identity file (age-keygen's)")
    p.add_argument("--passphrase", action="store_true",
                   help="an encrypted backup: ask for its passphrase (or "
                        "$MAILSLOT_PASSPHRASE)")


@RESTORE.handler
def _restore(args: argparse.Namespace, box: Mailbox) -> int:
    from ...keep import backup, sealing

    unseal = None
    if args.identity or args.passphrase:
        secret = sealing.passphrase(confirm=False) if args.passphrase else None
        unseal = sealing.unsealer(args.identity, secret)
    into = args.into or box.store.location
    if args.max_bytes is not None and args.max_bytes < 1:
        raise InvalidInput("--max-bytes must be a positive number of bytes")
    summary = backup.restore(args.file, into, merge=args.merge, unseal=unseal,
                             max_bytes=args.max_bytes or backup.MAX_ARCHIVE_BYTES,
                             init=args.init)
    emit(args, {"into": into, **summary.as_dict()},
         (f"restored {', '.join(backup.members(summary))} into {into}"
          if summary.counts else f"nothing to restore: {into} has everything")
         + "".join(f"\nnot restored (unreadable): {s}" for s in summary.skipped))
    return 1 if summary.skipped else 0


IMPORT = Command("import", "Bring in mail from another agent mailbox (or a mailslot "
                           "export); a second run adds nothing; prints what could not be "
                           "mapped.", examples=[
                     "mailslot import jsonl mail.jsonl",
                     "mailslot import mbox mail.mbox",
                     "mailslot import letterbox ~/.letterbox",
                     "mailslot import a2a-mailbox ~/.agents-mailbox --json"])


@IMPORT.arguments
def _import_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("format", metavar="FORMAT",
                   choices=["jsonl", "mbox", "maildir", "dead-drop", "repo-mailbox",
                            "a2a-mailbox", "letterbox", "agent-mailbox", "mcp-agent-mail"],
                   help="jsonl, mbox, maildir (what mailslot export writes), dead-drop, "
                        "repo-mailbox, a2a-mailbox, letterbox, agent-mailbox, "
                        "mcp-agent-mail")
    p.add_argument("path", metavar="PATH", help="the file or folder of that mailbox")


@IMPORT.handler
def _import(args: argparse.Namespace, box: Mailbox) -> int:
    from ...keep.importing import import_mail

    report = import_mail(box, args.format, args.path,
                         max_body_bytes=box.max_body_bytes)
    emit(args, report.as_dict(),
         "\n".join([report.summary(), *(f"not mapped: {u}" for u in report.unmapped)]))
    return 0


# Moving between stores --------------------------------------------------------------
MIGRATE = Command("migrate", "Copy every message, state, broadcast, seen set, event, queued "
                             "wake and the config from one store to another; a second run "
                             "copies nothing.", examples=[
                      "mailslot migrate --from ~/mailslot --to "
                      "postgresql://mailslot@db.example/mail"])


@MIGRATE.arguments
def _migrate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--from", dest="source", required=True, metavar="DIR|URL")
    p.add_argument("--to", dest="target", required=True, metavar="DIR|URL")
    _init_option(p)


def _init_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--init", action="store_true",
                   help="make the target a mailbox first, as mailslot init does (needed "
                        "for a database without mailslot's schema, or a folder holding "
                        "other files)")


@MIGRATE.handler
def _migrate(args: argparse.Namespace, box: Mailbox) -> int:
    from ...keep.transfer import migrate

    copied, skipped = migrate(args.source, args.target, init=args.init)
    data = {"copied": dict(copied), "unreadable": skipped}
    kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(copied.items()) if n)
    text = f"copied {kinds}" if kinds else "nothing to copy: the target has everything"
    emit(args, data, "\n".join([text, *(f"not copied (unreadable): {s}" for s in skipped)]))
    return 1 if skipped else 0


COMMANDS = (SEARCH, THREAD, INDEX, ARCHIVE, EXPORT, BACKUP, RESTORE, IMPORT, MIGRATE)
