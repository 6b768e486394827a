"""The body of ``zorkmcp tools --lint``: what schema translation does to each tool, and why.

:func:`lint_report` runs :func:`zorkmcp.mcp.translate_schema` over every tool's input schema and
returns a JSON-able list (for ``--json``); :func:`render_lint_report` turns it into printable lines,
with control characters from the servers shown escaped (:func:`~zorkmcp._controls.visible_controls`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._controls import visible_controls
from .mcp._schema import translate_schema

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["lint_report", "render_lint_report"]


def lint_report(
    tools: Sequence[tuple[str, Mapping[str, Any] | None] | tuple[str, Mapping[str, Any] | None, str | None]],
) -> list[dict[str, Any]]:
    """One entry per tool, in the given order.

    Args:
        tools: ``(canonical tool name, MCP input schema)`` pairs, the schema may be ``None``; a third
            item, when given and not ``None``, is why the tool is left out whatever its schema (a
            tool that runs only as a task).

    Returns:
        Dicts with ``tool`` (the name), ``status`` (``"ok"``, ``"changed"`` or ``"excluded"``),
        ``changes`` (the notes, each starting with a JSON path), ``excluded`` (why the tool is left
        out, or ``None``) and ``parameters`` (the schema the LLM is offered, or ``None``).
    """
    report: list[dict[str, Any]] = []
    for name, schema, *left_out in tools:
        result = translate_schema(schema)
        excluded = left_out[0] if left_out and left_out[0] is not None else result.excluded
        status = "excluded" if excluded is not None else "changed" if result.changes else "ok"
        report.append(
            {
                "tool": name,
                "status": status,
                "changes": list(result.changes),
                "excluded": excluded,
                "parameters": result.parameters if excluded is None else None,
            }
        )
    return report


def render_lint_report(report: Sequence[Mapping[str, Any]]) -> list[str]:
    """Printable lines for a :func:`lint_report`: one heading per tool, its notes indented, a summary.

    Control characters in names and notes are shown escaped (:func:`~zorkmcp._controls.visible_controls`).
    """
    lines: list[str] = []
    counts = {"ok": 0, "changed": 0, "excluded": 0}
    for entry in report:
        status = entry["status"]
        counts[status] = counts.get(status, 0) + 1
        tool = visible_controls(entry["tool"], keep="")
        if status == "excluded":
            lines.append(f"{tool}: LEFT OUT: {visible_controls(str(entry['excluded']), keep='')}")
        elif status == "changed":
            lines.append(f"{tool}: offered with {len(entry['changes'])} change(s)")
        else:
            lines.append(f"{tool}: ok")
        lines.extend(f"  - {visible_controls(change, keep='')}" for change in entry["changes"])
    lines.append(
        f"{len(report)} tool(s): {counts['ok']} unchanged, {counts['changed']} changed, "
        f"{counts['excluded']} left out"
    )
    return lines
