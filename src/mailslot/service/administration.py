"""What ``install``, ``doctor`` and the owner change or check: an agent's wake and its
bridge in config.json, the owner's pause (the rules live in :mod:`mailslot.mail.governor`),
removing an agent's mailbox, and the mailbox's health.
"""

from __future__ import annotations

import os

from ..core.errors import NotFound, StoreError
from ..core.names import BROADCAST_RECIPIENT, check_name
from ..core.results import DoctorReport
from .mailbox_base import MailboxBase

TYPE_CHECKING = False  # typing is not loaded on the CLI path
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any

    from ..wake.choice import Diagnosis


class Administration(MailboxBase):
    """A mailbox's settings and upkeep. Built on :class:`MailboxBase` alone: none
    of it names, lists or sends a message."""

    def wake_method(self, agent: str) -> object:
        """``agent``'s configured ``wake_method`` as written (``None`` if unset)."""
        return self.config.agents().get(check_name(agent), {}).get("wake_method")

    def stop_wake(self, agent: str, methods: Sequence[str]) -> bool:
        """If ``agent`` is woken by one of ``methods``, mark it ``unsupported`` and not
        woken (other keys kept). Returns whether anything changed."""
        name = check_name(agent)

        def opt_out(raw: dict[str, Any]) -> bool:
            agents = raw.get("agents")
            entry = agents.get(name) if isinstance(agents, dict) else None
            if not isinstance(entry, dict) or entry.get("wake_method") not in methods:
                return False
            entry["wake_on_mail"], entry["wake_method"] = False, "unsupported"
            return True

        changed = self.store.update_config(opt_out)
        self._config = None
        return changed

    def put_back_settings(self, agent: str, keys: Sequence[Mapping[str, Any]], *,
                          drop_empty: bool = False) -> tuple[list[str], list[str]]:
        """``install --undo``: each of ``agent``'s settings that install set (``key``, with
        the ``before`` and ``after`` it recorded; no ``before``: the key was not there)
        put back where it still holds ``after``; the entry goes too when ``drop_empty``
        and nothing is left in it. Returns the keys put back, and those left as they
        are because they changed since."""
        name = check_name(agent)
        back: list[str] = []
        left: list[str] = []
        gone = object()

        def put_back(raw: dict[str, Any]) -> bool:
            agents = raw.get("agents")
            entry = agents.get(name) if isinstance(agents, dict) else None
            if not isinstance(agents, dict) or not isinstance(entry, dict):
                return False
            for change in keys:
                key, now = change["key"], entry.get(change["key"], gone)
                if now == change.get("after", gone):
                    back.append(key)
                    if "before" in change:
                        entry[key] = change["before"]
                    else:
                        del entry[key]
                elif now != change.get("before", gone):
                    left.append(key)
            if drop_empty and not entry:
                del agents[name]
                if not agents:
                    del raw["agents"]
                return True
            return bool(back)

        self.store.update_config(put_back)
        self._config = None
        return back, left

    def ask_bridge(self, agent: str, host: str, on: bool, *, dry_run: bool = False) -> str:
        """``install HOST --bridge`` (``on``) or a registration without it: ``agent``'s
        ask for ``host``'s bridge (``agents.NAME.bridge``) set or taken back, and
        ``host`` in ``bridges`` while any agent asks for it. Returns what changed (or,
        with ``dry_run``, would), ``""`` for nothing."""
        name = check_name(agent)
        said = ""

        def change(raw: dict[str, Any]) -> bool:
            nonlocal said
            said = _bridge_ask(raw, name, host, on)
            return bool(said)

        if dry_run:
            change(self.store.load_config())
        else:
            self.store.update_config(change)
            self._config = None
        return said

    def wake_diagnosis(self, agent: str, host: str | None = None) -> Diagnosis:
        """``doctor --wake``: ``agent``'s configured wake probed again, and its host's
        ladder with each step's probe (nothing is woken or written)."""
        from ..wake.choice import diagnose

        return diagnose(self.store, self.store.load_config(), check_name(agent), host,
                        os.environ, os.getcwd())

    def choose_wake(self, agent: str, method: str,
                    fields: Mapping[str, Any] | None = None) -> bool:
        """Opt ``agent`` in to being woken by ``method`` in config.json, with the
        method's ``fields`` (other keys kept).

        Keeps ``wake_on_mail: "requested"`` if that is set; otherwise wakes for every
        message. Returns whether anything changed.
        """
        wanted_fields = dict(fields or {})
        name = check_name(agent)

        def opt_in(raw: dict[str, Any]) -> bool:
            agents = raw.setdefault("agents", {})
            if not isinstance(agents, dict) or not isinstance(agents.setdefault(name, {}), dict):
                raise StoreError(f"config.json: agents.{name} must be an object; nothing was "
                                 "changed")
            entry = agents[name]
            wanted = "requested" if entry.get("wake_on_mail") == "requested" else True
            after = {**entry, "wake_on_mail": wanted, "wake_method": method, **wanted_fields}
            if after == entry:
                return False
            entry.update(after)
            return True

        changed = self.store.update_config(opt_in)
        self._config = None
        return changed

    def pause(self, agent: str | None = None, *, paused: bool = True) -> list[str]:
        """Stop ``agent`` (``None``: every agent) sending and being woken, or let it go
        on again (``paused`` false); the owner only (:attr:`viewer`). Returns who is
        paused after (``all``: everyone)."""
        from ..mail import governor  # here: a page of mail never loads it

        self.require_owner("pause or resume agents")
        name = None if agent is None or agent.lower() == BROADCAST_RECIPIENT \
            else check_name(agent, "agent")
        after = governor.set_paused(self.store, name, paused)
        self._config = None
        self._event("paused" if paused else "resumed", "", agent=name or BROADCAST_RECIPIENT)
        return after

    def remove_agent(self, name: str) -> str:
        """Archive ``name``'s mailbox: kept on disk, no longer listed (its mail stays
        readable in the archive). Returns where it went."""
        agent = check_name(name, "agent")
        if agent not in self.store.agent_names():
            raise NotFound(f"no mailbox for {agent}")
        where = self.store.archive_mailbox(agent, self._clock().strftime("%Y%m%dT%H%M%S"))
        self._event("archived", "", agent=agent)
        return where

    def doctor(self, *, fix: bool = False, deep: bool = False) -> DoctorReport:
        """Check permissions, config, wakes and leftovers (``deep``: every message too);
        with ``fix``, repair what is safe to and quarantine unreadable messages."""
        from . import checkup  # here: a page of mail never loads it

        return checkup.doctor(self.store, fix=fix, deep=deep)


