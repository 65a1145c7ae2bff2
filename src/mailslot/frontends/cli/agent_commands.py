"""The agent commands: who, whoami, agent (the roster, registered agents and their
credentials), sessions, the gate: gate, join, admit, refuse, revoke, pending, and the
owner's pause and resume."""

from __future__ import annotations

import sys

from ...core.errors import InvalidInput
from . import render
from .command import Command, emit, style

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from ...service.mailbox import Mailbox


def _name(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME")


WHO = Command("who", "Agents known to this mailbox: unread mail, server presence and "
                     "wake-up.", existing=True, examples=["mailslot who", "mailslot who --json"])


@WHO.arguments
def _who_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--online", action="store_true",
                   help="only agents with a mailslot server online now")


@WHO.handler
def _who(args: argparse.Namespace, box: Mailbox) -> int:
    agents = box.who(online_only=args.online)
    emit(args, [a.as_dict() for a in agents], render.who(agents, style=style(args)))
    return 0


WHOAMI = Command("whoami", "The identity in use and where it came from, the mailbox folder "
                           "and store.",
                 examples=["mailslot whoami", "mailslot --agent builder whoami --json"])


@WHOAMI.handler
def _whoami(args: argparse.Namespace, box: Mailbox) -> int:
    me = box.whoami()
    emit(args, me.as_dict(), render.whoami(me))
    return 0 if me.name else 1


# The roster, registered agents and credentials --------------------------------------
AGENT = Command("agent", "Manage the roster: 'agent remove NAME' archives a mailbox; 'agent "
                         "add|list|show|rotate|revoke' manage registered agents and "
                         "credentials.",
                existing=lambda args: args.action in ("list", "show"), examples=lambda: [
                    "mailslot agent remove reveiwer",
                    f"mailslot agent add planner --runtime {_runtimes()[0]} --yes",
                    "mailslot agent add tester --parent planner --yes",
                    "mailslot agent list", "mailslot agent rotate planner --yes"])


def _runtimes() -> list[str]:
    from ...access.authority import runtimes

    return runtimes()


@AGENT.arguments
def _agent_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["remove", "add", "list", "show", "rotate", "revoke"])
    p.add_argument("name", metavar="NAME", nargs="?")
    p.add_argument("--parent", metavar="P", help="add: a child agent of P (it may talk to "
                                                  "P only)")
    p.add_argument("--runtime", metavar="R", help="add: the host it runs in ("
                   + ", ".join(_runtimes()[:3]) + ", ... or free text)")
    p.add_argument("--expires", metavar="WHEN",
                   help="add, rotate: the credential's lifetime, 30m, 8h, 7d, 2w or never "
                        "(default: 24h for a child agent, never for any other; rotate "
                        "keeps never as never)")
    p.add_argument("--credential-file", metavar="FILE",
                   help="add, rotate: where to write the credential (default: "
                        "$XDG_CONFIG_HOME/mailslot/credentials/NAME.json)")
    p.add_argument("--bind-to", metavar="PID", type=int,
                   help="add, rotate: write the credential as a binding that holds only "
                        "in process PID (the launcher) and what it starts, while it runs; "
                        "hand it to the child as MAILSLOT_BINDING=FILE")
    p.add_argument("--yes", action="store_true", help="confirm without asking")


@AGENT.handler
def _agent(args: argparse.Namespace, box: Mailbox) -> int:
    if args.action != "remove":
        return _registry(args, box)
    if args.name is None:
        raise InvalidInput("name the agent: mailslot agent remove NAME")
    where = box.remove_agent(args.name)
    emit(args, {"name": args.name.lower(), "archived": where},
         f"archived {args.name.lower()}'s mailbox: {where} (kept on disk; out of who)")
    return 0


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
    from ...access import authority

    if args.action == "list":
        found = [authority.describe(r) for r in authority.records(box.store)]
        emit(args, found, render.registered(found))
        return 0
    if args.name is None:
        raise InvalidInput(f"name the agent: mailslot agent {args.action} NAME")
    if args.action == "show":
        one = authority.describe(authority.record(box.store, args.name))
        emit(args, one, render.registered([one]))
        return 0
    name = args.name.lower()
    if args.action == "revoke":
        _confirm(args, f"Revoke {name} for good (its children too)?")
        one = authority.describe(authority.revoke(box.store, name))
        emit(args, one, f"revoked {name}: its credential (and its children's) no longer "
                        "works")
        return 0
    if args.action == "add":
        _confirm(args, f"Register {name} and write its credential?")
        issued = authority.register(box.store, name, parent=args.parent,
                                    runtime=args.runtime, path=args.credential_file,
                                    expires=args.expires, bind_to=args.bind_to)
    else:
        _confirm(args, f"Rotate {name}'s credential (the old one stops working)?")
        issued = authority.rotate(box.store, name, path=args.credential_file,
                                  expires=args.expires, bind_to=args.bind_to)
    data = {**authority.describe(issued.record), "credential_file": issued.path}
    until = (f"; it expires at {issued.record.expires}" if issued.record.expires
             else "; it never expires")
    what = f"binding for process {args.bind_to}" if args.bind_to else "credential"
    emit(args, data, f"{args.action}: {name} generation {issued.record.generation}; "
                     f"{what} written to {issued.path} (0600; keep it private)" + until)
    return 0


