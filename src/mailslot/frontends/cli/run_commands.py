"""The commands that run or register something: serve (MCP over stdio, or ``--http``),
install, hook, watch, completion, web and start. Only these may import heavy modules
(the MCP SDK, starlette, watchdog), and only inside their handlers, when they run."""

from __future__ import annotations

import argparse
import os
import sys

from ...core.errors import InvalidInput
from ...core.text import read_body
from ...service.mailbox import Mailbox
from . import render
from .command import COMMAND_NAMES, Command, emit, remote_option

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from ...host_registry import Host

# Host choices, help texts and examples come from the registry (mailslot.host_registry), asked
# only when a parser is built or help shown: never on the path of a command that runs.
def _hosts(test: Callable[[Host], object]) -> tuple[str, ...]:
    from ... import host_registry as hosts

    return hosts.names(test)


def _listed(test: Callable[[Host], object]) -> str:
    from ... import host_registry as hosts

    return hosts.listed(_hosts(test))


def _example(test: Callable[[Host], object]) -> str:
    """A host to show in an example: the first that can do what it shows."""
    return _hosts(test)[0]


def _hook_events() -> str:
    """Each hook host's events, hosts with the same events together."""
    from ... import host_registry as hosts

    grouped: dict[tuple[str, ...], list[str]] = {}
    for host in hosts.every(lambda h: h.events):
        grouped.setdefault(tuple(host.events), []).append(host.name)
    return "; ".join(f"{', '.join(names)}: {', '.join(events)}"
                     for events, names in grouped.items())


def _remote_capable(host: Host) -> bool:
    return host.remote_entry("http://127.0.0.1/mcp", "SECRET") is not None


# serve: the MCP server, over stdio or --http ------------------------------------------
SERVE = Command("serve", "Run the MCP server (stdio) for one agent: --agent NAME or "
                         "MAILSLOT_AGENT.", server=True,
                examples=["mailslot serve --agent reviewer"])


@SERVE.arguments
def _serve_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--channel", action="store_true",
                   help="also push a notice into the session when mail arrives (the "
                        f"channels of {_listed(lambda h: h.channel)}, a research preview; see "
                        "docs/wake.md)")
    p.add_argument("--exclusive", action="store_true",
                   help="refuse to start while another session of this agent runs")
    p.add_argument("--replace-session", metavar="ID",
                   help="replace (fence) the running session ID of this agent: its next "
                        "write is refused (implies --exclusive)")
    p.add_argument("--peer-of", metavar="P",
                   help="speak as a child of P: send and reply only to P, read only its own "
                        "inbox (default: $MAILSLOT_PEER_OF)")
    # --http: the same tools over Streamable HTTP, to agents with credentials
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


@SERVE.handler
def _serve(args: argparse.Namespace, box: Mailbox) -> int:
    if args.http is not None:
        return _serve_http(args, box)
    box.bound_agent()  # refuse before the MCP SDK is even imported
    from ...access.fencing import new_session_id
    from ..hooks.host_process import host_process
    from ..mcp import server as mcp_server

    session = new_session_id()
    host = host_process()[0]
    for note in box.start_session(session, exclusive=args.exclusive or bool(
            args.replace_session), replace=args.replace_session):
        print(f"mailslot: note: {note}", file=sys.stderr)  # stdout is the MCP stream

    keep = _start_watcher(box)

    def open_box() -> Mailbox:
        keep()
        opened = Mailbox.open(args.dir, args.agent, credential=args.credential,
                              peer_of=args.peer_of)
        opened.session = session
        opened.host_pid = host
        return opened

    mcp_server.serve(open_box, channel=args.channel)
    return 0


