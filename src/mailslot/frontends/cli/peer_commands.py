"""The peer commands: ``peer add|list|remove|sync``, and ``peer serve`` (the other end
of a link, which ``ssh`` starts)."""

from __future__ import annotations

from ...core.errors import InvalidInput
from . import render
from .command import Command, emit

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from ...service.mailbox import Mailbox


PEER = Command(
    "peer", "Peers: other mailboxes (nodes) this one exchanges mail with over ssh, like "
            "git remotes: 'peer add NAME SSH_DEST' (keys exchanged and pinned), 'peer "
            "list', 'peer remove NAME', 'peer sync [NAME]'; 'peer serve' is the other end "
            "of a link. Mail for AGENT@NAME goes through the watcher.",
    existing=lambda args: args.action in ("list", "remove", "sync"),
    examples=["mailslot peer add laptop sarah@laptop.local",
              "mailslot peer add ci ci-box --remote-store /srv/mailslot "
              "--remote-mailslot /usr/local/bin/mailslot",
              "mailslot peer add b b-host --ssh-command 'ssh -F ~/.ssh/mailslot_config'",
              "mailslot peer list", "mailslot peer sync", "mailslot send --to ana@laptop "
              "--subject hi --body 'over ssh'"])


@PEER.arguments
def _peer_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["add", "list", "remove", "sync", "serve"])
    p.add_argument("name", metavar="NAME", nargs="?",
                   help="the peer's node name (it must be the name the other node has)")
    p.add_argument("dest", metavar="SSH_DEST", nargs="?",
                   help="add: what ssh takes (an alias from ~/.ssh/config, host or "
                        "user@host); '-' for a peer that connects here itself")
    p.add_argument("--remote-store", metavar="STORE",
                   help="add: the mailbox on the other node (a folder or postgresql:// "
                        "URL; default: the other node's default)")
    p.add_argument("--remote-mailslot", metavar="PATH",
                   help="add: the mailslot program on the other node (default: mailslot "
                        "on its PATH, which a non-interactive ssh session may lack)")
    p.add_argument("--ssh-command", metavar="CMD",
                   help="add: the command that replaces ssh, split into words (e.g. "
                        "'ssh -F FILE'; ssh reads ~/.ssh/config from the password "
                        "database, not $HOME)")


@PEER.handler
def _peer(args: argparse.Namespace, box: Mailbox) -> int:
    action = args.action
    if action == "serve":
        from ..peer_server import run

        return run(box)
    if action == "list":
        found = box.peer_list()
        me = box.node_info()
        emit(args, {**me, "peers": found}, render.peers(me, found))
        return 0
    if action == "sync":
        done = box.sync_peers(args.name)
        emit(args, done, render.synced(done))
        return 0 if all(one["ok"] for one in done) else 1
    if args.name is None:
        raise InvalidInput(f"name the peer: mailslot peer {action} NAME"
                           + (" SSH_DEST" if action == "add" else ""))
    if action == "remove":
        gone = box.remove_peer(args.name)
        emit(args, gone, f"removed peer {gone['name']}"
             + (f"; {gone['bounced']} queued message(s) went back to their senders"
                if gone["bounced"] else ""))
        return 0
    if args.dest is None:
        raise InvalidInput("give the peer's ssh destination: mailslot peer add NAME "
                           "SSH_DEST (or - for a peer that connects here)")
    added = box.add_peer(args.name, args.dest, remote_store=args.remote_store,
                         remote_mailslot=args.remote_mailslot, ssh_command=args.ssh_command)
    emit(args, added, render.peer_added(added))
    return 0


COMMANDS = [PEER]
