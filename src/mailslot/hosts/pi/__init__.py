"""Pi (``@mariozechner/pi-coding-agent``): everything mailslot knows about it.

Pi has no MCP client by design; its extensions (TypeScript files Pi loads from
``.pi/extensions/`` or ``~/.pi/agent/extensions/``) register tools and react to events.
``mailslot install pi`` writes one such file, owned by mailslot and rewritten whole on
every install:

* tools ``mailslot_send_message``, ``mailslot_reply`` and ``mailslot_mark_done``, each one
  run of the ``mailslot`` command bound to the agent (the text goes on stdin, never into
  a command line, and no tool takes a sender);
* with ``--hooks``, the mail hooks: ``before_agent_start`` runs ``mailslot hook pi
  session-start`` at a session's first prompt and ``before-agent`` at later ones, and
  ``tool_result`` runs ``tool-result`` (mid-turn mail), appending the framed text to
  the tool's result;
* with ``--wake`` as well, the session wakes itself (the ``pi`` wake method): in Pi's
  interactive and RPC modes (``ctx.hasUI``; never under ``-p`` or ``--mode json``, which
  end after their prompt) the extension keeps one background waiter, ``mailslot hook pi
  wait`` (:mod:`mailslot.frontends.hooks.wait`), from the session's start and again after each
  turn. When mail comes, the waiter prints mailslot's one-line notice and exits 2, and
  the extension queues that notice into the session with ``pi.sendMessage(...,
  {deliverAs: "followUp", triggerTurn: true})``: an idle session starts a turn at once,
  a busy one takes it when its turn is over. The waiter is ended with the session
  (``session_shutdown``), and leaves by itself when Pi is gone.

Reading mail is left to the hooks (framed as untrusted data) and to the CLI.
"""

from __future__ import annotations

import json
import re

from ...core.errors import InvalidInput
from ...host_registry.host import MIDTURN, PROMPT, START, Host, Rung, field
from .. import PROVIDER_ENV

MARK = "// Written by `mailslot install pi`"
_AGENT_LINE = re.compile(r"^// mailslot agent: (\S+)$", re.M)

