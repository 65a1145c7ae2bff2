"""Our entries inside a host's settings: the MCP server and the hook handlers.

Works on the parsed document (a JSON object, or a tomlkit document, which behaves like
one), changing only what is ours: the server named ``mailslot`` and hook handlers whose
command runs ``mailslot hook``. Everything else is kept as it was, in its place.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any

from ...core.errors import InvalidInput, Refused
from ...host_registry.host import SERVER as SERVER_NAME

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ...host_registry import Host
_OUR_HOOK = re.compile(r"mailslot(\.exe)?['\"]?\s+hook\s")
Doc = MutableMapping[str, Any]


def _section(doc: Doc, key: str, where: str) -> Doc:
    """``doc[key]`` (``a.b``: ``doc[a][b]``), created empty if missing; anything but an
    object on the way is an error."""
    section = doc
    parts = key.split(".")
    for n, part in enumerate(parts):
        value = section.setdefault(part, {})
        if not isinstance(value, MutableMapping):
            shown = ".".join(parts[:n + 1])
            raise InvalidInput(f"{where}: '{shown}' must be an object; nothing was changed")
        section = value
    return section


def command_line(handler: Mapping[str, Any]) -> str | None:
    """A hook handler's command line: its ``command`` (or ``bash``) string, followed by
    its ``args`` when a host takes the program and its arguments apart."""
    for key in ("command", "bash"):
        command = handler.get(key)
        if isinstance(command, str):
            args = handler.get("args")
            if isinstance(args, list) and all(isinstance(a, str) for a in args):
                return shlex.join([command, *args])
            return command
    return None


def _agent_in(argv: Sequence[object]) -> str | None:
    words = [str(w) for w in argv]
    for i, word in enumerate(words[:-1]):
        if word == "--agent":
            return words[i + 1]
    return None


def same_agent(bound: str | None, agent: str, where: str) -> None:
    """Moving a registration to another agent is refused: a host would change who it is."""
    if bound is not None and bound.lower() != agent:
        raise Refused(
            f"{where} already registers mailslot as agent '{bound}'; remove that entry "
            f"first to change it, or pass --agent {bound}"
        )


def _server_argv(entry: Mapping[str, Any]) -> list[Any] | None:
    """The words after the program in a server entry, in any host's spelling."""
    for holder in (entry, entry.get("transport")):
        if isinstance(holder, Mapping):
            for key in ("args", "command"):
                if isinstance(holder.get(key), list):
                    return list(holder[key])
    return None


def set_server(doc: Doc, container: str, fields: Mapping[str, Any], agent: str,
               where: str, drop: Sequence[str] = ()) -> None:
    """Add or update the ``mailslot`` server; its other keys (``env``...) are kept, but
    for the ``drop`` keys that ``fields`` does not set (what the other kind of entry, a
    stdio or a remote one, has and this one must not)."""
    servers = _section(doc, container, where)
    current = servers.get(SERVER_NAME)
    if current is None:
        servers[SERVER_NAME] = dict(fields)
        return
    if not isinstance(current, MutableMapping):
        raise InvalidInput(f"{where}: '{container}.{SERVER_NAME}' must be an object; "
                           "nothing was changed")
    argv = _server_argv(current)
    same_agent(_agent_in(argv) if argv is not None else None, agent, where)
    for key, value in fields.items():
        if current.get(key) != value:
            current[key] = value
    for key in drop:
        if key not in fields:
            current.pop(key, None)


def runs_our_hook(command: str) -> bool:
    """Whether a command line (or a settings file's text) runs ``mailslot hook``."""
    return _OUR_HOOK.search(command) is not None