def _start_watcher(box: Mailbox) -> Callable[[], object]:
    """A server is where agents with wakes send from: see that a watcher runs when work
    waits for one, now and again at its calls (the returned look, a few system calls
    at most every few seconds)."""
    from ...mail.watchers import Keeper

    keep = Keeper(box.store)
    problem = keep()
    if problem:
        print(f"mailslot: note: {problem}", file=sys.stderr)  # stdout may be the MCP stream
    return keep


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
    keep = _start_watcher(box)
    serve_http(_authenticate(box, keep), listen,
               max_body_bytes=4 * box.max_body_bytes + 65536,
               rate_per_minute=args.rate_limit, session_idle=args.session_idle)
    return 0


def _authenticate(box: Mailbox, keep: Callable[[], object]) -> Callable[[str], Mailbox]:
    """Where each request's bearer secret becomes its agent's checked mailbox (the
    registered agents' credentials); the one place ``--http`` authenticates. Each
    request also gives the watcher a look (``keep``)."""
    from ..http.bearer import Bearers

    bearers = Bearers(box.store)

    def open_box(secret: str) -> Mailbox:
        keep()
        return bearers.open(secret)

    return open_box


# install: register mailslot with a host ------------------------------------------
INSTALL = Command("install", "Register mailslot with an agent host (its MCP server; with "
                             "--hooks its hooks), as the agent given by --agent.", server=True,
                  examples=lambda: [
                      f"mailslot install {_example(lambda h: h.hook_file)} --agent reviewer "
                      "--hooks",
                      f"mailslot install {_example(lambda h: h.mcp_format == 'toml')} "
                      "--agent builder --dry-run"])


@INSTALL.arguments
def _install_arguments(p: argparse.ArgumentParser) -> None:
    # install's host table, loaded only when install's parser is built
    from ...host_registry import NAMES as HOST_NAMES
    from ...host_registry.host import SCOPES

    p.add_argument("host", choices=HOST_NAMES)
    p.add_argument("--scope", choices=SCOPES,
                   help="project (the git checkout or this folder) or user (your home); "
                        "default: project, except user for "
                        + _listed(lambda h: h.default_scope == "user"))
    p.add_argument("--hooks", action="store_true",
                   help="also register hooks that show mail at session start, prompt, stop")
    p.add_argument("--wake", action="store_true",
                   help="choose the best wake this host and its installed version support "
                        "(its ladder: a waiter hook with --hooks, a queue into the live "
                        "session, its tmux pane, a resumed turn...), probe it and write it "
                        "into config.json; refused, writing nothing, when none is possible "
                        "(docs/wake.md; doctor --wake shows the ladder)")
    p.add_argument("--channel", action="store_true",
                   help=f"{_listed(lambda h: 'channel' in h.install_wakes)}: serve --channel "
                        "pushes mail into the session (research preview; config.json's "
                        "wake_method for it)")
    p.add_argument("--sidecar", action="store_true",
                   help=f"{_listed(lambda h: h.sidecar)}: also register mailslot's sidecar, "
                        "which the host's app starts and which leaves the running session's "
                        "address and token in the mailbox for wakes and starts")
    p.add_argument("--bridge", action="store_true",
                   help=f"{_listed(lambda h: h.bridge() is not None)}: also list mailslot's "
                        "other agents in the host's own messaging, so that its sessions' "
                        "SendMessage reaches them as mail from this agent (config.json "
                        "`bridges`, run by the watcher); a registration without it, or "
                        "--undo, takes it back")
    p.add_argument("--dry-run", action="store_true", help="print the change; write nothing")
    p.add_argument("--undo", action="store_true",
                   help="take back what install did for the host (for --scope) here, from "
                        "its record: files it created removed, files it changed put back "
                        "from the copies it kept (FILE.mailslot-backup; only mailslot's "
                        "entries taken out of a file you changed since), the wake and "
                        "bridge settings it set in config.json put back; exit 0, also "
                        "when there is nothing to undo")
    p.add_argument("--allow-outside", action="append", default=[], metavar="REAL_PATH",
                   help="write a project settings file that links out of the project, to "
                        "this real path (refused otherwise)")
    p.add_argument("--remote", metavar="URL",
                   help="register a 'mailslot serve --http' server at URL instead of a local "
                        f"one ({_listed(_remote_capable)}); needs --credential FILE, whose "
                        "secret "
                        "the host reads from $MAILSLOT_SECRET (see docs/remote.md)")


