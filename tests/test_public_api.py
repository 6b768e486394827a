"""The package's public surface: every name in ``__all__`` resolves, and the root import stays light."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

import pytest
from servers.helpers import modules_loaded_by

import bridge
import zorkmcp

if TYPE_CHECKING:
    from pathlib import Path

PACKAGES = [
    "zorkmcp",
    "zorkmcp.mcp",
    "zorkmcp.llm",
    "zorkmcp.game",
    "zorkmcp.config",
    "zorkmcp.eval",
    "bridge",
]


@pytest.mark.parametrize("package", PACKAGES)
def test_all_names_resolve(package: str) -> None:
    module = importlib.import_module(package)
    assert module.__all__, package
    assert len(set(module.__all__)) == len(module.__all__)
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = zorkmcp.nope  # type: ignore[attr-defined]


def test_bridge_exports_the_sync_boundary() -> None:
    assert set(bridge.__all__) >= {"get_action", "Bridge"}


def test_root_import_does_not_load_heavy_dependencies() -> None:
    # Every per-turn spawn of the embedded server imports the zorkmcp package first.
    assert modules_loaded_by("import zorkmcp", ("trio", "attrs", "mcp", "httpx", "httpx2", "cattrs")) == []


def test_the_command_s_parser_does_not_load_the_engine() -> None:
    # `zorkmcp --help`, `zorkmcp eval --help` and a bad flag answer without importing the MCP SDK.
    heavy = ("mcp", "trio", "anyio", "httpx2", "jericho", "pydantic", "numpy", "matplotlib", "cattrs")
    assert modules_loaded_by("from zorkmcp.cli import build_parser; build_parser()", heavy) == []


def test_a_bad_eval_file_is_told_without_loading_the_engine(tmp_path: Path) -> None:
    # `zorkmcp eval bad.toml` took 0.83 s to say what is wrong: reading the file imported the engine.
    bad = tmp_path / "bad.toml"
    bad.write_text('[eval]\nepisodes = "x"\n')
    statement = f"from zorkmcp.cli import main; assert main(['eval', {str(bad)!r}]) == 2"
    heavy = ("mcp", "trio", "anyio", "httpx2", "jericho", "pydantic", "numpy", "matplotlib")
    assert modules_loaded_by(statement, heavy) == []
