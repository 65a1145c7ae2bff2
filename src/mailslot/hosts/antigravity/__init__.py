"""Antigravity (Google's agent IDE): everything mailslot knows about it.

Antigravity reads MCP servers from ``mcp_config.json`` (it does not document the file's
location; docs/hosts.md says what was found) and has no command hooks. Its conversations
run inside the app: mailslot reaches one through its ``agentapi`` program
(:mod:`.agentapi`: the contract mailslot keeps to), with the address and token of the
running session that mailslot's sidecar leaves in the mailbox (:mod:`.sidecar`); a start
may name its project as Antigravity's project registry knows it (:mod:`.projects`), and
the ``agentapi`` wake is the part :mod:`.wake`. This module is the facts and the
:class:`~mailslot.host_registry.host.Host`; it loads the others only when one is used.
"""

from __future__ import annotations

from ...core.errors import InvalidInput
from ...host_registry.host import Failed, Host, Opened, Rung, Start, option

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, MutableMapping, Sequence
    from typing import Any

SIDECAR_NAME = "mailslot"
SIDECARS = "~/.gemini/config/sidecars"
SWITCHES = "~/.gemini/config/config.json"
"""A sidecar runs only once it is enabled here (``sidecars.NAME.enabled``)."""


class Antigravity(Host):
    name = "antigravity"
    title = "Antigravity"
    runtime = "antigravity"

    mcp_path = {"project": ".agents/mcp_config.json",
                "user": "~/.gemini/antigravity/mcp_config.json"}
    install_notes = {scope: ("Antigravity does not document this file's location; check that "
                             "'mailslot' shows under Manage MCP Servers.",)
                     for scope in ("project", "user")}

    program = "agentapi"
    program_paths = ("~/.gemini/antigravity/bin/agentapi",)  # where the app installs it
    startable = True
    handoffs = ("background",)  # the conversation runs inside Antigravity
    hands_off = True
    takes_project = True
    models = ("flash_lite", "flash", "pro")
    """The tiers ``agentapi new-conversation --model`` takes (its help, as its public users
    quote it; docs/hosts.md)."""
    sidecar = True
    wake_method = "agentapi"
    wake_ladder = (Rung("agentapi"), Rung("command"))
    """Its conversations run inside the app (no pane to type into): agentapi, with the
    conversation ``mailslot start antigravity`` wrote and the sidecar's credentials."""

    def argv(self, executable: str, start: Start) -> list[str]:
        return [executable, "new-conversation", *option("--model", start.model),
                *option("--title", start.name), "--", start.prompt]

    def resolve_project(self, given: str, launch: Mapping[str, Any]) -> str:
        """An exact project name, a project id, or the absolute path of a project's
        folder, looked up (read only) in Antigravity's project registry."""
        from .projects import resolve

        return resolve(given, launch)

    def refuse_start(self, project: str | None, launch: Mapping[str, Any],
                     store_folder: str | None, env: Mapping[str, str]) -> str | None:
        """``agentapi new-conversation`` needs a project id (it answers "project_id is
        required" without one): a start that has none anywhere is refused before
        anything runs. Credentials that cannot be used are the run's to report."""
        from .agentapi import PROJECT_ENV
        from .sidecar import Unusable, project_source, session_credentials

        found = session_credentials(launch, store_folder, env)
        if isinstance(found, Unusable) or project_source(project, launch, found,
                                                         "parameter")[0] is not None:
            return None
        return ("no Antigravity project id for the new conversation: give project (a "
                "project's name or folder), set launch.antigravity.project_id, or start "
                f"from where Antigravity sets {PROJECT_ENV}; nothing was started")

    def open_conversation(self, executable: str, launch: Mapping[str, Any], start: Start,
                          env: Mapping[str, str], timeout: float, store_folder: str | None
                          ) -> Opened:
        """``agentapi new-conversation``: the token in its environment only; it prints
        the new conversation's id in JSON."""
        from .agentapi import environment, new_conversation
        from .sidecar import Unusable, project_source, session_credentials

        found = session_credentials(launch, store_folder, env)
        if isinstance(found, Unusable):
            raise Failed(found.reason)
        project, source = project_source(start.project, launch, found, "parameter")
        session = environment(found.address, found.token, project)
        return Opened(new_conversation(self.argv(executable, start), env, session, timeout),
                      project, source)

    def started_wake(self, session_id: str, folder: str, launch: Mapping[str, Any],
                     project: str | None, tools: Sequence[str]) -> dict[str, Any]:
        entry: dict[str, Any] = {"wake_on_mail": True, "wake_method": self.wake_method,
                                 "conversation_id": session_id}
        if launch.get("credentials_file"):
            entry["credentials_file"] = launch["credentials_file"]
        if project is not None:
            entry["project_id"] = project
        return entry

    def sidecar_entries(self, command: str, args: list[str]
                        ) -> list[tuple[str, Callable[[MutableMapping[str, Any]], None]]]:
        """``sidecars/mailslot/sidecar.json`` (restarted when it fails), enabled in
        Antigravity's ``config.json`` (a sidecar is off until it is)."""

        def define(doc: MutableMapping[str, Any]) -> None:
            doc.clear()
            doc.update({"command": command, "args": args, "restart_policy": "on-failure"})

        def enable(doc: MutableMapping[str, Any]) -> None:
            sidecars = doc.setdefault("sidecars", {})
            if not isinstance(sidecars, dict):
                raise InvalidInput(f"{SWITCHES}: sidecars must be a JSON object; nothing "
                                   "was changed")
            mine = sidecars.setdefault(SIDECAR_NAME, {})
            if not isinstance(mine, dict):
                raise InvalidInput(f"{SWITCHES}: sidecars.{SIDECAR_NAME} must be a JSON "
                                   "object; nothing was changed")
            mine["enabled"] = True

        return [(f"{SIDECARS}/{SIDECAR_NAME}/sidecar.json", define), (SWITCHES, enable)]

    def run_sidecar(self, folder: str, env: Mapping[str, str]) -> int:
        """Write what Antigravity handed this sidecar into the mailbox, then wait until
        Antigravity ends it (a signal, or the app that started it gone), and remove it."""
        from .sidecar import run

        return run(folder, env)


HOST = Antigravity()
