"""The MCP front end: the tools, the stdio server and the channel into a running session."""
