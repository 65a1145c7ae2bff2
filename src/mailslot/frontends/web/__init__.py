"""``mailslot web``: a local page to watch every agent's mail live, send as the owner
and edit wake settings (docs/web.md).

A front end like the CLI: routes in :mod:`.app` call the service (``Mailbox``,
:mod:`mailslot.service.browse`, :mod:`mailslot.service.settings`) and render templates;
:mod:`.security` guards every request; :mod:`.live` turns the store's watch into server-sent events;
:mod:`.server` binds loopback and runs uvicorn. Loaded only by ``mailslot web``.
"""
