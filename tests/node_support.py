"""The Node.js MCP servers the tests run for real, and the marks that skip a test without them.

``.ci/run`` installs the packages into ``tests/node`` with npm; elsewhere the tests that need them
are skipped with the command that installs them.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable

NODE = shutil.which("node")
_PACKAGES = Path(__file__).with_name("node") / "node_modules/@modelcontextprotocol"
EVERYTHING = _PACKAGES / "server-everything/dist/index.js"
THINKING = _PACKAGES / "server-sequential-thinking/dist/index.js"


def needs_node_package(script: Path) -> Callable[[Any], Any]:
    """Mark a test ``node`` and skip it, saying why, without Node.js or without the package of ``script``."""
    package = script.relative_to(_PACKAGES).parts[0]

    def marked(test: Any) -> Any:
        test = pytest.mark.skipif(
            not script.is_file(),
            reason="the package is not installed: "
            f"`npm install --prefix tests/node @modelcontextprotocol/{package}` (.ci/run does)",
        )(test)
        test = pytest.mark.skipif(NODE is None, reason="Node.js is not installed")(test)
        return pytest.mark.node(test)

    return marked