@INSTALL.handler
def _install(args: argparse.Namespace, box: Mailbox) -> int:
    from ..install.changes import install as register
    from ..install.planning import InstallOptions

    if args.undo:
        from ..install.undoing import undo

        if args.dry_run:
            raise InvalidInput("install --undo has no --dry-run: `mailslot install "
                               f"{args.host} --dry-run` shows what install would write")
        print("\n".join(undo(args.host, scope=args.scope)))
        return 0
    agent = _remote_agent(args) if args.remote is not None else box.bound_agent()
    report = register(args.host, agent, InstallOptions(
        scope=args.scope, hooks=args.hooks, wake=args.wake, channel=args.channel,
        sidecar=args.sidecar, bridge=args.bridge, dry_run=args.dry_run,
        mailbox_dir=args.dir or os.environ.get("MAILSLOT_DIR"),
        allow_outside=args.allow_outside, credential=args.credential, remote=args.remote))
    print(render.installed(report))
    for warning in report.warnings:
        print(f"mailslot: warning: {warning}", file=sys.stderr)
    return 0


def _remote_agent(args: argparse.Namespace) -> str:
    """``install --remote``: the agent is the credential's (its file is read, not sent)."""
    from ...access.credentials import read_credential

    if args.credential is None:
        raise InvalidInput("install --remote needs --credential FILE: it names the agent, "
                           "and the hooks read its secret from it")
    return read_credential(args.credential).agent


# sidecar: what a host's app runs beside itself -------------------------------------
SIDECAR = Command("sidecar", "Run as a host's sidecar (its app starts it; install HOST "
                             "--sidecar registers it): leaves the running session's address "
                             "and token in the mailbox until the app ends it.",
                  examples=lambda: [f"mailslot sidecar {_example(lambda h: h.sidecar)} "
                                    "--dir ~/mailslot"])


@SIDECAR.arguments
def _sidecar_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("host", metavar="HOST", help=_listed(lambda h: h.sidecar))


@SIDECAR.handler
def _sidecar(args: argparse.Namespace, box: Mailbox) -> int:
    from ... import host_registry as hosts

    try:
        host = hosts.host(args.host)
    except KeyError:
        host = None
    if host is None or not host.sidecar:
        raise InvalidInput(f"host {args.host!r} runs no sidecar; one of: "
                           + _listed(lambda h: h.sidecar))
    if box.store.folder is None:
        raise InvalidInput("the sidecar writes into a mailbox folder; this mailbox is "
                           f"{box.store.location}")
    return host.run_sidecar(box.store.folder, os.environ)


# hook: what a host's hook runs ----------------------------------------------------
HOOK = Command("hook", "Show pending mail to an agent from a host's hook (prints the host's "
                       "JSON).",
               examples=lambda: [
                   f"mailslot hook {_example(lambda h: 'session-start' in h.events)} "
                   "session-start --agent reviewer < input.json"])


@HOOK.arguments
def _hook_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("host", metavar="HOST", help=_listed(lambda h: h.events))
    p.add_argument("event", metavar="EVENT", help=f"{_hook_events()} (see docs/hooks.md)")
    remote_option(p)


@HOOK.bare_handler
def _hook(args: argparse.Namespace) -> int:
    """``mailslot hook HOST EVENT``: never fails a session, so no error translation here.

    ``mailslot.entry`` runs the same thing without loading this module.
    """
    from ..hooks.hook_entry import run_hook

    return run_hook(args.host, args.event, agent=args.agent, root=args.dir,
                    remote=args.remote, credential=args.credential)


# watch: the wake runner -------------------------------------------------------------
def _seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not 0.01 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a number of seconds from 0.01 to 3600")
    return value