def our_hook_commands(value: Any) -> Iterator[str]:
    """Every ``mailslot hook`` command line in a settings document, wherever it sits."""
    if isinstance(value, str):
        if runs_our_hook(value):
            yield value
    elif isinstance(value, Mapping) and isinstance(value.get("args"), list):
        line = command_line(value)
        if line is not None and runs_our_hook(line):
            yield line
    elif isinstance(value, Mapping):
        for inner in value.values():
            yield from our_hook_commands(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from our_hook_commands(inner)


def is_ours(handler: object) -> bool:
    """A hook handler whose command runs ``mailslot hook`` (any install of it)."""
    if not isinstance(handler, Mapping):
        return False
    line = command_line(handler)
    return line is not None and runs_our_hook(line)


def registered_agents(doc: Mapping[str, Any]) -> set[str]:
    """The agents a settings document makes mailslot act as: its ``mailslot`` server's
    ``--agent`` and those of its ``mailslot hook`` handlers (lowercased)."""
    found: set[str | None] = set()
    for container in ("mcpServers", "mcp"):  # "mcp": entries whose command is one list
        servers = doc.get(container, {})
        server = servers.get(SERVER_NAME) if isinstance(servers, Mapping) else None
        argv = _server_argv(server) if isinstance(server, Mapping) else None
        if argv is not None:
            found.add(_agent_in(argv))
    hooks = doc.get("hooks")
    for entries in hooks.values() if isinstance(hooks, Mapping) else ():
        for entry in entries if isinstance(entries, list) else ():
            inner = entry.get("hooks") if isinstance(entry, Mapping) else None
            for handler in inner if isinstance(inner, list) else [entry]:
                if is_ours(handler):
                    found.add(_handler_agent(handler))
    return {a.lower() for a in found if a is not None}


def _handler_agent(handler: Mapping[str, Any]) -> str | None:
    try:
        return _agent_in(shlex.split(command_line(handler) or ""))
    except ValueError:
        return None


def _splice(items: list[Any], desired: list[Any],
            strip: Callable[[Any], Any | None]) -> list[Any]:
    """``items`` with ours replaced by ``desired``, at the place the first of ours was."""
    out: list[Any] = []
    placed = False
    for item in items:
        kept = strip(item)
        if kept is item:
            out.append(item)
            continue
        if not placed:
            out.extend(desired)
            placed = True
        if kept is not None:
            out.append(kept)
    if not placed:
        out.extend(desired)
    return out


WAITER_TIMEOUT_SECONDS = 86_400
"""How long the host lets the background waiter wait after a turn (it enforces the
``timeout`` of an ``asyncRewake`` hook): an idle session is woken within a day."""


def set_hooks(doc: Doc, host: Host, command: Callable[[str], str], agent: str,
              where: str, *, wake: str | None = None) -> None:
    """Make our handlers for each of the host's events exactly those its hook file asks
    for.

    ``wake``: the command of the host's background waiter, added on the stop event with
    ``asyncRewake`` (a waiter that exits 2 to wake the session).
    """
    spec = host.hook_file
    assert spec is not None
    if spec.version is not None and "version" not in doc:
        doc["version"] = spec.version  # a file that carries a format version first
    for key, value in spec.switches.items():  # set where the file does not say
        holder, _, name = key.rpartition(".")
        section = _section(doc, holder, where) if holder else doc
        section.setdefault(name, value)
    hooks = doc if spec.container is None else _section(doc, spec.container, where)
    for hook in spec.hooks:
        entries = hooks.get(hook.event, [])
        if not isinstance(entries, list):
            key = hook.event if spec.container is None else f"{spec.container}.{hook.event}"
            raise InvalidInput(f"{where}: '{key}' must be a list; nothing was changed")
        handler = host.hook_handler(hook.ours, command(hook.ours))
        strip: Callable[[Any], Any | None]
        if spec.grouped:
            desired = [_group(handler, hook.matcher)]
            if wake is not None and hook.ours == "stop":
                desired.append(_group({"type": "command", "command": wake,
                                       "asyncRewake": True,
                                       "timeout": WAITER_TIMEOUT_SECONDS}, None))
            strip = _strip_group
            for group in entries:
                if isinstance(group, Mapping) and isinstance(group.get("hooks"), list):
                    for h in group["hooks"]:
                        if is_ours(h):
                            same_agent(_handler_agent(h), agent, where)
        else:
            desired = [handler]
            strip = _strip_handler
            for h in entries:
                if is_ours(h):
                    same_agent(_handler_agent(h), agent, where)
        merged = _splice(entries, desired, strip)
        if merged != entries:
            hooks[hook.event] = merged


def _group(handler: dict[str, Any], matcher: str | None) -> dict[str, Any]:
    group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
    group["hooks"] = [handler]
    return group


def _strip_group(group: Any) -> Any | None:
    """The group without our handlers (``None`` if nothing is left), or itself if none."""
    if not isinstance(group, Mapping) or not isinstance(group.get("hooks"), list):
        return group
    rest = [h for h in group["hooks"] if not is_ours(h)]
    if len(rest) == len(group["hooks"]):
        return group
    return {**group, "hooks": rest} if rest else None


def _strip_handler(handler: Any) -> Any | None:
    return None if is_ours(handler) else handler


def without_ours(item: Any) -> Any | None:
    """An item of a hook event's list without our handlers: a group keeps its others
    (``None`` when nothing is left), a handler of ours is ``None``, anything else is
    itself."""
    if isinstance(item, Mapping) and isinstance(item.get("hooks"), list):
        return _strip_group(item)
    return _strip_handler(item)
