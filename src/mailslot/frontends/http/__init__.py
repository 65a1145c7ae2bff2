"""``mailslot serve --http``: the MCP tools and a small JSON API over HTTP, and its client."""
