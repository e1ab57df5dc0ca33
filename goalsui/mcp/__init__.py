"""goalsui's tool server for agents (Model Context Protocol over stdio). Importing it is cheap; the
SDK is imported by :mod:`goalsui.mcp.server`."""
