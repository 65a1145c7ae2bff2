"""Grok Build (xAI's ``grok`` CLI; docs.x.ai/build): everything mailslot knows about it.

MCP only: its hooks are documented, but not that a hook's output reaches the model. It
documents headless runs (``grok -p PROMPT``) and resuming a saved session (``-r,
--resume ID``; sessions in ``~/.grok/sessions``), which is how it is woken; never with
``--always-approve``. Not the community ``grok`` of the npm package
``@vibe-kit/grok-cli``, which has another interface.
"""

from __future__ import annotations

from ..host_registry.host import Host, Rung

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


class Grok(Host):
    name = "grok"
    title = "Grok Build"
    program_env = ("GROK_*", "XAI_*")
    runtime = "grok-cli"

    mcp_path = {"project": ".grok/config.toml", "user": "~/.grok/config.toml"}
    mcp_format = "toml"
    mcp_container = "mcp_servers"
    install_notes = {"project": (
        "Grok Build starts a project's MCP servers only once you trust the folder "
        "(/hooks-trust in Grok, or start it with --trust).",
    )}

    bypass_flags = frozenset({"--always-approve"})
    program = "grok"
    wake_ladder = (Rung("tmux"), Rung("grok"), Rung("command"))
    """No way into a live session but its pane; else a separate ``--resume`` turn."""

    def wake_methods(self) -> Sequence[type]:
        return _wake_methods()


def _wake_methods() -> list[type]:
    """Built on first use, so that a hook, which needs only the facts above, never
    loads the wake machinery."""
    from ..wake.methods import Job, ResumeMethod

    class GrokMethod(ResumeMethod):
        name = "grok"
        host = "grok"
        program = "grok"
        summary = "resumes a Grok Build session: grok --resume SESSION_ID -p NOTICE"
        needs = ("xAI's Grok Build `grok` on the watcher's PATH, logged in",
                 "the session's id (`session_id`; `grok sessions list` shows them)")
        limits = (
            "runs a separate headless turn in that session, with Grok's default permissions: "
            "a tool that needs approval is cancelled, not approved",
        )

        def resume(self, job: Job, session: str) -> list[str]:
            return [self.executable, "--resume", session, "-p", job.notice]

    return [GrokMethod]


HOST = Grok()
