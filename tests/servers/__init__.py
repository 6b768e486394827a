"""MCP servers and helpers for the tests (the misbehaving stdlib server lives here)."""
