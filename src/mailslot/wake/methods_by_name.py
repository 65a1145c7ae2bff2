"""Every wake method by name: ``wake_method`` in config.json picks one of these.

To add a host, write a :class:`~mailslot.wake.methods.WakeMethod` subclass (in its own
module) and add it to :data:`METHODS`; ``watch --validate`` and the watcher find it here.
"""

from __future__ import annotations

from ..core.errors import StoreError
from .agentapi import AgentApiMethod
from .claude_native import ClaudeChannelMethod, ClaudeRewakeMethod
from .grok import GrokMethod
from .methods import (
    ClaudeMethod,
    CodexMethod,
    CodexQueueMethod,
    CommandMethod,
    CopilotMethod,
    GeminiMethod,
    UnsupportedMethod,
    WakeMethod,
    where,
)
from .tmux import TmuxMethod

METHODS: dict[str, type[WakeMethod]] = {
    method.name: method
    for method in (CommandMethod, TmuxMethod, ClaudeMethod, CodexMethod, CodexQueueMethod,
                   GeminiMethod, CopilotMethod,  # copilot
                   AgentApiMethod, ClaudeRewakeMethod, ClaudeChannelMethod, UnsupportedMethod,
                   GrokMethod)
}


def method_for(agent: str, name: str) -> type[WakeMethod]:
    """The method class called ``name``; raises :class:`StoreError` naming the field."""
    try:
        return METHODS[name]
    except KeyError:
        known = ", ".join(sorted(METHODS))
        raise StoreError(f"{where(agent, 'wake_method')} {name!r} is not a wake method "
                         f"(one of: {known})") from None