_TEMPLATE = """\
{mark}; run it again to change this file (edits are replaced).
// mailslot agent: {agent}
import {{ spawn, spawnSync, type ChildProcess }} from "node:child_process";
import type {{ ExtensionAPI }} from "@mariozechner/pi-coding-agent";
import {{ Type }} from "typebox";

const MAILSLOT: string = {exe};
const BOUND: string[] = {bound};
const HOOKS: boolean = {hooks};
const WAKE: boolean = {wake};

function mailslot(args: string[], input: string): {{ ok: boolean; out: string }} {{
  const run = spawnSync(MAILSLOT, [...BOUND, ...args],
                        {{ input, encoding: "utf8", timeout: 10_000 }});
  if (run.error) return {{ ok: false, out: run.error.message }};
  return {{ ok: run.status === 0, out: run.status === 0 ? run.stdout : run.stderr }};
}}

function hook(event: string, session: string): string {{
  const run = mailslot(["hook", "pi", event], JSON.stringify({{ session_id: session }}));
  try {{
    return run.ok ? (JSON.parse(run.out).additionalContext ?? "") : "";
  }} catch {{
    return "";  // a hook never fails a session
  }}
}}

export default function (pi: ExtensionAPI) {{
  const tool = (name: string, description: string, parameters: any,
                argv: (p: any) => [string[], string]) => pi.registerTool({{
    name, label: name, description, parameters,
    async execute(_id: string, params: any) {{
      const [args, input] = argv(params);
      const run = mailslot(args, input);
      if (!run.ok) throw new Error(run.out.trim());
      return {{ content: [{{ type: "text", text: run.out }}], details: {{}} }};
    }},
  }});
  tool("mailslot_send_message",
       "Send a message to other agents through mailslot; you are the sender.",
       Type.Object({{ to: Type.String({{ description: "Recipient name(s), comma-separated." }}),
                     subject: Type.String({{ description: "One line." }}),
                     body: Type.String({{ description: "The message (Markdown)." }}) }}),
       (p) => [["send", "--json", `--to=${{p.to}}`, `--subject=${{p.subject}}`], p.body]);
  tool("mailslot_reply", "Answer a mailslot message by its id; this marks it done.",
       Type.Object({{ id: Type.String(), body: Type.String() }}),
       (p) => [["reply", "--json", "--", p.id], p.body]);
  tool("mailslot_mark_done", "Mark a mailslot message handled, by its id.",
       Type.Object({{ id: Type.String() }}),
       (p) => [["done", "--", p.id], ""]);
  if (!HOOKS) return;
  const started = new Set<string>();
  pi.on("before_agent_start", async (_event: any, ctx: any) => {{
    const session = ctx.sessionManager.getSessionId();
    const text = hook(started.has(session) ? "before-agent" : "session-start", session);
    started.add(session);
    if (text) return {{ message: {{ customType: "mailslot", content: text, display: true }} }};
  }});
  pi.on("tool_result", async (event: any, ctx: any) => {{
    const text = hook("tool-result", ctx.sessionManager.getSessionId());
    if (text) return {{ content: [...event.content, {{ type: "text", text }}] }};
  }});
  if (!WAKE) return;
  // One background waiter while the session is open: it exits 2 with the notice on
  // stderr when mail comes (0, silently, for anything else), and is not restarted then
  // until the session's next turn has ended.
  let waiter: ChildProcess | undefined;
  const wait = (ctx: any) => {{
    if (!ctx.hasUI || waiter) return;  // -p and json modes end after their prompt
    const child = spawn(MAILSLOT, [...BOUND, "hook", "pi", "wait"],
                        {{ stdio: ["pipe", "ignore", "pipe"] }});
    waiter = child;
    let notice = "";
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (part: string) => {{ notice += part; }});
    child.on("error", () => {{ if (waiter === child) waiter = undefined; }});
    child.on("close", (status: number | null) => {{
      if (waiter !== child) return;  // ended with its session
      waiter = undefined;
      if (status === 2 && notice.trim())
        pi.sendMessage({{ customType: "mailslot", content: notice.trim(), display: true }},
                       {{ deliverAs: "followUp", triggerTurn: true }});
    }});
    child.stdin!.on("error", () => {{}});
    child.stdin!.end(JSON.stringify({{ session_id: ctx.sessionManager.getSessionId() }}));
  }};
  pi.on("session_start", async (_event: any, ctx: any) => wait(ctx));
  pi.on("agent_end", async (_event: any, ctx: any) => wait(ctx));
  pi.on("session_shutdown", async () => {{
    const child = waiter;
    waiter = undefined;
    child?.kill();
  }});
}}
"""


class Pi(Host):
    name = "pi"
    title = "Pi"
    program_env = ("PI_CODING_AGENT_DIR", *PROVIDER_ENV)
    package = "@mariozechner/pi-coding-agent"

    mcp_path = {"project": ".pi/extensions/mailslot.ts",
                "user": "~/.pi/agent/extensions/mailslot.ts"}
    mcp_format = "extension"
    install_notes = {scope: ("Pi has no MCP client: this is a Pi extension (mailslot's tools, "
                             "and with --hooks the mail hooks), loaded at Pi's next start or "
                             "/reload.",) for scope in ("project", "user")}

    events = {"session-start": START, "before-agent": PROMPT, "tool-result": MIDTURN}
    """Run from the extension ``install pi --hooks`` writes."""
    wake_ladder = (Rung("pi", waiter=True), Rung("tmux"), Rung("command"))
    wake_hook = "wait"
    """The extension's background waiter (``install pi --hooks --wake``), which makes the
    session take the notice itself: Pi's exit status 2 is the extension's own rule."""
    outputs = {START: field("additionalContext"), PROMPT: field("additionalContext"),
               MIDTURN: field("additionalContext")}
    tool_names = "mailslot_{}"  # the extension's tools (reply and mark_done among them)

    def extension(self, executable: str, tail: list[str], agent: str, *, hooks: bool,
                  wake: bool = False) -> str:
        """The extension's text: ``executable`` run with ``tail`` (``--agent``, ``--dir``)."""
        return _TEMPLATE.format(mark=MARK, agent=agent, exe=json.dumps(executable),
                                bound=json.dumps(tail), hooks=json.dumps(hooks),
                                wake=json.dumps(wake))

    def extension_agent(self, before: str, where: str) -> str | None:
        """The agent a file mailslot wrote is bound to; a file it did not write is
        refused (it is never overwritten)."""
        if MARK not in before:
            raise InvalidInput(f"{where} was not written by mailslot; move it away first, "
                               "nothing was changed")
        found = _AGENT_LINE.search(before)
        return found.group(1) if found else None


HOST = Pi()
