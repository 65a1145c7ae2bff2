"""The client of ``serve --http``'s JSON API, for remote hooks and the remote CLI.

Standard library only (``urllib``), loaded only when ``--remote`` is given, so a local
hook pays nothing for it. The secret is read from the credential file (the 0600 file
``mailslot agent add`` writes, with its checks) or, when no file is named, from
``MAILSLOT_SECRET``; it is sent only as ``Authorization: Bearer`` and never printed.
HTTPS certificates are verified (a private CA: set ``SSL_CERT_FILE``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import Any

from ...core.errors import InvalidInput, MailslotError, StoreError
from .wire import API, checked_url, error_from

SECRET_ENV = "MAILSLOT_SECRET"


def read_secret(credential: str | None, env: Mapping[str, str] = os.environ) -> str:
    """The bearer secret from the credential file, else from ``MAILSLOT_SECRET``."""
    if credential is None:
        secret = env.get(SECRET_ENV, "").strip()
        if not secret:
            raise InvalidInput(f"--remote needs --credential FILE or {SECRET_ENV}")
        return secret
    from ...access.credentials import read_credential

    return read_credential(credential).secret


class Remote:
    """One server's JSON API, called with one credential."""

    def __init__(self, url: str, secret: str, *, timeout: float = 30.0) -> None:
        self.base = checked_url(url).rstrip("/").removesuffix("/mcp")
        self._secret = secret
        self.timeout = timeout

    def get(self, name: str, **query: Any) -> Any:
        from urllib.parse import urlencode

        shown = {k: ("1" if v is True else "0" if v is False else v)
                 for k, v in query.items() if v is not None}
        return self._call("GET", f"{name}?{urlencode(shown)}", None)

    def post(self, name: str, body: Mapping[str, Any]) -> Any:
        return self._call("POST", name, json.dumps(body).encode())

    def _call(self, method: str, path: str, data: bytes | None) -> Any:
        from http.client import HTTPException
        from urllib.error import HTTPError, URLError
        from urllib.request import Request

        request = Request(f"{self.base}{API}{path}", data=data, method=method, headers={
            "Authorization": f"Bearer {self._secret}", "Content-Type": "application/json",
            "Accept": "application/json"})
        try:
            with _opener().open(request, timeout=self.timeout) as response:
                return json.loads(response.read())
        except HTTPError as exc:
            if 300 <= exc.code < 400:
                raise StoreError(f"{self.base} answered with a redirect ({exc.code}); "
                                 "not followed, so the secret goes nowhere else: give "
                                 "--remote the server's own URL") from None
            raise _error(exc.code, exc.read()) from None
        except (URLError, OSError, ValueError, HTTPException) as exc:  # cut mid-answer too
            reason = getattr(exc, "reason", None) or exc
            raise StoreError(f"cannot reach {self.base}: {reason}") from None


def _opener() -> Any:
    """urllib's usual opener, but a redirect comes back as an ``HTTPError`` instead of
    being followed with the ``Authorization`` header to wherever it points."""
    from urllib.request import HTTPRedirectHandler, build_opener

    class Refuse(HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    return build_opener(Refuse())


def _error(status: int, raw: bytes) -> MailslotError:
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    return error_from(body, status)
