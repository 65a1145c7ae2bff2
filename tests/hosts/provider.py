#!/usr/bin/env python3
"""mailslot's scripted model provider for the real-host tests, on 127.0.0.1 only.

Speaks just enough of four wire formats, streamed, for the hosts to run a whole turn:

* Anthropic Messages  ``POST …/v1/messages`` (and ``/count_tokens``)   Claude Code
* OpenAI Responses    ``POST …/responses``                             Codex CLI
* OpenAI Chat         ``POST …/chat/completions``                      Copilot CLI
* Gemini              ``POST …/models/M:streamGenerateContent?alt=sse`` Gemini CLI

The script (``--script FILE``, JSON; every key optional; re-read whenever the file
changes) decides each answer:

``call``  ``{"tool": "send_message", "args": {...}}``: the first request that offers a
          tool whose name contains ``tool`` (and whose conversation has no call of it
          yet) is answered with one call of it; ``null``: never call a tool. With
          ``"named": true`` only the tool the request's text names (``MCP tool `NAME```,
          NAME containing ``tool``: what mailslot's hook text says) is called, by exactly
          that name, as a model reading the text would. With ``"each_turn": true``
          (Anthropic Messages only) it is called once in every turn, not once in the
          conversation: a turn starts at a user message that carries no tool result.
``exec_before_text``  a shell command run once, just before the first plain-text answer
          that follows the tool call (mail arriving mid-turn).
``text``  the plain-text answer (default ``FAKE-MODEL-DONE``).

A host that defers MCP tools (it offers ``ToolSearch`` and lists the deferred names, one a
line: Factory's Droid, Claude Code 2.1.332) is first answered with ``ToolSearch``
``select:NAME``, then the call.
A path under ``/404/`` answers 404 to any method: a stand-in for a vendor's own service
that knows nothing (Droid's session lookup, ``FACTORY_API_BASE_URL``).

Every request is appended to ``--log`` as one JSON line ``{"n", "t", "method", "path",
"body", "reply"}`` (headers without keys), before it is answered, so a test reads
exactly what the host sent. The bound port is written to ``--portfile``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DEFAULT_CALL = {"tool": "send_message",
                "args": {"to": "observer", "subject": "hello from the model",
                         "body": "sent through the host's MCP tool"}}
SECRET_HEADERS = ("authorization", "x-api-key", "x-goog-api-key", "api-key")


class Script:
    """What to answer, and the log of what was asked. Shared by all handler threads."""

    def __init__(self, path: Path | None, log: Path) -> None:
        self.path = path
        self.stamp: int | None = None
        self.log = log
        self.lock = threading.Lock()
        self.count = 0
        self.load({})
        self.refresh()

    def load(self, spec: dict[str, Any]) -> None:
        self.call: dict[str, Any] | None = spec.get("call", DEFAULT_CALL)
        self.each_turn = bool((self.call or {}).get("each_turn"))
        self.exec_before_text: str | None = spec.get("exec_before_text")
        self.text: str = spec.get("text", "FAKE-MODEL-DONE")

    def refresh(self) -> None:
        """Re-read the script file when a test rewrote it (a new script starts afresh)."""
        if self.path is None:
            return
        with self.lock:
            stamp = self.path.stat().st_mtime_ns
            if stamp != self.stamp:
                self.stamp = stamp
                self.load(json.loads(self.path.read_text(encoding="utf-8")))

    def tool_for(self, body: Any, offered: list[str], called: list[str]) -> str | None:
        """The tool to call now, or ``None`` for a text answer."""
        if self.call is None:
            return None
        want = str(self.call.get("tool", "send_message"))
        if any(want in name for name in called):
            return None
        matches = sorted((n for n in offered if want in n),
                         key=lambda n: ("mailslot" not in n, len(n)))
        if self.call.get("named"):
            matches = [n for n in matches if n == self.named(body)]
        return matches[0] if matches else None

    def named(self, body: Any) -> str | None:
        """The wanted tool as the request's text names it (``MCP tool `NAME```), if it does."""
        want = re.escape(str((self.call or {}).get("tool", "send_message")))
        for text in _strings(body):
            if found := re.search(rf"MCP tool `([\w.:-]*{want})`", text):
                return found.group(1)
        return None

    def args(self) -> dict[str, Any]:
        return dict((self.call or {}).get("args") or {})

    def deferred(self, body: Any, offered: list[str]) -> str | None:
        """The deferred tool to load first, when a host offers MCP tools only by name.

        Hosts that defer tools (Droid, Claude Code 2.1.332) offer a ``ToolSearch`` tool and
        list the deferred names, one a line, in the conversation; a model calls
        ``ToolSearch`` with ``select:NAME`` and can call the tool from the next request
        on. ``None`` unless the wanted tool is listed so and was not searched for yet.
        """
        if self.call is None or "ToolSearch" not in offered:
            return None
        if self.call.get("named"):
            name = self.named(body)  # selected by the name read, listed or not
        else:
            want = str(self.call.get("tool", "send_message"))
            found = sorted((n for n in deferred_names(body) if want in n),
                           key=lambda n: ("mailslot" not in n, len(n)))
            name = found[0] if found else None
        if name is None or name in offered or f"select:{name}" in _strings(body):
            return None  # loaded already, or searched for once (a resumed session's
        return name  # history holds the first turn's search for another tool)

    def before_text(self, called: list[str]) -> None:
        """Run ``exec_before_text`` once, at the first text answer after a tool call."""
        with self.lock:
            cmd, fire = self.exec_before_text, bool(called)
            if fire:
                self.exec_before_text = None
        if cmd and fire:
            subprocess.run(cmd, shell=True, check=False, timeout=30)

    def record(self, method: str, path: str, headers: dict[str, str], body: Any,
               reply: str) -> int:
        with self.lock:
            self.count += 1
            entry = {"n": self.count, "t": time.time(), "method": method, "path": path,
                     "headers": {k: v for k, v in headers.items()
                                 if k.lower() not in SECRET_HEADERS},
                     "body": body, "reply": reply}
            with self.log.open("a", encoding="utf-8") as out:
                out.write(json.dumps(entry) + "\n")
            return self.count


