"""Editing settings from a form (the web page): each agent's wake and notifiers, checked
with the same rules as ``watch --validate``, saved atomically with every other key kept,
and never over an edit someone else made since the form was shown; and each agent's gate,
managed through :class:`mailslot.access.gates.ManagedGate` (the CLI's own gate code).

A form carries the *version* of the agent's entry it was built from (a hash of that
entry as stored). Saving re-reads the config under the store's config lock; if the
entry's version changed meanwhile (another page, an editor, ``install --wake``), nothing
is written and the caller gets both sides to show. Only the keys the form manages are
written: ``wake_on_mail``, ``wake_method``, the chosen method's fields and ``notify``
(notifiers, entered as a JSON list). Everything
else, including keys mailslot does not know and settings edited by hand only (launch
guardrails such as ``blocked_models``), is kept as it was.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..access.gates import ManagedGate
from ..access.identity import Identity
from ..core.config import Config
from ..core.errors import InvalidInput, StoreError
from ..core.names import check_name
from ..store import Store
from ..wake.methods import Field
from ..wake.methods_by_name import every_method, find_method
from ..wake.notify import KINDS
from ..wake.report import AgentReport, validate_agent
from .mailbox import Mailbox

OPT_INS: dict[str, object] = {"true": True, "requested": "requested", "false": False}
"""The form's choices for ``wake_on_mail`` and the JSON value each one stores."""
MANAGED = ("wake_on_mail", "wake_method", "notify")
HAND_EDITED = ("blocked_models", "default_model")
"""Keys the page shows but never writes (edited by hand only)."""


def version(entry: object) -> str:
    """A short hash of an agent's entry as stored: what a form was built from."""
    text = json.dumps(entry, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def shown(value: object) -> str:
    """A stored value as a form field shows it (text as is, anything else as JSON)."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@dataclass(frozen=True)
class WakeForm:
    """What the page shows for one agent's wake: the values, their version, and what
    ``watch --validate`` says about them."""

    agent: str
    opt_in: str  # a key of OPT_INS, or the raw value when it is none of them
    method: str
    values: dict[str, str]  # every managed field's value as the form shows it
    version: str
    report: AgentReport
    hand_edited: dict[str, str] = field(default_factory=dict)
    notify: str = ""  # the notifiers as JSON text ("" when there are none)


@dataclass(frozen=True)
class Saved:
    """How a save ended: ``saved``; or ``problems`` (nothing written); or ``conflict``
    (nothing written: ``current`` is what is stored now)."""

    saved: bool
    problems: list[str]
    conflict: bool
    current: WakeForm


def method_fields() -> dict[str, tuple[Field, ...]]:
    """Every wake method's config fields, by method name."""
    return {name: method.fields for name, method in every_method().items()}


def notifier_fields() -> dict[str, tuple[Field, ...]]:
    """Every notifier kind's fields (besides ``kind``), by kind."""
    return {kind: method.fields for kind, method in KINDS.items()}


def _form(store: Store, raw: Mapping[str, Any], agent: str) -> WakeForm:
    entry = _entry(raw, agent)
    stored = entry.get("wake_on_mail", False)
    opt_in = next((k for k, v in OPT_INS.items() if v == stored and type(v) is type(stored)),
                  shown(stored))
    names = {f.name for fields in method_fields().values() for f in fields}
    values = {name: shown(entry.get(name)) for name in sorted(names)}
    hand = {k: shown(entry[k]) for k in HAND_EDITED if k in entry}
    notify = entry.get("notify")
    notify_text = "" if notify in (None, []) else json.dumps(notify, indent=1,
                                                             ensure_ascii=False)
    return WakeForm(agent, opt_in, shown(entry.get("wake_method")), values,
                    version(entry), validate_agent(store, dict(raw), agent), hand,
                    notify_text)


def _entry(raw: Mapping[str, Any], agent: str) -> dict[str, Any]:
    agents = raw.get("agents", {})
    entry = agents.get(agent, {}) if isinstance(agents, dict) else {}
    return entry if isinstance(entry, dict) else {}


def wake_forms(store: Store, names: list[str]) -> list[WakeForm]:
    """A form for every agent in ``names`` and every agent in the config."""
    raw = store.load_config()
    configured = list(Config(raw).agents())
    return [_form(store, raw, agent) for agent in sorted(set(names) | set(configured))]


def versions(store: Store) -> dict[str, str]:
    """The version of every configured agent's entry (an agent not in it: ``{}``'s)."""
    return {name: version(entry) for name, entry in Config(store.load_config()).agents().items()}


def wake_form(store: Store, agent: str) -> WakeForm:
    return _form(store, store.load_config(), check_name(agent, "agent"))


def _value(spec: Field, text: str) -> object:
    """The JSON value a form field's text stands for; raises naming the field."""
    if spec.kind == "argv":
        try:
            value = json.loads(text)
        except ValueError:
            raise InvalidInput(f'{spec.name} must be a JSON list such as ["prog", "{{id}}"]'
                               ) from None
        return value
    if spec.kind == "number":
        try:
            number = float(text)
        except ValueError:
            raise InvalidInput(f"{spec.name} must be a number") from None
        return int(number) if number.is_integer() else number
    if spec.kind == "bool":  # own_server
        if text.strip().lower() not in ("true", "false"):
            raise InvalidInput(f"{spec.name} must be true or false")
        return text.strip().lower() == "true"
    return text


def _notifiers(text: str) -> list[Any]:
    """The ``notify`` list a form's text stands for; raises saying what is expected."""
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, list):
        raise InvalidInput('notifiers must be a JSON list such as [{"kind": "desktop"}]')
    return value


