"""Kilo Code CLI's wake method: OpenCode's ``run --session`` wake
(:mod:`mailslot.hosts.opencode.wake`), as Kilo's, ``--attach URL`` included.
"""

from __future__ import annotations

from ..opencode.wake import RunMethod


class KiloMethod(RunMethod):
    name = "kilo"
    host = "kilo"
    program = "kilo"
    summary = ("continues a Kilo Code CLI session: kilo run [--attach URL] --session "
               "SESSION_ID NOTICE")
    needs = ("`kilo` on the watcher's PATH, with its provider set up",
             "the session's id (`session_id`: `ses_…`, from `kilo session list` or the "
             "`sessionID` of `kilo run --format json`)",
             "`cwd`: the project the session ran in (its MCP config and permissions are "
             "read from there)",
             "for an open TUI: `attach`, the address it serves on (start it as "
             "`kilo --port PORT`)")
    limits = (
        "without `attach`, a separate headless turn (`kilo run`) in that session",
        "the woken run rejects any permission request the person's rules leave at "
        "`ask`, even in an open TUI (never --auto)",
        'no "latest": Kilo has no command hooks, so no session of it is ever recorded '
        "as the agent's latest; name the session by its id",
    )


METHODS = (KiloMethod,)