# Gates and admission -------------------------------------------------------------
JOIN = Command("join", "Ask a gated agent for access: a request that always reaches it.",
               examples=["mailslot --agent builder join reviewer --note 'I review your schema "
                         "PRs.'"])


@JOIN.arguments
def _join_arguments(p: argparse.ArgumentParser) -> None:
    _name(p)
    p.add_argument("--note", required=True, help="why you ask (shown to it as mail)")


@JOIN.handler
def _join(args: argparse.Namespace, box: Mailbox) -> int:
    message = box.gate.join(args.name, args.note)
    emit(args, message.as_dict(), f"asked {message.to[0]} for access ({message.id}); "
                                  "you are told when it answers")
    return 0


ADMIT = Command("admit", "Let NAME write to you (answers its request).")
ADMIT.arguments(_name)


@ADMIT.handler
def _admit(args: argparse.Namespace, box: Mailbox) -> int:
    changed = box.gate.admit(args.name)
    emit(args, box.gate.status(), f"admitted {args.name.lower()}" if changed
         else f"{args.name.lower()} was a member already")
    return 0


REFUSE = Command("refuse", "Turn down NAME's pending request (it is told).")
REFUSE.arguments(_name)


@REFUSE.handler
def _refuse(args: argparse.Namespace, box: Mailbox) -> int:
    box.gate.refuse(args.name)
    emit(args, box.gate.status(), f"refused {args.name.lower()}'s request (it is told)")
    return 0


REVOKE = Command("revoke", "Take NAME off your gate's members.")
REVOKE.arguments(_name)


@REVOKE.handler
def _revoke(args: argparse.Namespace, box: Mailbox) -> int:
    changed = box.gate.revoke(args.name)
    emit(args, box.gate.status(), f"{args.name.lower()} is no longer a member" if changed
         else f"{args.name.lower()} was not a member")
    return 0


PENDING = Command("pending", "Requests waiting at your gate.", existing=True)


@PENDING.handler
def _pending(args: argparse.Namespace, box: Mailbox) -> int:
    found = box.gate.pending()
    emit(args, found, "\n".join(f"{who}  {mid}" for who, mid in sorted(found.items()))
         or "no pending requests")
    return 0


SESSIONS = Command("sessions", "Sessions of an agent, or of every agent: its servers and the "
                               "host sessions its hooks ran in, with their session ids.",
                   existing=True, examples=["mailslot sessions --started",
                             "mailslot sessions --started --json"])


@SESSIONS.arguments
def _sessions_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="NAME", nargs="?")
    p.add_argument("--started", action="store_true",
                   help="the sessions mailslot started (the session log), "
                        "oldest first")


@SESSIONS.handler
def _sessions(args: argparse.Namespace, box: Mailbox) -> int:
    if args.started:  # the sessions mailslot started
        records = box.store.started_sessions()
        emit(args, records, render.started_sessions(records))
        return 0
    found = box.sessions(args.name)
    emit(args, found, render.sessions(found))
    return 0


GATE = Command("gate", "Show your gate; 'gate on' takes mail from admitted members only, "
                       "'gate off' from anyone.",
               existing=lambda args: args.state is None, examples=[
                   "mailslot gate", "mailslot gate on", "mailslot admit builder",
                   "mailslot pending"])


@GATE.arguments
def _gate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("state", nargs="?", choices=["on", "off"])
    p.add_argument("--name", metavar="GROUP",
                   help="a group gate: every agent behind it shares its members and join "
                        "requests (joining an existing group needs admission to it)")


@GATE.handler
def _gate(args: argparse.Namespace, box: Mailbox) -> int:
    if args.state is not None:
        box.gate.switch(args.state == "on", args.name)
    elif args.name is not None:
        raise InvalidInput("--name GROUP goes with 'gate on' or 'gate off'")
    status = box.gate.status()
    emit(args, status, render.gate(status))
    return 0


# The owner's pause (the loop governor: docs/security.md) -----------------------------
PAUSE = Command("pause", "Owner only: stop AGENT (default: every agent) sending mail and "
                         "being woken until resume; mail to it is still delivered.",
                examples=["mailslot --agent sarah pause reviewer   # as the owner",
                          "mailslot --agent sarah pause"])
RESUME = Command("resume", "Owner only: let AGENT (default: every agent, and everyone "
                           "paused) send and be woken again.",
                 examples=["mailslot --agent sarah resume reviewer",
                           "mailslot --agent sarah resume"])


@PAUSE.arguments
@RESUME.arguments
def _pause_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", metavar="AGENT", nargs="?", help="one agent (default: all)")


@PAUSE.handler
def _pause(args: argparse.Namespace, box: Mailbox) -> int:
    paused = box.pause(args.name)
    emit(args, {"paused": paused}, render.paused(paused, args.name, True))
    return 0


@RESUME.handler
def _resume(args: argparse.Namespace, box: Mailbox) -> int:
    paused = box.pause(args.name, paused=False)
    emit(args, {"paused": paused}, render.paused(paused, args.name, False))
    return 0


COMMANDS = (WHO, WHOAMI, AGENT, JOIN, ADMIT, REFUSE, REVOKE, PENDING, SESSIONS, GATE, PAUSE,
            RESUME)
