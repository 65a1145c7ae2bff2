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
  the tool's result.

Reading mail is left to the hooks (framed as untrusted data) and to the CLI.
"""

from __future__ import annotations

import json
import re

from ..core.errors import InvalidInput
from .host import MIDTURN, PROMPT, START, Host, field

MARK = "// Written by `mailslot install pi`"
_AGENT_LINE = re.compile(r"^// mailslot agent: (\S+)$", re.M)

_TEMPLATE = """\
{mark}; run it again to change this file (edits are replaced).
// mailslot agent: {agent}
import {{ spawnSync }} from "node:child_process";
import type {{ ExtensionAPI }} from "@mariozechner/pi-coding-agent";
import {{ Type }} from "typebox";

const MAILSLOT: string = {exe};
const BOUND: string[] = {bound};
const HOOKS: boolean = {hooks};

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
}}
"""


class Pi(Host):
    name = "pi"
    title = "Pi"
    package = "@mariozechner/pi-coding-agent"

    mcp_path = {"project": ".pi/extensions/mailslot.ts",
                "user": "~/.pi/agent/extensions/mailslot.ts"}
    mcp_format = "extension"
    install_notes = {scope: ("Pi has no MCP client: this is a Pi extension (mailslot's tools, "
                             "and with --hooks the mail hooks), loaded at Pi's next start or "
                             "/reload.",) for scope in ("project", "user")}

    events = {"session-start": START, "before-agent": PROMPT, "tool-result": MIDTURN}
    """Run from the extension ``install pi --hooks`` writes."""
    outputs = {START: field("additionalContext"), PROMPT: field("additionalContext"),
               MIDTURN: field("additionalContext")}
    tool_names = "mailslot_{}"  # the extension's tools (reply and mark_done among them)

    def extension(self, executable: str, tail: list[str], agent: str, *, hooks: bool) -> str:
        """The extension's text: ``executable`` run with ``tail`` (``--agent``, ``--dir``)."""
        return _TEMPLATE.format(mark=MARK, agent=agent, exe=json.dumps(executable),
                                bound=json.dumps(tail), hooks=json.dumps(hooks))

    def extension_agent(self, before: str, where: str) -> str | None:
        """The agent a file mailslot wrote is bound to; a file it did not write is
        refused (it is never overwritten)."""
        if MARK not in before:
            raise InvalidInput(f"{where} was not written by mailslot; move it away first, "
                               "nothing was changed")
        found = _AGENT_LINE.search(before)
        return found.group(1) if found else None


HOST = Pi()
