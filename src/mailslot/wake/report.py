"""``mailslot watch --validate``: check every agent's wake config and say what it would do.

Nothing is woken and nothing is typed: config errors are *problems* (exit 1); what can be
seen right now without waking anyone (a program missing from PATH, a pane not found, a
session whose credentials are stale) are *warnings*. No secret is ever shown.
"""

from __future__ import annotations

from ..core.config import Config
from ..core.errors import MailslotError
from ..core.message import Message
from ..core.values import asdict, dataclass, field, replace
from ..mail.invocation import invocation
from .notice import wake_notice
from .policy import settings_for

TYPE_CHECKING = False  # typing is not loaded by doctor
if TYPE_CHECKING:
    from typing import Any

    from ..store import Store
    from .methods import WakeMethod

_SAMPLE = Message(id="<message-id>", date="", sender="<sender>", to=(), subject="")


@dataclass(frozen=True)
class AgentReport:
    agent: str
    opt_in: str
    method: str
    does: list[str] = field(default_factory=list)
    retry: str = ""
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    notify: list[str] = field(default_factory=list)  # its notifiers, one line each
    route: str = ""  # which way a wake would go now and why (WakeMethod.route)


@dataclass(frozen=True)
class Validation:
    location: str
    agents: list[AgentReport]
    problems: list[str]  # config-wide

    @property
    def ok(self) -> bool:
        return not self.problems and not any(a.problems for a in self.agents)

    def as_dict(self) -> dict[str, Any]:
        from .methods_by_name import every_method

        return {"location": self.location, "ok": self.ok, "problems": self.problems,
                "agents": [asdict(a) for a in self.agents],
                "methods": [_method_dict(m) for m in every_method().values()]}


def _method_dict(method: type[WakeMethod]) -> dict[str, Any]:
    return {"name": method.name, "summary": method.summary, "needs": list(method.needs),
            "limits": list(method.limits), "batches": method.batches,
            "fields": [asdict(f) for f in method.fields]}


def _agent(store: Store, config: Config, agent: str) -> AgentReport:
    try:
        settings = settings_for(config, agent)
    except MailslotError as exc:
        return AgentReport(agent, "not woken (config error)", "?", problems=[str(exc)])
    if not settings.method:
        return AgentReport(agent, settings.describe_opt_in(), "none")
    # loaded once an agent names a method: doctor over a config naming none loads
    # neither the methods nor ``re`` (their fields' patterns)
    from .methods import Job
    from .methods_by_name import method_for

    try:
        method = method_for(agent, settings.method).from_config(agent, settings.fields)
    except MailslotError as exc:
        return AgentReport(agent, settings.describe_opt_in(), settings.method,
                           problems=[str(exc)])
    notice = wake_notice(agent, (_SAMPLE,), invocation(agent, str(store.location)))
    job = Job(agent, (_SAMPLE,), notice, store,
              settings.retry.timeout_seconds)
    return AgentReport(agent, settings.describe_opt_in(), settings.method,
                       does=method.preview(job), retry=settings.retry.describe(),
                       warnings=method.probe(),
                       route="" if settings.opt_in == "never" else method.route(job))


def validate(store: Store) -> Validation:
    """Every configured agent's wake, checked; nothing is run that wakes anyone."""
    try:
        raw = store.load_config()
    except MailslotError as exc:
        return Validation(store.location, [], [str(exc)])
    return validate_config(store, raw)


def validate_config(store: Store, raw_config: dict[str, Any]) -> Validation:
    """:func:`validate` of a config not saved yet (``mailslot config set`` checks a
    change with it before saving)."""
    from .environment import pass_env

    try:
        config = Config(raw_config)
        agents = config.agents()
    except MailslotError as exc:
        return Validation(store.location, [], [str(exc)])
    problems = []
    try:
        pass_env(raw_config)
    except MailslotError as exc:
        problems.append(str(exc))
    return Validation(store.location, [_with_notifiers(store, config, _agent(store, config, a))
                                       for a in sorted(agents)], problems)


def _with_notifiers(store: Store, config: Config, report: AgentReport) -> AgentReport:
    """The agent's notifiers, and their config problems, added to its report."""
    from .notify import notifier_lines

    lines, problems = notifier_lines(store, config, report.agent)
    return replace(report, notify=lines, problems=[*report.problems, *problems])


def as_text(report: Validation) -> str:
    """The configured agents only, what each wake would do and what is wrong; every
    method's fields are in docs/wake.md and in ``--json`` (``methods``)."""
    from .methods_by_name import find_method

    lines = [f"mailbox: {report.location}"]
    lines += [f"problem: {p}" for p in report.problems]
    if not report.agents and not report.problems:
        lines.append("no agents in config.json: nobody is woken")
    for a in report.agents:
        lines += ["", f"{a.agent}: {a.opt_in}; wake_method: {a.method}"]
        method = find_method(a.method)
        if method is not None:
            lines.append(f"  {method.summary}")
        lines += [f"  → {line}" for line in a.does]
        if a.retry:
            lines.append(f"  retries: {a.retry}")
        if method is not None:
            lines += [f"  needs: {n}" for n in method.needs]
            lines += [f"  limit: {n}" for n in method.limits]
        lines += [f"  problem: {p}" for p in a.problems]
        lines += [f"  warning: {w}" for w in a.warnings]
        lines += [f"  now: {a.route}"] if a.route else []
        lines += [f"  {line}" for line in a.notify]
    lines += ["", "ok: every configured agent's wake settings are valid" if report.ok
              else "problems found: the agents above are not woken until they are fixed"]
    return "\n".join(lines)


# The settings page checks an edit before saving it --------------------------
def validate_agent(store: Store, raw_config: dict[str, Any], agent: str) -> AgentReport:
    """One agent's wake and notifiers under a config not saved yet: the same checks as
    ``validate``."""
    config = Config(raw_config)
    return _with_notifiers(store, config, _agent(store, config, agent))