WATCH = Command("watch", "Wake opted-in agents when mail arrives (runs in the foreground).",
                existing=lambda args: args.validate,
                examples=["mailslot watch", "mailslot watch --validate",
                          "mailslot watch --service install   # always on: a login service",
                          "mailslot watch --validate --json   # also lists every wake "
                          "method's fields",
                          "(wake methods and their config.json fields: docs/wake.md)"])


@WATCH.arguments
def _watch_arguments(p: argparse.ArgumentParser) -> None:
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--once", action="store_true",
                      help="process the wakes due now, then exit")
    mode.add_argument("--validate", action="store_true",
                      help="check each configured agent's wake settings; print what is wrong")
    mode.add_argument("--service", choices=["install", "remove", "status"],
                      help="run the watcher as a login service for this mailbox: a systemd "
                           "user unit on Linux, a launchd agent on macOS (docs/wake.md)")
    p.add_argument("--poll", type=_seconds, metavar="SECONDS",
                   help="poll the queue this often instead of using file-system events")
    # how this watcher was started, for its record: a send, hook or server starting one
    # on demand, or a service unit (watch --service install); not for people to pass
    p.add_argument("--started", choices=["on-demand", "service"], default="foreground",
                   help=argparse.SUPPRESS)


@WATCH.handler
def _watch(args: argparse.Namespace, box: Mailbox) -> int:
    if args.validate:
        from ...wake.report import as_text, validate

        report = validate(box.store)
        emit(args, report.as_dict(), as_text(report))
        return 0 if report.ok else 1
    if args.service:
        from ..install.watch_service import run_service

        done = run_service(box.store, args.service)
        emit(args, done.as_dict(), "\n".join(done.lines))
        return 0
    from ...launch.restart import recover
    from ..watcher import watch  # the only import of watchdog, and only here

    return watch(box.store, once=args.once, poll=args.poll, as_json=args.json,
                 recover=recover, how=args.started)


# bridge: mailslot's agents as targets of a host's own messaging -----------------------
BRIDGE = Command("bridge", "List mailslot's agents in a host's own messaging between its "
                           "sessions, and turn what a session sends them into mail from "
                           "that session's agent (runs in the foreground; Linux).",
                 examples=lambda: [f"mailslot bridge {_example(lambda h: h.bridge() is not None)}",
                                   "(what it lists and how a sender is bound: the "
                                   "host's page in docs/)"])


@BRIDGE.arguments
def _bridge_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("host", choices=_bridged(), help="the host whose sessions see the agents")


def _bridged() -> list[str]:
    from ... import host_registry as hosts

    return list(hosts.BRIDGED)


@BRIDGE.handler
def _bridge(args: argparse.Namespace, box: Mailbox) -> int:
    from ..bridge_server import bridge

    return bridge(box.store, args.host)


# relay: mail to remote A2A agents the owner named, their answers back as mail --------
RELAY = Command("relay", "Relay mail to the remote A2A agents config.json names "
                         "(a2a.remotes), and their answers back as mail (runs in the "
                         "foreground; the watcher runs it when one is named).",
                examples=["mailslot relay", "mailslot relay --once",
                          "(config and what a remote's answer can do: docs/a2a.md)"])


@RELAY.arguments
def _relay_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--once", action="store_true",
                   help="one pass: send what waits, collect finished answers, exit")


@RELAY.handler
def _relay(args: argparse.Namespace, box: Mailbox) -> int:
    from ..a2a_relay import Relay

    return Relay(box.store).run(once=args.once)


# completion: shell completion scripts -----------------------------------------------
COMPLETION = Command("completion", "Print a shell completion script (agent names and ids "
                                   "included).", examples=[
                         "mailslot completion bash > ~/.local/share/bash-completion/"
                         "completions/mailslot",
                         "mailslot completion zsh > ~/.zfunc/_mailslot",
                         "mailslot completion fish > ~/.config/fish/completions/mailslot.fish"])


