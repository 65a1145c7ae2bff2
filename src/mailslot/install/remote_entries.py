"""``install HOST --remote URL``: each host's own documented entry for a remote MCP server.

The bearer secret never goes into a settings file: every entry names the environment
variable ``MAILSLOT_SECRET`` in the host's own syntax for one (sources in docs/hosts.md),
and the hooks read the credential file at run time. Hosts with no documented way to take
a header from the environment are refused rather than given a secret in a file.
"""

from __future__ import annotations

from typing import Any

from ..core.errors import InvalidInput
from ..http.client import SECRET_ENV
from ..http.wire import checked_url

_BEARER = "Bearer {}"


def remote_entry(host: str, url: str) -> dict[str, Any]:
    """The ``mailslot`` server entry for ``host`` reaching ``serve --http`` at ``url``."""
    checked_url(url)  # the host sends the secret there
    endpoint = url.rstrip("/").removesuffix("/mcp") + "/mcp"
    if host == "claude":  # .mcp.json expands ${VAR} in url and headers
        return {"type": "http", "url": endpoint,
                "headers": {"Authorization": _BEARER.format(f"${{{SECRET_ENV}}}")}}
    if host == "codex":  # config.toml: the token is read from the named variable
        return {"url": endpoint, "bearer_token_env_var": SECRET_ENV}
    if host == "gemini":  # settings.json expands $VAR / ${VAR} in string values
        return {"httpUrl": endpoint,
                "headers": {"Authorization": _BEARER.format(f"${{{SECRET_ENV}}}")}}
    if host == "cursor":  # mcp.json interpolates ${env:NAME}
        return {"url": endpoint,
                "headers": {"Authorization": _BEARER.format(f"${{env:{SECRET_ENV}}}")}}
    raise InvalidInput(f"--remote is not offered for {host}: it documents no way to read a "
                       "header from the environment, and the secret must not be written "
                       "into its settings")


LOCAL_KEYS = ("command", "args", "env", "cwd", "type")
"""What a local (stdio) entry has and a remote one must not keep (unless the remote entry
sets it itself: Claude Code's ``type`` becomes ``http``; Cursor's ``"type": "stdio"``
must go, its remote entries are ``url`` and ``headers`` only)."""

REMOTE_KEYS = ("url", "httpUrl", "headers", "bearer_token_env_var", "type")
"""What a remote entry has and a local one must not keep (``type`` stays where the local
entry sets it: ``stdio``)."""


def is_remote_hook(command: str) -> bool:
    """Whether a ``mailslot hook`` command line reaches a server (``--remote``)."""
    return "--remote" in command.split()
