"""The store's administration: init, doctor, config (any store's config, read and
changed) and pg (PostgreSQL roles)."""

from __future__ import annotations

import sys

from ...core.errors import InvalidInput
from . import render
from .command import Command, emit

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from ...service.mailbox import Mailbox


INIT = Command("init", "Create the mailbox (a folder, or a PostgreSQL database's schema), or "
                       "upgrade an older one; safe to run twice.", examples=[
                   "mailslot init", "mailslot init ~/team-mailbox",
                   "mailslot init postgresql://mailslot@db.example/mail"])


@INIT.arguments
def _init_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("location", nargs="?", metavar="DIR|URL",
                   help="where: a folder or a postgresql:// URL (default: --dir/--store, "
                        "else as every command finds the mailbox)")


@INIT.handler
def _init(args: argparse.Namespace, box: Mailbox) -> int:
    print(box.store.init())
    return 0


DOCTOR = Command("doctor", "Check the mailbox folder's permissions, config and leftovers.",
                 existing=True, examples=["mailslot doctor", "mailslot doctor --fix",
                           "mailslot doctor --wake reviewer"])


@DOCTOR.arguments
def _doctor_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--deep", action="store_true",
                   help="check every stored file (done mail and archives too), read every "
                        "message and name the unreadable ones, and count every tally "
                        "again; the default check is bounded by open mail")
    p.add_argument("--fix", action="store_true",
                   help="tighten permissions, remove staging files older than 36 hours and "
                        "move unreadable messages to the quarantine folder (implies --deep)")
    p.add_argument("--wake", metavar="AGENT",
                   help="probe AGENT's configured wake again and show its host's ladder: "
                        "each method install --wake would try, in order, and its probe")
    p.add_argument("--host", metavar="HOST",
                   help="--wake: the host AGENT runs in (default: the host of its wake "
                        "method, else of its latest hook session)")


@DOCTOR.handler
def _doctor(args: argparse.Namespace, box: Mailbox) -> int:
    if args.wake is not None:
        found = box.wake_diagnosis(args.wake, args.host)
        emit(args, found.as_dict(), render.wake_diagnosis(found))
        return 0 if found.ok else 1
    if args.host is not None:
        raise InvalidInput("--host goes with --wake AGENT")
    report = box.doctor(fix=args.fix, deep=args.deep)
    data = {"location": report.location, "problems": report.problems, "fixed": report.fixed,
            "watcher": report.watcher.as_dict() if report.watcher else None,
            "deep": report.deep, "bridges": list(report.bridges),
            "wake_paths": list(report.routes)}
    emit(args, data, render.doctor(report))
    return 0 if report.healthy else 1


# Changing the config on any store (config.json, or PostgreSQL's row) -------------------
_CONFIG_ARGS = {"show": (0, 0), "get": (1, 1), "set": (2, None), "unset": (1, 1),
                "import": (1, 1), "export": (0, 1)}
"""How many words each ``config`` action takes after it (at least, at most: ``None``, any
number of KEY VALUE pairs)."""
_CONFIG_USAGE = {"show": "", "get": " KEY", "set": " KEY VALUE [KEY VALUE ...] (or --merge "
                 "JSON)", "unset": " KEY", "import": " FILE", "export": " [FILE]"}

CONFIG = Command("config", "Show or change the config (config.json, or the database's) on any "
                           "store: show, get KEY, set KEY VALUE [KEY VALUE ...], unset KEY, "
                           "export [FILE], import FILE. KEY is a dotted path "
                           "(agents.reviewer.wake_on_mail); VALUE is JSON if it parses as "
                           "JSON, else text. Keys set in one command are checked together "
                           "(set a wake method and its fields at once). A change is saved "
                           "whole or not at all, and refused if doctor or watch --validate "
                           "would report a new problem. Only the owner, or a process with no "
                           "identity, changes owner, require_credentials and governor.",
                 existing=lambda args: args.action in ("show", "get", "export"),
                 examples=[
                     "mailslot config show",
                     "mailslot config set agents.reviewer.wake_method unsupported   # text: not "
                     "JSON",
                     "mailslot config set agents.reviewer.wake_on_mail false         # JSON",
                     "mailslot config set agents.reviewer.wake_method tmux "
                     "agents.reviewer.tmux_target work:1 agents.reviewer.tmux_program my-agent",
                     "mailslot config set --merge '{\"agents\": {\"reviewer\": "
                     "{\"wake_on_mail\": false, \"wake_method\": \"unsupported\"}}}'",
                     "mailslot config get agents.reviewer.wake_method",
                     "mailslot config set launch.allowed_callers '[\"orchestrator\"]'",
                     "mailslot config unset agents.reviewer.note --if-version 3f9c0a1b2c3d4e5f",
                     "mailslot config export config-backup.json",
                     "mailslot config import config-backup.json --store "
                     "postgresql://mailslot@db.example/mail"])


