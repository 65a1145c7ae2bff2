"""Claude Code sessions that wake themselves: ``claude-rewake`` and ``claude-channel``.

Here the watcher does not start a program. The session's own mailslot process wakes it
the moment mail arrives: the background waiter hook (``mailslot hook claude wait``,
:mod:`mailslot.hooks.wait`) or the MCP server started with ``--channel``
(:mod:`mailslot.mcp.channel`). A wake attempt checks that such a process is running for
the agent, so a sender learns, after the usual retries, when no session was listening.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..service.presence import now_of, pid_alive, summarize
from .methods import OK, Job, Outcome, WakeMethod


class ClaudeRewakeMethod(WakeMethod):
    name = "claude-rewake"
    summary = ("Claude Code's background waiter hook wakes the open session itself, within "
               "a second, without typing into the terminal")
    needs = ("mailslot install claude --hooks --wake --agent NAME (registers the waiter "
             "and chooses this method)", "a Claude Code session open in a trusted folder")
    limits = ("a waiter starts after each turn and waits up to the hook's timeout "
              "(86,400 s), so a session idle for longer is not woken",
              "only Claude Code wakes on the hook's exit code 2 (not Cursor or Copilot)")

    @classmethod
    def from_config(cls, agent: str, cfg: Mapping[str, Any]) -> ClaudeRewakeMethod:
        return cls()

    def preview(self, job: Job) -> list[str]:
        return ["nothing started: a running waiter hook wakes the session itself; the "
                "watcher checks that one is running"]

    def wake(self, job: Job) -> Outcome:
        waiting = [p for p in job.store.waiter_pids(job.agent) if pid_alive(p)]
        if waiting:
            return OK
        return Outcome(False, "no Claude Code session of this agent has a waiter running "
                              "(install claude --hooks --wake, and keep a session open)")


class ClaudeChannelMethod(WakeMethod):
    name = "claude-channel"
    summary = ("the MCP server started with --channel pushes a notice into the running "
               "Claude Code session (channels, a research preview)")
    needs = ("mailslot install claude --channel --agent NAME (serve --channel; chooses "
             "this method)", "Claude Code started with "
             "--dangerously-load-development-channels server:mailslot",
             "a claude.ai login or Console API key")
    limits = ("research preview, terminal only (the flag is a claude argument): not on "
              "Bedrock, Google Agent Platform or Microsoft Foundry; Team and Enterprise "
              "organisations must enable channels",
              "events arrive only while the session is open and are not acknowledged")

    @classmethod
    def from_config(cls, agent: str, cfg: Mapping[str, Any]) -> ClaudeChannelMethod:
        return cls()

    def preview(self, job: Job) -> list[str]:
        return ["nothing started: a running serve --channel pushes the notice; the watcher "
                "checks that one is running"]

    def wake(self, job: Job) -> Outcome:
        presence = summarize(job.store.presence(), now_of(job.store)).get(job.agent)
        if presence is not None and any(s.channel for s in presence.sessions):
            return OK
        return Outcome(False, "no mailslot serve --channel is running for this agent "
                              "(start Claude Code with its development-channels flag)")