def save_wake(store: Store, agent: str, seen_version: str, opt_in: str, method: str,
              values: Mapping[str, str] | None, notify: str | None = None) -> Saved:
    """Save ``agent``'s wake from a form built at ``seen_version``.

    Refused with ``problems`` (nothing written) when a value is malformed or ``watch
    --validate`` would reject the result; a ``conflict`` when the entry changed since.
    ``values`` holds each field as ``METHOD.FIELD`` (several methods share field names);
    ``None`` keeps the fields as they are (a switch turned on or off). ``notify`` is the
    notifier list as JSON text (empty: none); ``None`` keeps it as it is.
    """
    name = check_name(agent, "agent")
    if opt_in not in OPT_INS:
        raise InvalidInput("wake on mail must be on, on request, or off")
    if method and find_method(method) is None:
        raise InvalidInput(f"{method!r} is not a wake method (one of: "
                           f"{', '.join(sorted(every_method()))})")
    outcome: dict[str, Any] = {"problems": [], "conflict": False}

    def change(raw: dict[str, Any]) -> bool:
        if version(_entry(raw, name)) != seen_version:
            outcome["conflict"] = True
            return False
        candidate = copy.deepcopy(raw)
        agents = candidate.setdefault("agents", {})
        if not isinstance(agents, dict):
            raise StoreError("config.json: agents must be an object; nothing was changed")
        entry = agents.setdefault(name, {})
        if not isinstance(entry, dict):
            raise StoreError(f"config.json: agents.{name} must be an object; nothing was "
                             "changed")
        entry["wake_on_mail"] = OPT_INS[opt_in]
        if method:
            entry["wake_method"] = method
        else:
            entry.pop("wake_method", None)
        for spec in every_method()[method].fields if method and values is not None else ():
            text = (values or {}).get(f"{method}.{spec.name}", "").strip()
            if not text:
                entry.pop(spec.name, None)
                continue
            try:
                entry[spec.name] = _value(spec, text)
            except InvalidInput as exc:
                outcome["problems"].append(str(exc))
        if notify is not None and not notify.strip():
            entry.pop("notify", None)
        elif notify is not None:
            try:
                entry["notify"] = _notifiers(notify)
            except InvalidInput as exc:
                outcome["problems"].append(str(exc))
        if not outcome["problems"]:
            outcome["problems"] = validate_agent(store, candidate, name).problems
        if outcome["problems"]:
            return False
        raw.clear()
        raw.update(candidate)
        return True

    saved = store.update_config(change)
    return Saved(saved, list(outcome["problems"]), bool(outcome["conflict"]),
                 wake_form(store, name))


def other_settings(store: Store) -> dict[str, str]:
    """Top-level settings the page does not edit, as JSON text, shown read-only."""
    raw = store.load_config()
    return {k: json.dumps(v, indent=2, ensure_ascii=False)
            for k, v in sorted(raw.items()) if k not in ("agents", "owner")}


# The loop governor's pause, from the page as the mailbox's owner ---------------------
def paused(store: Store) -> tuple[list[str], str | None]:
    """Who is paused (``all``: everyone), and the config's problem with it, if any."""
    try:
        return Config(store.load_config()).governor()["paused"], None
    except StoreError as exc:
        return [], str(exc)


def change_pause(store: Store, action: str, agent: str) -> list[str]:
    """``pause`` or ``resume`` ``agent`` (empty: everyone), as the person at the page
    (the owner: :meth:`Mailbox.pause`). Returns who is paused after."""
    if action not in ("pause", "resume"):
        raise InvalidInput(f"unknown action {action!r}: pause or resume")
    return Mailbox(store).pause(agent or None, paused=action == "pause")


# Gates, managed from the page as the mailbox's owner --------------------------
GATE_ACTIONS = ("on", "off", "admit", "refuse", "revoke")
GATE_SOURCE = "the settings page (mailbox owner)"


@dataclass(frozen=True)
class GateView:
    """One agent's gate as the settings page shows it."""

    agent: str
    accept: str  # "open" or "members"
    members: list[str]
    pending: list[str]


def managed_gate(store: Store, agent: str) -> ManagedGate:
    """``agent``'s gate, run by the CLI's own gate code as the mailbox's owner."""
    return ManagedGate(Mailbox(store, Identity(check_name(agent, "agent"), GATE_SOURCE)))


def gate_views(store: Store, names: list[str]) -> list[GateView]:
    """The gate of every agent in ``names``."""
    views = []
    for name in sorted(set(names)):
        status = managed_gate(store, name).status()
        views.append(GateView(name, status["accept"], list(status["members"]),
                              list(status["pending"])))
    return views


def change_gate(store: Store, agent: str, action: str, name: str = "") -> None:
    """Open or close ``agent``'s gate, or admit, refuse or revoke ``name``.

    Each change is one idempotent store operation naming the state it wants (the gate
    open, a member in or out), so two pages changing the same gate cannot lose an edit:
    the last change stands, and the page shows the result.
    """
    if action not in GATE_ACTIONS:
        raise InvalidInput(f"unknown gate action {action!r}: {', '.join(GATE_ACTIONS)}")
    if action in ("admit", "refuse", "revoke") and not name.strip():
        raise InvalidInput(f"{action} needs the name of an agent")
    managed_gate(store, agent).act(action, name.strip() or None)
