"""goalsui's tool server for agents (Model Context Protocol over stdio).

Importing this package is cheap; the MCP SDK is imported by :mod:`goalsui.mcp.server`.
"""
