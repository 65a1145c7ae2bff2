"""Antigravity's ``agentapi`` program, as mailslot uses it: the contract every public user
of it shows (Antigravity documents neither it nor its language server; docs/hosts.md
names those users and says what is unproven)::

    agentapi new-conversation [--model=TIER] [--title=TITLE] -- PROMPT
    agentapi send-message CONVERSATION_ID NOTICE

with the running language server's address, its CSRF token and the project id in the
child's environment only (:data:`ADDRESS_ENV`, :data:`TOKEN_ENV`, :data:`PROJECT_ENV`);
it answers in JSON on standard output (``{"response": {"newConversation":
{"conversationId": ID}}}``, or ``{"error": TEXT}``).
"""

from __future__ import annotations

import json
import re

from ...host_registry.host import Failed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

ADDRESS_ENV = "ANTIGRAVITY_LS_ADDRESS"
TOKEN_ENV = "ANTIGRAVITY_CSRF_TOKEN"
PROJECT_ENV = "ANTIGRAVITY_PROJECT_ID"
"""What Antigravity hands the programs it runs (its sidecars, its agent's terminal, an MCP
server it started), and what ``agentapi`` reads: the session's address and token, and
the project."""
ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
"""An id Antigravity hands out (a project, a conversation), checked wherever one is read."""


def environment(address: str, token: str, project: str | None) -> dict[str, str]:
    """What ``agentapi`` reads from its environment (the token only ever here)."""
    env = {ADDRESS_ENV: address, TOKEN_ENV: token}
    return {**env, PROJECT_ENV: project} if project else env


def without_own(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without any ``ANTIGRAVITY_*`` variable: ``agentapi`` gets exactly the
    session, token and project mailslot chose, nothing of the caller's own session."""
    return {k: v for k, v in env.items() if not k.startswith("ANTIGRAVITY_")}


def error_of(stdout: bytes) -> str | None:
    """The error ``agentapi`` printed (its JSON ``error``), if it printed one."""
    try:
        data = json.loads(stdout.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    error = data.get("error") if isinstance(data, dict) else None
    return str(error) if error else None


def conversation_of(stdout: bytes) -> str | None:
    """The new conversation's id from ``agentapi new-conversation``'s JSON."""
    try:
        data = json.loads(stdout.decode("utf-8"))
        found = data["response"]["newConversation"]["conversationId"]
    except (ValueError, UnicodeDecodeError, KeyError, TypeError):
        return None
    return found if isinstance(found, str) and ID.fullmatch(found) else None


def new_conversation(argv: list[str], env: Mapping[str, str], session: Mapping[str, str],
                     timeout: float) -> str:
    """Run ``agentapi new-conversation`` (``argv``) in ``env`` with the ``session``'s
    variables (:func:`environment`) in place of the caller's own; the new conversation's
    id. Raises ``Failed`` saying what it answered (never the token)."""
    import subprocess

    child = {**without_own(env), **session}
    try:
        done = subprocess.run(argv, env=child, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Failed(f"agentapi could not be run ({type(exc).__name__})") from None
    conversation = conversation_of(done.stdout)
    if done.returncode != 0 or conversation is None:
        from ...wake.process import said_of

        error = error_of(done.stdout)
        said = (said_of("error", error.encode(), child) if error
                else said_of("stdout", done.stdout, child))
        raise Failed(f"agentapi new-conversation failed (exit status {done.returncode})"
                     + said + said_of("stderr", done.stderr, child))
    return conversation