@CONFIG.arguments
def _config_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=list(_CONFIG_ARGS))
    p.add_argument("words", nargs="*", metavar="KEY|VALUE|FILE")
    p.add_argument("--merge", metavar="JSON",
                   help="set: every value of this JSON object at its path, other keys kept "
                        "(with no KEY VALUE)")
    p.add_argument("--if-version", metavar="VERSION",
                   help="refuse the change if the config is no longer at this version (as "
                        "show --json, get --json, export and every change print it)")


@CONFIG.handler
def _config(args: argparse.Namespace, box: Mailbox) -> int:
    from ...service import config_edit as edit

    words, merging = args.words, args.merge is not None
    if merging and args.action != "set":
        raise InvalidInput(f"--merge is for config set, not config {args.action}")
    if not _fits(args.action, words, merging):
        raise InvalidInput(f"usage: mailslot config {args.action}{_CONFIG_USAGE[args.action]}")
    store, expected = box.store, args.if_version
    if args.action in ("show", "get"):
        value, seen = (edit.current(store) if args.action == "show"
                       else edit.get(store, words[0]))
        emit(args, {"version": seen, "value": value},  # the version: with --json only
             edit.as_text(value).rstrip("\n"))  # type: ignore[arg-type]
        return 0
    if args.action == "export":
        if words:
            seen = edit.export_to(store, words[0])
            emit(args, {"version": seen, "file": words[0]},
                 f"exported the config (version {seen}) to {words[0]}")
        else:
            raw, seen = edit.current(store)
            print(edit.as_text(raw), end="")
            _version_note(args, seen)
        return 0
    if merging:
        now, keys = edit.merge(box, args.merge, expected=expected)
        done = f"set {', '.join(keys)}"
    elif args.action == "set":
        pairs = [(key, edit.parse_value(text)) for key, text in zip(words[::2], words[1::2],
                                                                     strict=True)]
        now = edit.set_values(box, pairs, expected=expected)
        done = f"set {', '.join(words[::2])}"
    elif args.action == "unset":
        now, done = edit.unset(box, words[0], expected=expected), f"unset {words[0]}"
    else:
        now = edit.import_from(box, words[0], expected=expected)
        done = f"imported the config from {words[0]}"
    emit(args, {"version": now}, f"{done} (config version {now})")
    return 0


def _fits(action: str, words: list[str], merging: bool) -> bool:
    """Does ``config ACTION`` take these words (``set --merge``: none)?"""
    least, most = _CONFIG_ARGS[action]
    if merging:
        return not words
    if most is None:
        return len(words) >= least and len(words) % 2 == 0
    return least <= len(words) <= most


def _version_note(args: argparse.Namespace, seen: str) -> None:
    if not args.json:
        print(f"mailslot: note: config version {seen} (a change given --if-version {seen} "
              "is refused if the config moves meanwhile)", file=sys.stderr)


# PostgreSQL administration ------------------------------------------------------
PG = Command("pg", "PostgreSQL administration (as the admin role): grant NAME creates the "
                   "database role mailslot_NAME, which reads only NAME's mail and sends only "
                   "as NAME.",
             examples=["mailslot pg grant reviewer --store postgresql://admin@db.example/mail"])


@PG.arguments
def _pg_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["grant"])
    p.add_argument("name", metavar="NAME")


@PG.handler
def _pg(args: argparse.Namespace, box: Mailbox) -> int:
    grant = getattr(box.store, "grant", None)
    if grant is None:
        raise InvalidInput("pg grant needs a postgresql:// store (--store URL or "
                           "MAILSLOT_STORE)")
    print(grant(args.name))
    return 0


COMMANDS = (INIT, DOCTOR, CONFIG, PG)
