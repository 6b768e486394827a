"""A tool's JSON text reaches the model as the server wrote it, or as the same numbers.

Before, text that parsed as JSON was handed on parsed: ``1e400`` became ``Infinity`` (which is not
JSON at all), ``12345678901234567890.12`` lost its last digits, and ``NaN`` passed as a number. Such
text now stays text; numbers a float holds exactly are still parsed. Real parts: the SDK's own result
types through :func:`zorkmcp.mcp.convert_call_result`, as a session hands them over.
"""

from __future__ import annotations

from typing import Any

import mcp_types
import pytest

from zorkmcp.mcp import convert_call_result


@pytest.mark.parametrize(
    ("text", "content"),
    [
        ('{"v": 1e400}', '{"v": 1e400}'),
        ('{"v": 12345678901234567890.12}', '{"v": 12345678901234567890.12}'),
        ('{"v": NaN}', '{"v": NaN}'),
        ("[-Infinity]", "[-Infinity]"),
        ('{"v": 1.5, "n": 12345678901234567890}', {"v": 1.5, "n": 12345678901234567890}),
        ("[0.1, 1e5, 2.50]", [0.1, 100000.0, 2.5]),
    ],
)
def test_a_number_a_float_would_change_keeps_the_text_as_text(text: str, content: Any) -> None:
    result = mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)])
    assert convert_call_result(result, max_bytes=65536).content == content
