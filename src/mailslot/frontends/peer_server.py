"""``mailslot peer serve``: the other end of a peer's link, on standard input and output.

Started by ``ssh`` on this machine (``peer add``, ``peer sync`` and the watcher of the
other node run it), it greets, reads the client's hello (which names the mailbox to
open: its ``--remote-store``, else this user's default), and answers frame after frame
(:mod:`mailslot.peers.protocol`) until the client ends the link. Nothing from the
command line but the fixed words reaches it; every value comes in a frame. Standard
output carries frames only; a refusal or a failure is a frame too, and a line on
standard error (which the client's ssh shows as its last words).
"""

from __future__ import annotations

import sys

from ..core.errors import MailslotError, Refused
from ..peers.frames import Stream
from ..peers.protocol import serve

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..peers.protocol import Host
    from ..service.mailbox import Mailbox


def run(box: Mailbox, read_fd: int | None = None, write_fd: int | None = None) -> int:
    """Serve one link over ``read_fd``/``write_fd`` (standard input and output)."""
    stream = Stream(sys.stdin.fileno() if read_fd is None else read_fd,
                    sys.stdout.fileno() if write_fd is None else write_fd)

    def welcome(hello: dict[str, Any]) -> tuple[Host, dict[str, Any]]:
        chosen = _opened(box, hello.get("store"))
        try:
            return chosen.welcome_peer(hello)
        except MailslotError as exc:
            print(f"mailslot peer serve: refused {hello.get('node')!r}: {exc}",
                  file=sys.stderr)
            raise

    serve(stream, welcome)
    return 0


def _opened(box: Mailbox, store: object) -> Mailbox:
    """The mailbox the hello names (``--remote-store`` on the other side), or ``box``'s;
    as no agent: a node speaks for its agents by its key, never by a credential."""
    from ..backends import open_store
    from ..service.mailbox import Mailbox

    if store is not None and not isinstance(store, str):
        raise Refused("the hello names no store")
    chosen = Mailbox(open_store(store) if store else box.store)
    if not chosen.store.exists():
        raise Refused(f"no mailbox at {chosen.store.location} on this node (mailslot init "
                      "there first)")
    return chosen