def _bridge_ask(raw: dict[str, Any], agent: str, host: str, on: bool) -> str:
    """:meth:`Mailbox.ask_bridge` on config ``raw`` (changed in place)."""
    agents = raw.setdefault("agents", {}) if on else raw.get("agents", {})
    entry = agents.setdefault(agent, {}) if on and isinstance(agents, dict) \
        else agents.get(agent, {}) if isinstance(agents, dict) else None
    if not isinstance(entry, dict):
        raise StoreError(f"config.json: agents.{agent} must be an object; nothing was "
                         "changed")
    listed = raw.get("bridges", [])
    if not isinstance(listed, list):
        raise StoreError("config.json: bridges must be a list of host names; nothing was "
                         "changed")
    said = []
    if on:
        if entry.get("bridge") != host:
            entry["bridge"] = host
            said.append(f'agents.{agent}.bridge "{host}"')
        if host not in listed:
            raw["bridges"] = [*listed, host]
            said.append(f'"{host}" in bridges')
        return ", ".join(said)
    if entry.get("bridge") != host:
        return ""
    del entry["bridge"]
    said.append(f"agents.{agent}.bridge")
    if host in listed and not any(isinstance(e, dict) and e.get("bridge") == host
                                  for e in agents.values()):
        rest = [b for b in listed if b != host]
        if rest:
            raw["bridges"] = rest
        else:
            del raw["bridges"]
        said.append(f'"{host}" from bridges (no agent asks for it now)')
    return ", ".join(said)
