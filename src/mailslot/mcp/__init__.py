"""The MCP front end: the tools, the stdio server and the Claude Code channel."""
