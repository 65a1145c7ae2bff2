"""``install HOST --remote URL``: each host's own documented entry for a remote MCP server.

The bearer secret never goes into a settings file: every entry names the environment
variable ``MAILSLOT_SECRET`` in the host's own syntax for one (sources in docs/hosts.md),
and the hooks read the credential file at run time. Hosts with no documented way to take
a header from the environment are refused rather than given a secret in a file.
"""

from __future__ import annotations

from typing import Any

from ...core.errors import InvalidInput
from ..http.client import SECRET_ENV
from ..http.wire import checked_url

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ...host_registry import Host


def remote_entry(host: Host, url: str) -> dict[str, Any]:
    """The ``mailslot`` server entry for ``host`` reaching ``serve --http`` at ``url``."""
    checked_url(url)  # the host sends the secret there
    endpoint = url.rstrip("/").removesuffix("/mcp") + "/mcp"
    entry = host.remote_entry(endpoint, SECRET_ENV)
    if entry is None:
        raise InvalidInput(f"--remote is not offered for {host.name}: it documents no way to "
                           "read a header from the environment, and the secret must not be "
                           "written into its settings")
    return entry


LOCAL_KEYS = ("command", "args", "env", "cwd", "type")
"""What a local (stdio) entry has and a remote one must not keep (unless the remote entry
sets it itself: a ``type`` of ``stdio`` becomes ``http`` where the host types its
entries, and goes where its remote entries are ``url`` and ``headers`` only)."""

REMOTE_KEYS = ("url", "httpUrl", "headers", "bearer_token_env_var", "type")
"""What a remote entry has and a local one must not keep (``type`` stays where the local
entry sets it: ``stdio``)."""


def is_remote_hook(command: str) -> bool:
    """Whether a ``mailslot hook`` command line reaches a server (``--remote``)."""
    return "--remote" in command.split()
