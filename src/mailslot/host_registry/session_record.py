"""What a host keeps of each session that shows what its model was given: the
delivery ladder's ``seen`` rung (the rule is :mod:`mailslot.service.seen`'s, the
knowledge of each record its host's module's). A part of :class:`~.host.Host`.

On the hook path: nothing loaded at import.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, ClassVar


class SessionRecord:
    """The defaults: the host keeps no record mailslot reads."""

    record_holds: ClassVar[frozenset[str]] = frozenset()
    """The moments (and ``tool``: a read result of mailslot's MCP server) whose text
    the host's own record of a session keeps as it was sent to the model. Mail shown at
    any other moment, or by a host keeping no record mailslot reads (the default),
    stays at ``surfaced``: no fingerprint is added, nothing is checked or shown again."""
    given_markers: ClassVar[tuple[bytes, ...]] = ()
    """Bytes found (as the host writes them) in every line of the record that
    :meth:`given` can say yes to; a line holding none of them is never parsed."""
    answer_markers: ClassVar[tuple[bytes, ...]] = ()
    """The same for :meth:`answers`: a check looks only at the lines holding these, so
    it costs little in a record of 50 MB."""

    def record_of(self, payload: Mapping[str, object], env: Mapping[str, str]) -> str | None:
        """The file holding the host's record of the session a hook runs in (its
        transcript), from the hook's input; ``None``: none that mailslot reads."""
        return None

    def server_record(self, env: Mapping[str, str], meta: Mapping[str, object],
                      cwd: str) -> str | None:
        """The same for the session an MCP server serves, from what the host gives the
        server (``env``, its working folder ``cwd``) and a tool call (``meta``: the
        request's ``_meta``); ``None``: the server is not this host's, or it cannot
        tell."""
        return None

    def given(self, entry: Mapping[str, Any]) -> object | None:
        """If one parsed line of the record is what the host sent its model (not the
        hook's raw output, not a copy kept for its screen), a key for :meth:`answers`;
        else ``None``. A fingerprint found in such a line was sent, once answered."""
        return None

    def answers(self, entry: Mapping[str, Any], given: object) -> bool:
        """Does this line, later in the record than a line whose :meth:`given` key is
        ``given``, show that a model answered a request that held that line?"""
        return False


def transcript_path(payload: Mapping[str, object]) -> str | None:
    """A hook input's ``transcript_path`` when it is an absolute path: where a host
    whose hook inputs carry that field names the session's record (each host's module
    says whether its own does)."""
    path = payload.get("transcript_path")
    return path if isinstance(path, str) and os.path.isabs(path) else None
