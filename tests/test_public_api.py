"""The package's public surface: every name in ``__all__`` resolves, and the root import stays light."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest
from servers.helpers import modules_loaded_by

import bridge
import zorkmcp

REPO = Path(__file__).resolve().parents[1]

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


def test_the_packages_ship_their_annotations() -> None:
    """PEP 561: without ``py.typed`` in the wheel a user's mypy skips the packages altogether."""
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "py.typed" in package_data["zorkmcp"]
    assert package_data["bridge"] == ["py.typed"]
    assert (REPO / "zorkmcp" / "py.typed").is_file()
    assert (REPO / "bridge" / "py.typed").is_file()


def test_a_users_strict_mypy_accepts_the_readme_s_sync_use(tmp_path: Path) -> None:
    """``get_action`` returns a ``TypedDict``: its ``action`` is a ``str`` to mypy, as it is at run time."""
    user = tmp_path / "user.py"
    user.write_text(
        textwrap.dedent("""\
            from pathlib import Path

            from bridge import Bridge, get_action


            def play(state: str) -> str:
                step = get_action(state, pyproject=Path("pyproject.toml"))
                action: str = step["action"]
                with Bridge(pyproject="pyproject.toml") as episode:
                    return action + episode.get_action(state)["action"].strip()
            """)
    )
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
         "--cache-dir", str(tmp_path / "c"), str(user)],
        env={**os.environ, "MYPYPATH": str(REPO)}, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert (result.returncode, result.stdout) == (0, "Success: no issues found in 1 source file\n")