SCRIPT: Script


# ---- each wire format: the tool names offered, the tools already called ----------------

def anthropic_state(body: dict[str, Any], each_turn: bool = False
                    ) -> tuple[list[str], list[str]]:
    """The tools offered and called; with ``each_turn`` (the script's), only those
    called since the last prompt. Pure: the harness reads requests with it too."""
    offered = [t.get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)]
    called: list[str] = []
    for m in body.get("messages") or []:
        blocks = [b for b in m.get("content") or [] if isinstance(b, dict)] \
            if isinstance(m.get("content"), list) else []
        if each_turn and m.get("role") == "user" \
                and not any(b.get("type") == "tool_result" for b in blocks):
            called = []  # a prompt: a new turn
        if m.get("role") == "assistant":
            called += [b.get("name", "") for b in blocks if b.get("type") == "tool_use"]
    return offered, called


def responses_state(body: dict[str, Any]) -> tuple[list[str], list[str]]:
    offered: list[str] = []
    for t in body.get("tools") or []:
        if not isinstance(t, dict):
            continue
        if "name" in t:
            offered.append(t["name"])
        if isinstance(t.get("function"), dict):
            offered.append(t["function"].get("name", ""))
        for sub in t.get("tools") or []:  # a namespace (Codex: "mcp__SERVER")
            if isinstance(sub, dict) and "name" in sub:
                offered.append(f"{t.get('name', '')}::{sub['name']}")
    called = [str(i.get("name", "")) for i in body.get("input") or []
              if isinstance(i, dict) and i.get("type") == "function_call"]
    return offered, called


def chat_state(body: dict[str, Any]) -> tuple[list[str], list[str]]:
    offered = [t.get("function", {}).get("name", "") for t in body.get("tools") or []
               if isinstance(t, dict)]
    called = [c.get("function", {}).get("name", "") for m in body.get("messages") or []
              if isinstance(m, dict) for c in m.get("tool_calls") or []]
    return offered, called


