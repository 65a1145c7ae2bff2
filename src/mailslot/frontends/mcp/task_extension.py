"""MCP's tasks extension (``io.modelcontextprotocol/tasks``, 2026-07-28) for
``send_message`` with ``expect_reply``: the reply completes the task.

A client that declares the extension in a request's capabilities and calls
``send_message`` with ``expect_reply`` to one agent gets, once the mail is stored, a
task (``resultType: "task"``) instead of the plain result; its id is the message's.
``tasks/get`` reads it from the mail (:mod:`mailslot.service.tasks`): ``working`` until
the recipient answers, then ``completed`` with the reply as the tool's result (framed as
untrusted data, as ``read_messages`` frames mail); ``cancelled`` once recalled.
``tasks/cancel`` recalls the message while it is unread (read mail is refused).
``tasks/update`` has nothing to take (a task of mailslot never asks for input). A client
that does not declare the extension, a broadcast, mail to several agents and a send
without ``expect_reply`` get the plain result, as before. Only the sender sees its
tasks. Only ``serve`` imports this module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import anyio
import mcp_types as types

from mcp.server.extension import Extension, MethodBinding
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent

from ...core import framing
from ...core.errors import MailslotError, NotFound, Refused
from ...service import tasks
from ...service.mailbox import Mailbox

TASKS = "io.modelcontextprotocol/tasks"
POLL_MS = 2000
"""The poll interval a task suggests: mail is answered in minutes, not milliseconds."""
MISSING_CAPABILITY = -32021
INVALID_PARAMS = -32602
_STATUS = {tasks.SUBMITTED: "working", tasks.WORKING: "working",
           tasks.COMPLETED: "completed", tasks.CANCELED: "cancelled"}
_SAYS = {tasks.SUBMITTED: "stored, unread", tasks.WORKING: "read, not answered yet"}


class TaskParams(types.RequestParams):
    task_id: str


class UpdateParams(TaskParams):
    input_responses: dict[str, Any] | None = None


def declared(ctx: Any) -> bool:
    """Did this request declare the extension (capabilities are per request)?"""
    meta = getattr(ctx, "meta", None) or {}
    capabilities = meta.get("io.modelcontextprotocol/clientCapabilities") or {}
    return isinstance(capabilities, Mapping) and TASKS in (capabilities.get("extensions")
                                                           or {})


class MailTasks(Extension):
    """The extension, over the mailbox ``open_box`` gives (fresh for each call)."""

    identifier = TASKS

    def __init__(self, open_box: Callable[[], Mailbox]) -> None:
        self.open_box = open_box

    def methods(self) -> Sequence[MethodBinding]:
        return [MethodBinding("tasks/get", TaskParams, self.get),
                MethodBinding("tasks/cancel", TaskParams, self.cancel),
                MethodBinding("tasks/update", UpdateParams, self.update)]

    async def intercept_tool_call(self, params: types.CallToolRequestParams, ctx: Any,
                                  call_next: Any) -> Any:
        result = await call_next(ctx)
        arguments = params.arguments or {}
        if (params.name != "send_message" or arguments.get("expect_reply") is not True
                or not declared(ctx) or not isinstance(result, CallToolResult)
                or result.is_error or not result.structured_content):
            return result
        sent = result.structured_content
        if sent.get("broadcast") or len(sent.get("to") or ()) != 1:
            return result
        task = await self._task(str(sent["id"]))
        return {"resultType": "task", **_shown(task)}

    async def get(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        _require(ctx)
        task = await self._task(params.task_id)
        shown = _shown(task)
        if task.state == tasks.COMPLETED:
            shown["result"] = _answer(task).model_dump(by_alias=True, exclude_none=True,
                                                       mode="json")
        return shown

    async def cancel(self, ctx: Any, params: TaskParams) -> dict[str, Any]:
        _require(ctx)
        task = await self._task(params.task_id)
        if task.state != tasks.CANCELED:
            await self._run(tasks.recall, params.task_id)
        return {}

    async def update(self, ctx: Any, params: UpdateParams) -> dict[str, Any]:
        _require(ctx)
        await self._task(params.task_id)
        return {}

    async def _task(self, task_id: str) -> tasks.MailTask:
        found: tasks.MailTask = await self._run(tasks.task_of, task_id)
        return found

    async def _run(self, work: Callable[..., Any], *args: Any) -> Any:
        """``work(box, *args)`` in a thread, mailslot's errors as MCP's."""
        def run() -> Any:
            try:
                return work(self.open_box(), *args)
            except NotFound:
                raise MCPError(INVALID_PARAMS, "Failed to retrieve task: Task not found"
                               ) from None
            except Refused as exc:
                raise MCPError(INVALID_PARAMS, str(exc)) from None
            except MailslotError as exc:
                raise MCPError(-32603, str(exc)) from None

        return await anyio.to_thread.run_sync(run)


def _require(ctx: Any) -> None:
    if not declared(ctx):
        raise MCPError(MISSING_CAPABILITY, "Missing required client capability",
                       {"requiredCapabilities": {"extensions": {TASKS: {}}}})


def _shown(task: tasks.MailTask) -> dict[str, Any]:
    """A task's wire shape (its result, when completed, is added by ``tasks/get``)."""
    return {"taskId": task.message.id, "status": _STATUS[task.state],
            "statusMessage": _SAYS.get(task.state, task.note or "answered"),
            "createdAt": _utc(task.message.date), "lastUpdatedAt": _utc(task.changed),
            "ttlMs": None, "pollIntervalMs": POLL_MS}


def _answer(task: tasks.MailTask) -> CallToolResult:
    """The completed task's result: the reply framed as untrusted data (or the note)."""
    if task.answer is None:
        return CallToolResult(content=[TextContent(type="text", text=task.note)],
                              structured_content={"id": task.message.id,
                                                  "state": task.state, "note": task.note})
    framed = framing.frame_all([task.answer], with_hint=False)
    return CallToolResult(content=[TextContent(type="text", text=framed)],
                          structured_content={"id": task.answer.id,
                                              "in_reply_to": task.message.id,
                                              "from": task.answer.sender, "framed": framed})


def _utc(text: str) -> str:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        moment = datetime.now(UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
