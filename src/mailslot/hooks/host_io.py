"""What each host sends a command hook on stdin, and the JSON it accepts back.

Sources: each host's hook documentation (named in tests/fixtures/hosts/README.md) and
the inputs recorded there. Only events whose output can put text in front of the model
are offered: a host whose prompt hook cannot add context (Cursor's
``beforeSubmitPrompt``, Copilot's ``userPromptSubmitted``) gets mail at session start
and stop only. Mid-turn mail comes from a post-tool hook that adds context to the
model's next request (Claude Code, Codex and Qwen ``PostToolUse``, Gemini ``AfterTool``,
Copilot ``postToolUse``, Pi's ``tool_result``).

Cursor and Copilot CLI also run the hooks in ``.claude/settings.json``, so a ``claude``
hook may really be called by them. The caller is recognised from its input (see
:func:`caller_of`) and then treated by what it can do: Cursor accepts Claude's output
shapes there, Copilot gets its own.
"""

from __future__ import annotations

import json

from ..service.delivery import MIDTURN, PROMPT, START, STOP

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    Payload = dict[str, object]

CONTEXT_LIMIT = 10_000
"""Injected text stays under this many characters: Claude Code cuts anything longer
(additionalContext, reason); the other hosts document no lower limit."""

EVENTS: dict[str, dict[str, str]] = {
    "claude": {"session-start": START, "user-prompt-submit": PROMPT, "stop": STOP,
               "post-tool-use": MIDTURN},
    "codex": {"session-start": START, "user-prompt-submit": PROMPT, "stop": STOP,
              "post-tool-use": MIDTURN},
    "gemini": {"session-start": START, "before-agent": PROMPT, "after-agent": STOP,
               "after-tool": MIDTURN},
    "cursor": {"session-start": START, "stop": STOP},
    "copilot": {"session-start": START, "stop": STOP, "post-tool-use": MIDTURN},
}
EVENTS["qwen"] = EVENTS["claude"]  # Qwen Code takes Claude Code's events and shapes
EVENTS["pi"] = {"session-start": START, "before-agent": PROMPT, "tool-result": MIDTURN}
"""Pi runs them from the extension ``install pi --hooks`` writes (mailslot.install.pi)."""
"""``mailslot hook HOST EVENT``: the hosts and events there are, and what each is."""

_CAN_ADD = {PROMPT: frozenset({"claude", "codex", "gemini", "qwen", "pi"}),
            MIDTURN: frozenset({"claude", "codex", "gemini", "qwen", "pi", "copilot"})}
"""The callers whose prompt (and post-tool) hooks can add context to the session."""
_SESSION_FIELDS = {"cursor": ("conversation_id", "session_id"),
                   "copilot": ("sessionId", "session_id")}


class Request:
    """One hook call as the delivery rules need it."""

    __slots__ = ("caller", "moment", "session", "shape", "stop_active")

    def __init__(self, caller: str, shape: str, moment: str | None, session: str | None,
                 stop_active: bool) -> None:
        self.caller = caller  # the host that really runs the hook
        self.shape = shape  # whose output JSON it reads
        self.moment = moment  # None: this caller cannot show text at this event
        self.session = session
        self.stop_active = stop_active


def parse_payload(raw: bytes) -> Payload:
    """The host's JSON object; ``{}`` for anything else (garbage never stops a hook)."""
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: deeply nested arrays
        return {}
    return data if isinstance(data, dict) else {}


def caller_of(host: str, payload: Payload, env: Mapping[str, str]) -> str:
    """Which host really runs a hook registered for ``host``.

    Only a ``claude`` hook can be borrowed: Cursor says so with ``cursor_version`` in
    its input or ``CURSOR_VERSION`` in the environment; Copilot CLI with a
    ``timestamp`` (or camelCase ``sessionId``) that Claude Code never sends.
    """
    if host != "claude":
        return host
    if "cursor_version" in payload or env.get("CURSOR_VERSION"):
        return "cursor"
    if "timestamp" in payload or "sessionId" in payload:
        return "copilot"
    return host


def request(host: str, event: str, payload: Payload, env: Mapping[str, str]) -> Request | None:
    """The call, or ``None`` when ``HOST EVENT`` is not one mailslot knows."""
    moment = EVENTS.get(host, {}).get(event)
    if moment is None:
        return None
    caller = caller_of(host, payload, env)
    shape = "copilot" if caller == "copilot" else host
    able = _CAN_ADD.get(moment)
    if able is not None and caller not in able:
        return Request(caller, shape, None, None, False)
    session = None
    for field in _SESSION_FIELDS.get(caller, ("session_id",)):
        value = payload.get(field)
        if isinstance(value, str) and value:
            session = value
            break
    return Request(caller, shape, moment, session, _continuing(caller, payload))


def _continuing(caller: str, payload: Payload) -> bool:
    """Is the turn already going on because of a stop hook (or not one to extend)?"""
    if payload.get("stop_hook_active"):
        return True
    if caller == "cursor":  # a followup is already running, or the user stopped the turn
        loops = payload.get("loop_count")
        status = payload.get("status", "completed")
        return (isinstance(loops, int) and loops > 0) or status != "completed"
    return False


def _context(event_name: str) -> Callable[[str], Payload]:
    return lambda text: {"hookSpecificOutput": {"hookEventName": event_name,
                                                "additionalContext": text}}


def _decision(word: str) -> Callable[[str], Payload]:
    return lambda text: {"decision": word, "reason": text}


def _field(name: str) -> Callable[[str], Payload]:
    return lambda text: {name: text}


_OUTPUT: dict[str, dict[str, Callable[[str], Payload]]] = {
    "claude": {START: _context("SessionStart"), PROMPT: _context("UserPromptSubmit"),
               STOP: _decision("block"), MIDTURN: _context("PostToolUse")},
    "gemini": {START: _context("SessionStart"), PROMPT: _context("BeforeAgent"),
               STOP: _decision("deny"), MIDTURN: _context("AfterTool")},
    "cursor": {START: _field("additional_context"), STOP: _field("followup_message")},
    "copilot": {START: _field("additionalContext"), STOP: _decision("block"),
                MIDTURN: _field("additionalContext")},
    "pi": {START: _field("additionalContext"), PROMPT: _field("additionalContext"),
           MIDTURN: _field("additionalContext")},
}
_OUTPUT["codex"] = _OUTPUT["qwen"] = _OUTPUT["claude"]  # both take Claude Code's shapes


def output(call: Request, text: str | None) -> Payload:
    """The JSON object to print: ``{}`` when there is nothing to show."""
    if not text or call.moment is None:
        return {}
    return _OUTPUT[call.shape][call.moment](text)