def gemini_state(body: dict[str, Any]) -> tuple[list[str], list[str]]:
    offered = [fd.get("name", "") for t in body.get("tools") or []
               for fd in t.get("functionDeclarations") or t.get("function_declarations") or []]
    called = [p["functionCall"].get("name", "") for c in body.get("contents") or []
              for p in c.get("parts") or [] if isinstance(p, dict) and "functionCall" in p]
    return offered, called


def deferred_names(body: Any) -> list[str]:
    """The tool names a request lists for ``ToolSearch`` to load: one a line, in a text
    that names ``ToolSearch`` (Claude Code: "The following deferred tools are now
    available via ToolSearch. …", then the names)."""
    return sorted({m for text in _strings(body) if "ToolSearch" in text
                   for m in re.findall(r"^\s*([\w.:-]+)\s*$", text, re.M)})


def _strings(value: Any) -> list[str]:
    """Every string inside a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [s for item in value for s in _strings(item)] if isinstance(value, list) else []


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    args: dict[str, Any]  # the arguments of the call being answered (see _decide)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _body(self) -> Any:
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            return json.loads(raw or b"null")
        except ValueError:
            return raw.decode("utf-8", "replace")

    def _record(self, body: Any, reply: str) -> int:
        return SCRIPT.record(self.command, self.path, dict(self.headers.items()), body, reply)

    def _send(self, code: int, obj: Any, ctype: str = "application/json") -> None:
        data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _sse(self, events: list[tuple[str | None, Any]]) -> None:
        chunks = []
        for event, data in events:
            head = "" if event is None else f"event: {event}\n"
            chunks.append(head + "data: " + (data if isinstance(data, str)
                                             else json.dumps(data)) + "\n\n")
        self._send(200, "".join(chunks).encode(), "text/event-stream")

    def do_GET(self) -> None:
        if self.path.startswith("/404/"):
            self._record(None, "404")
            return self._send(404, {"error": {"message": "provider: nothing here"}})
        self._record(None, "get")
        model = "fake-model"
        self._send(200, {"object": "list", "data": [{"id": model, "object": "model",
                                                      "created": 0, "owned_by": "fake"}],
                         "models": [{"slug": model, "id": model}]})

    def do_HEAD(self) -> None:
        self._record(None, "head")
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        body = self._body()
        path = self.path.split("?")[0]
        if path.startswith("/404/"):
            self._record(body, "404")
            return self._send(404, {"error": {"message": "provider: nothing here"}})
        if not isinstance(body, dict):
            self._record(body, "400")
            return self._send(400, {"error": "expected JSON"})
        if path.endswith("/count_tokens"):
            self._record(body, "count_tokens")
            return self._send(200, {"input_tokens": 1000})
        if path.endswith(":countTokens"):
            self._record(body, "countTokens")
            return self._send(200, {"totalTokens": 1000})
        for suffix, answer in (("/messages", self.anthropic), ("/responses", self.openai_responses),
                               ("/chat/completions", self.chat)):
            if path.endswith(suffix):
                return answer(body)
        if ":streamGenerateContent" in path or ":generateContent" in path:
            return self.gemini(body, stream=":streamGenerateContent" in path)
        self._record(body, "404")
        self._send(404, {"error": {"message": f"provider: no route {path}"}})

    def _decide(self, body: dict[str, Any], state: tuple[list[str], list[str]]
                ) -> tuple[str | None, int]:
        SCRIPT.refresh()
        offered, called = state
        tool = SCRIPT.tool_for(body, offered, called)
        self.args = SCRIPT.args()
        if tool is None and (search := SCRIPT.deferred(body, offered)):
            tool, self.args = "ToolSearch", {"query": f"select:{search}"}
        if tool is None:
            SCRIPT.before_text(called)
        return tool, self._record(body, f"tool:{tool}" if tool else "text")

    def anthropic(self, body: dict[str, Any]) -> None:
        tool, n = self._decide(body, anthropic_state(body, SCRIPT.each_turn))
        if tool:
            block: dict[str, Any] = {"type": "tool_use", "id": f"toolu_{n}", "name": tool,
                                     "input": self.args}
            stop = "tool_use"
        else:
            block = {"type": "text", "text": SCRIPT.text}
            stop = "end_turn"
        msg = {"id": f"msg_{n}", "type": "message", "role": "assistant",
               "model": body.get("model", "fake-model"), "content": [block],
               "stop_reason": stop, "stop_sequence": None,
               "usage": {"input_tokens": 100, "output_tokens": 10}}
        if not body.get("stream"):
            return self._send(200, msg)
        if tool:
            start = dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(self.args)}
        else:
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": SCRIPT.text}
        self._sse([
            ("message_start", {"type": "message_start",
                               "message": dict(msg, content=[], stop_reason=None)}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": start}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                     "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": 10}}),
            ("message_stop", {"type": "message_stop"}),
        ])

    def openai_responses(self, body: dict[str, Any]) -> None:
        tool, n = self._decide(body, responses_state(body))
        item: dict[str, Any]
        if tool:
            item = {"type": "function_call", "id": f"fc_{n}", "call_id": f"call_{n}",
                    "name": tool, "arguments": json.dumps(self.args),
                    "status": "completed"}
            if "::" in tool:  # inside a namespace: Codex wants name + namespace
                namespace, name = tool.split("::", 1)
                item.update(name=name, namespace=namespace)
        else:
            item = {"type": "message", "id": f"msg_{n}", "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": SCRIPT.text,
                                 "annotations": []}]}
        usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0},
                 "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
                 "total_tokens": 110}
        resp = {"id": f"resp_{n}", "object": "response", "created_at": int(time.time()),
                "status": "completed", "model": body.get("model", "fake-model"),
                "output": [item], "usage": usage}
        if not body.get("stream", True):
            return self._send(200, resp)
        events: list[tuple[str | None, Any]] = [
            ("response.created", {"type": "response.created",
                                  "response": dict(resp, status="in_progress", output=[])}),
            ("response.output_item.added", {"type": "response.output_item.added",
                                            "output_index": 0, "item": item}),
        ]
        if not tool:
            events.append(("response.output_text.delta", {
                "type": "response.output_text.delta", "item_id": item["id"],
                "output_index": 0, "content_index": 0, "delta": SCRIPT.text}))
        events += [
            ("response.output_item.done", {"type": "response.output_item.done",
                                           "output_index": 0, "item": item}),
            ("response.completed", {"type": "response.completed", "response": resp}),
        ]
        self._sse(events)

    def chat(self, body: dict[str, Any]) -> None:
        tool, n = self._decide(body, chat_state(body))
        model = body.get("model", "fake-model")
        if tool:
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [
                {"index": 0, "id": f"call_{n}", "type": "function",
                 "function": {"name": tool, "arguments": json.dumps(self.args)}}]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": SCRIPT.text}
            finish = "stop"
        usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
        base = {"id": f"chatcmpl-{n}", "created": int(time.time()), "model": model}
        if not body.get("stream"):
            return self._send(200, dict(base, object="chat.completion", usage=usage, choices=[
                {"index": 0, "message": message, "finish_reason": finish}]))
        base["object"] = "chat.completion.chunk"
        self._sse([
            (None, dict(base, choices=[{"index": 0, "delta": message, "finish_reason": None}])),
            (None, dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}])),
            (None, dict(base, choices=[], usage=usage)),
            (None, "[DONE]"),
        ])

    def gemini(self, body: dict[str, Any], stream: bool) -> None:
        tool, _ = self._decide(body, gemini_state(body))
        part = ({"functionCall": {"name": tool, "args": self.args}} if tool
                else {"text": SCRIPT.text})
        resp = {"candidates": [{"content": {"role": "model", "parts": [part]},
                                "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 10,
                                  "totalTokenCount": 110},
                "modelVersion": body.get("model", "fake-model")}
        if not stream:
            return self._send(200, resp)
        self._sse([(None, resp)])


def main() -> None:
    global SCRIPT
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", type=Path, required=True)
    ap.add_argument("--portfile", type=Path, required=True)
    ap.add_argument("--script", type=Path)
    args = ap.parse_args()
    SCRIPT = Script(args.script, args.log)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)  # loopback only
    tmp = args.portfile.with_suffix(".tmp")
    tmp.write_text(str(server.server_address[1]), encoding="utf-8")
    tmp.replace(args.portfile)  # appears whole: the test waits for it
    server.serve_forever()


if __name__ == "__main__":
    main()
