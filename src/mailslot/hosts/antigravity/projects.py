"""Antigravity's project registry, read only: one JSON file per project under
:data:`PROJECTS` (``launch.antigravity.projects_dir`` names another folder), through which
a start names its project by name, id or folder (:func:`resolve`)."""

from __future__ import annotations

import json
import os

from ...core.errors import InvalidInput
from .agentapi import ID

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

PROJECTS = "~/.gemini/config/projects"
"""Antigravity's project registry: one JSON file per project."""


class Project:
    """One project of the registry: its id, name and folders."""

    def __init__(self, project_id: str, name: str, folders: list[str]) -> None:
        self.id = project_id
        self.name = name
        self.folders = folders


def _folders(doc: Mapping[str, Any]) -> list[str]:
    from urllib.parse import unquote

    resources = doc.get("projectResources")
    found = []
    for item in resources.get("resources", []) if isinstance(resources, dict) else []:
        if not isinstance(item, dict):
            continue
        uris = [item.get("folderUri"), *(item.get(k, {}).get("folderUri")
                                         for k in ("gitFolder", "folder")
                                         if isinstance(item.get(k), dict))]
        found += [os.path.realpath(unquote(u[len("file://"):])) for u in uris
                  if isinstance(u, str) and u.startswith("file:///")]
    return found


def projects(folder: Path) -> list[Project]:
    """Every project the registry at ``folder`` holds (files that do not parse skipped)."""
    found = []
    try:
        names = sorted(p for p in os.listdir(folder) if p.endswith(".json"))
    except OSError:
        return []
    for name in names:
        try:
            with open(folder / name, encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict):
            continue
        pid = doc.get("id", name[:-len(".json")])
        if isinstance(pid, str) and ID.fullmatch(pid):
            found.append(Project(pid, str(doc.get("name", "")), _folders(doc)))
    return found


def resolve(given: str, launch: Mapping[str, Any]) -> str:
    """The id of the project ``given`` names: an exact project name, a project id, or
    the absolute path of a project's folder. Raises ``InvalidInput`` for one unknown or
    ambiguous."""
    from pathlib import Path

    if not given or len(given) > 4096 or not given.isprintable():
        raise InvalidInput("project must be a project's name or the absolute path of its "
                           "folder")
    raw = launch.get("projects_dir")
    where = Path(raw if isinstance(raw, str) and raw else PROJECTS).expanduser()
    known = projects(where)
    if os.path.isabs(given):
        real = os.path.realpath(given)
        found = [p for p in known if real in p.folders]
    else:
        found = [p for p in known if given in (p.id, p.name)]
    if not found:
        raise InvalidInput(f"project {given!r} is not in Antigravity's project registry "
                           f"({where}); open it in Antigravity once, or give its exact "
                           "name or folder")
    if len(found) > 1:
        ids = ", ".join(p.id for p in found)
        raise InvalidInput(f"project {given!r} is ambiguous: projects {ids} match; give "
                           "the other name or folder")
    return found[0].id
