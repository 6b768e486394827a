"""MCP servers that zorkmcp ships."""
