"""The body of ``zorkmcp tools --lint``: what the engine does to each tool before the model sees it, and why.

:func:`lint_report` runs :func:`zorkmcp.mcp.translate_schema` over every tool's input schema, notes
a description cut for the model (:func:`~zorkmcp.mcp._tools.offered_description`) and lists the
tools left out, with why, and returns a JSON-able list (for ``--json``); :func:`render_lint_report`
turns it into printable lines, with control characters from the servers shown escaped
(:func:`~zorkmcp._controls.visible_controls`).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from attrs import frozen

from ._controls import visible_controls
from .mcp._schema import translate_schema
from .mcp._tools import MAX_DESCRIPTION_CHARS, offered_description, utf16_units

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence, Set

    _Tuple = tuple[str, Mapping[str, Any] | None] | tuple[str, Mapping[str, Any] | None, str | None]

__all__ = ["LintTool", "lint_report", "render_lint_report"]


@frozen(kw_only=True)
class LintTool:
    """One tool a server listed, as ``--lint`` looks at it.

    Attributes:
        name: the canonical ``server.tool``.
        schema: its MCP input schema (``None``: none, or unknown for a tool left out at listing).
        server: its server (shown, with ``wire_name``, when two tools share ``name``).
        wire_name: the name the model calls it by (``None``: it is not offered).
        left_out: why it is left out whatever its schema (a tool that runs only as a task, a
            ``tools/list`` entry that is not valid MCP), or ``None``.
        description: its description as the server lists it (``None``: not looked at).
        repairs: what the engine changed in its ``tools/list`` entry to keep it usable (a field that
            is not valid MCP dropped: ``dropped its outputSchema (...)``), as the episode log says.
    """

    name: str
    schema: Mapping[str, Any] | None = None
    server: str | None = None
    wire_name: str | None = None
    left_out: str | None = None
    description: str | None = None
    repairs: tuple[str, ...] = ()


def _description_note(description: str | None) -> str | None:
    """The note for a description the model is offered cut (what the episode log warns of), else ``None``."""
    if description is None or (offered := offered_description(description)) == description:
        return None  # the engine's own rule decides what is cut
    kept = utf16_units(offered) - 1  # its "…" aside
    return (
        f"description: {utf16_units(description)} characters, more than OpenAI's API takes "
        f"({MAX_DESCRIPTION_CHARS}); the model is offered the first {kept} of them and …"
    )


def lint_report(tools: Sequence[LintTool | _Tuple]) -> list[dict[str, Any]]:
    """One entry per tool, in the given order.

    Args:
        tools: each a :class:`LintTool`, or ``(canonical tool name, MCP input schema)`` with, when
            given and not ``None``, a third item: why the tool is left out whatever its schema.

    Returns:
        Dicts with ``tool`` (the canonical name), ``status`` (``"ok"``, ``"changed"`` or
        ``"excluded"``), ``changes`` (the notes: first the repairs of its ``tools/list`` entry, each
        starting with ``dropped its``, then those of the input schema, each starting with its JSON
        path, then a cut description with ``description:``), ``excluded`` (why the tool is left out, or
        ``None``), ``parameters`` (the schema the LLM is offered, or ``None``), ``server`` (its
        server, ``None`` when not known) and ``wire_name`` (the name the model calls it by, ``None``
        when the tool is not offered): every entry has every key, so a script reads them all alike.
    """
    listed = [tool if isinstance(tool, LintTool) else _from_tuple(tool) for tool in tools]
    report: list[dict[str, Any]] = []
    for tool in listed:
        changes: list[str] = list(tool.repairs)
        if tool.left_out is not None and tool.schema is None:  # left out at listing: no schema to translate
            excluded: str | None = tool.left_out
            parameters = None
        else:
            result = translate_schema(tool.schema)
            changes.extend(result.changes)
            excluded = tool.left_out if tool.left_out is not None else result.excluded
            parameters = result.parameters
            if excluded is None and (note := _description_note(tool.description)) is not None:
                changes.append(note)
        status = "excluded" if excluded is not None else "changed" if changes else "ok"
        entry: dict[str, Any] = {
            "tool": tool.name,
            "status": status,
            "changes": changes,
            "excluded": excluded,
            "parameters": parameters if excluded is None else None,
            "server": tool.server,
            "wire_name": tool.wire_name if excluded is None else None,
        }
        report.append(entry)
    return report


def _from_tuple(tool: _Tuple) -> LintTool:
    name, schema, *left_out = tool
    return LintTool(name=name, schema=schema, left_out=left_out[0] if left_out else None)


def _heading(entry: Mapping[str, Any], shared: Set[str]) -> str:
    """The tool's name, and for a name two tools share (one of ``shared``), which of them this is."""
    tool = visible_controls(entry["tool"], keep="")
    if entry["tool"] not in shared:
        return tool
    which = [f"server '{visible_controls(str(entry['server']), keep='')}'"]
    if entry.get("wire_name") is not None:
        which.append(f"wire name {visible_controls(entry['wire_name'], keep='')}")
    return f"{tool} ({', '.join(which)})"


def render_lint_report(report: Sequence[Mapping[str, Any]]) -> list[str]:
    """Printable lines for a :func:`lint_report`: one heading per tool, its notes indented, a summary.

    Control characters in names and notes are shown escaped (:func:`~zorkmcp._controls.visible_controls`).
    """
    lines: list[str] = []
    counts = {"ok": 0, "changed": 0, "excluded": 0}
    shared = {name for name, count in Counter(entry["tool"] for entry in report).items() if count > 1}
    for entry in report:
        status = entry["status"]
        counts[status] = counts.get(status, 0) + 1
        tool = _heading(entry, shared)
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
