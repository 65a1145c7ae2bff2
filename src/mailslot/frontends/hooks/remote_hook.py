"""``mailslot hook HOST EVENT --remote URL``: the same hook, the store on another machine.

The server plans what to show (``GET pending``, the same delivery rules as a local hook);
this prints it in the host's shape, flushes, and only then records it (``POST seen``),
so a hook stopped in between shows the mail again. The calls share the hook's time
bound: each may take at most :data:`CALL_SECONDS`.
"""

from __future__ import annotations

import json

from ..http.client import Remote, read_secret
from . import host_io

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

CALL_SECONDS = 1.2


def run_remote(call: host_io.Request, url: str, credential: str | None,
               stdout: TextIO) -> None:
    remote = Remote(url, read_secret(credential), timeout=CALL_SECONDS)
    planned = None
    if call.moment is not None:
        planned = remote.get("pending", moment=call.moment, session=call.session,
                             limit=host_io.CONTEXT_LIMIT, stop_active=call.stop_active,
                             host=call.caller)
    text = planned.get("text") if isinstance(planned, dict) else None
    stdout.write(json.dumps(host_io.output(call, text)))
    stdout.flush()
    if text and isinstance(planned, dict) and planned.get("shown"):
        remote.post("seen", {**{k: planned.get(k)
                                for k in ("moment", "session", "shown", "broadcasts", "told")},
                             "host": call.caller, "taken": host_io.reads(stdout)})