@COMPLETION.arguments
def _completion_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("shell", nargs="?", choices=["bash", "zsh", "fish"])
    p.add_argument("--words", choices=["commands", "agents", "ids"],
                   help="print the words to complete, one a line (what the scripts call)")


@COMPLETION.handler
def _completion(args: argparse.Namespace, box: Mailbox) -> int:
    from .completion import script, words

    if args.words:
        print("\n".join(words(box, args.words)))
    elif args.shell:
        print(script(args.shell, COMMAND_NAMES))
    else:
        raise InvalidInput("name a shell: bash, zsh or fish")
    return 0


# web: the local web page ------------------------------------------------------------
def _port(raw: str) -> int:
    if not raw.isdigit() or int(raw) > 65535:
        raise argparse.ArgumentTypeError(f"{raw!r} is not a port from 0 to 65535")
    return int(raw)


WEB = Command("web", "Serve a local web page (127.0.0.1 only) to watch mail live, send as the "
                     "owner and edit wake settings; prints a one-time login link.",
              examples=["mailslot web", "mailslot web --port 8025"])


@WEB.arguments
def _web_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=_port, default=3344,
                   help="port on 127.0.0.1 (default 3344; a busy port falls back to a free "
                        "one, and 0 always picks a free one)")


@WEB.handler
def _web(args: argparse.Namespace, box: Mailbox) -> int:
    from ..web.page_server import serve  # starlette and uvicorn only here

    return serve(box.store, args.port)


# start: starting agent sessions -------------------------------------------------------
START = Command("start", "Start an agent session of a host under the owner's guardrails "
                         "(config.json: launch; docs/launch.md).",
                examples=lambda: [
                    f"mailslot start {_example(lambda h: h.startable and 'tmux' in h.handoffs)}"
                    " --folder ~/src/app --handoff tmux --register-as builder-1 --prompt "
                    "'Fix the login test; mail orchestrator when done.'"])


@START.arguments
def _start_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("host", choices=_hosts(lambda h: h.startable))
    p.add_argument("--folder", required=True, help="absolute path of an existing folder")
    p.add_argument("--prompt", help="the first prompt (default: read from stdin)")
    p.add_argument("--name", help="the session's name or title (also its tmux window)")
    p.add_argument("--model", help="default: launch.HOST.default_model, then the host's")
    p.add_argument("--effort", help="reasoning effort, where the host has one")
    p.add_argument("--permission-mode", help="one of the host's modes the owner allows")
    p.add_argument("--handoff", choices=["background", "tmux", "desktop"],
                   default="background",
                   help="background (unattended; default), tmux (a window you can "
                        "attach to and mailslot can wake) or desktop "
                        f"({_listed(lambda h: 'desktop' in h.handoffs)}: the prompt prefilled "
                        "in its desktop app, for you to send)")
    p.add_argument("--project", help=f"{_listed(lambda h: h.takes_project)}: the "
                                     "project's exact name or the absolute path of its "
                                     "folder, from the host's project registry")
    p.add_argument("--register-as", metavar="NAME",
                   help="also register the session as a new recipient NAME that wakes it")


@START.handler
def _start(args: argparse.Namespace, box: Mailbox) -> int:
    from ...launch.starting import Request, start

    if args.prompt is None and (sys.stdin is None or sys.stdin.isatty()):
        raise InvalidInput("no prompt: pass --prompt TEXT or pipe it on stdin")
    prompt = args.prompt or read_body(sys.stdin.buffer, box.max_body_bytes)
    started = start(box, Request(
        args.host, args.folder, prompt, name=args.name, model=args.model, effort=args.effort,
        permission_mode=args.permission_mode, handoff=args.handoff, project=args.project,
        register_as=args.register_as), via="cli")
    emit(args, started.as_dict(), render.started(started))
    return 1 if started.outcome == "failed" else 0


COMMANDS = (SERVE, INSTALL, HOOK, WATCH, BRIDGE, RELAY, COMPLETION, WEB, START,
            SIDECAR)
