"""Pi's wake method: the extension's own waiter wakes the open session."""

from __future__ import annotations

from ...wake.methods import WaiterMethod


class PiMethod(WaiterMethod):
    """The extension's waiter wakes the session (``mailslot hook pi wait``)."""

    name = "pi"
    host = "pi"
    summary = ("Pi's mailslot extension wakes the open session itself: its background "
               "waiter queues the notice as a follow-up that starts a turn")
    needs = ("mailslot install pi --hooks --wake --agent NAME (writes the extension with "
             "its waiter and chooses this method)",
             "a Pi session open in its terminal UI or RPC mode, with the extension loaded "
             "(Pi's next start, or /reload)")
    limits = ("not in `pi -p` or `--mode json`: those runs end after their prompt, so "
              "no waiter waits in them",
              "an open session with mail waiting starts a turn for it at once")


METHODS = (PiMethod,)
