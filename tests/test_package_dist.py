"""The distributions a user installs: the wheel and the sdist, built as ``python -m build`` builds them.

A copy of the working tree (with its bytecode, Hypothesis database and logs, as a developer's tree
has them) is built with setuptools' PEP 517 hooks in fresh processes: the sdist, a wheel from the
tree, and a wheel from the unpacked sdist. The wheel must carry Zork I with Microsoft's MIT notice
beside it and among the distribution's licence files, the typing marker, the embedded
``default_mcp_config.json`` and ``python -m zorkmcp``; never tests, bytecode or local state. The
sdist must hold a test suite that can run (``conftest.py`` and the helpers), not Node's packages.
"""

from __future__ import annotations

import email.parser
import hashlib
import importlib.metadata
import importlib.util
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import zorkmcp

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow  # about 5 s: three builds, each in a fresh interpreter

# Never part of a build: the VCS, environments, caches and Node's packages (33 MB).
_NOT_COPIED = {".git", ".venv", "node", ".mypy_cache", ".ruff_cache", ".pytest_cache", "build"}

DIST_INFO = f"zorkmcp-{zorkmcp.__version__}.dist-info"


def _copy_tree(dest: Path) -> Path:
    def ignore(folder: str, names: list[str]) -> set[str]:
        return {n for n in names if n in _NOT_COPIED or n.endswith(".egg-info")}

    shutil.copytree(REPO, dest, ignore=ignore, symlinks=True)
    # What a developer's tree holds besides (whether or not this one does): none of it may ship.
    for stray in (
        "tests/node/node_modules/pkg/index.py",
        "tests/.hypothesis/examples/0/1",
        "zorkmcp/__pycache__/stray.cpython-311.pyc",
        "zorkmcp/game/__pycache__/stray.cpython-311.pyc",
        "benchmarks/results/run.json",
        "logs/episode.log",
    ):
        (dest / stray).parent.mkdir(parents=True, exist_ok=True)
        (dest / stray).write_text("local state\n")
    return dest


def _hook(setuptools_dir: Path, source: Path, hook: str, out: Path) -> Path:
    """Run one PEP 517 hook of setuptools.build_meta in a fresh interpreter; the file it made."""
    out.mkdir(parents=True, exist_ok=True)
    code = f"from setuptools import build_meta as b; print(b.{hook}({str(out)!r}))"
    done = subprocess.run(
        [sys.executable, "-S", "-c", code],  # -S: this setuptools only, not the environment's
        cwd=source,
        env={"PYTHONPATH": str(setuptools_dir), "PATH": "/usr/bin:/bin", "HOME": str(out)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out / done.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("dist")
    # pyproject.toml's build-system requires: setuptools>=77 (PEP 639's license = "MIT"), which the
    # [dev] extra installs; an older environment gets one of its own from the package index.
    installed = importlib.metadata.version("setuptools")
    if int(installed.split(".")[0]) >= 77:
        spec = importlib.util.find_spec("setuptools")
        assert spec is not None
        assert spec.origin is not None
        setuptools_dir = Path(spec.origin).parents[1]
    else:
        setuptools_dir = base / "setuptools"
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(setuptools_dir)]
        got = subprocess.run(
            [*pip, "setuptools>=77"], capture_output=True, text=True, timeout=300, check=False
        )
        if got.returncode != 0:
            why = got.stderr.strip().splitlines()[-1:]
            pytest.skip(f"setuptools {installed} is older than 77 and no newer one installs: {why}")
    tree = _copy_tree(base / "tree")
    sdist = _hook(setuptools_dir, tree, "build_sdist", base / "sdist")
    wheel = _hook(setuptools_dir, tree, "build_wheel", base / "wheel")
    with tarfile.open(sdist) as archive:
        archive.extractall(base / "unpacked", filter="data")  # Python 3.11.4 and later
    unpacked = base / "unpacked" / sdist.name.removesuffix(".tar.gz")
    wheel_from_sdist = _hook(setuptools_dir, unpacked, "build_wheel", base / "wheel_from_sdist")
    return {"sdist": sdist, "wheel": wheel, "wheel_from_sdist": wheel_from_sdist}


def _contents(wheel: Path) -> dict[str, str]:
    with zipfile.ZipFile(wheel) as archive:
        return {
            name: hashlib.sha256(archive.read(name)).hexdigest()
            for name in archive.namelist()
            if not name.endswith("/RECORD")  # RECORD lists the others' hashes
        }


def test_the_wheel_holds_the_game_its_licences_and_the_package_data_and_nothing_else(
    dists: dict[str, Path],
) -> None:
    names = set(_contents(dists["wheel"])) | {f"{DIST_INFO}/RECORD"}
    assert {n for n in names if not n.endswith(".py")} == {
        "bridge/py.typed",
        "zorkmcp/py.typed",
        "zorkmcp/config/default_mcp_config.json",
        "zorkmcp/game/data/zork1.z3",
        "zorkmcp/game/data/zork1.LICENSE",
        f"{DIST_INFO}/licenses/LICENSE",
        f"{DIST_INFO}/licenses/zorkmcp/game/data/zork1.LICENSE",
        f"{DIST_INFO}/METADATA",
        f"{DIST_INFO}/WHEEL",
        f"{DIST_INFO}/entry_points.txt",
        f"{DIST_INFO}/top_level.txt",
        f"{DIST_INFO}/RECORD",
    }
    sources = {
        path.relative_to(REPO).as_posix()
        for package in ("zorkmcp", "bridge")
        for path in (REPO / package).rglob("*.py")
        if "__pycache__" not in path.parts
    }
    assert {n for n in names if n.endswith(".py")} == sources
    assert "zorkmcp/__main__.py" in names  # python -m zorkmcp
    with zipfile.ZipFile(dists["wheel"]) as archive:
        assert archive.read("zorkmcp/game/data/zork1.LICENSE").startswith(
            b"MIT License\n\nCopyright (c) 2025 Microsoft\n"
        )
        assert archive.read(f"{DIST_INFO}/licenses/zorkmcp/game/data/zork1.LICENSE") == archive.read(
            "zorkmcp/game/data/zork1.LICENSE"
        )
        assert hashlib.md5(archive.read("zorkmcp/game/data/zork1.z3"), usedforsecurity=False).hexdigest() == (
            "1d4606016ea58ee038da53d994392323"
        )
        assert archive.read(f"{DIST_INFO}/entry_points.txt").decode() == (
            "[console_scripts]\nzorkmcp = zorkmcp._entry:main\n"
        )


def test_the_wheel_metadata_names_both_licences_the_version_and_the_measured_bounds(
    dists: dict[str, Path],
) -> None:
    with zipfile.ZipFile(dists["wheel"]) as archive:
        metadata = email.parser.BytesHeaderParser().parsebytes(archive.read(f"{DIST_INFO}/METADATA"))
    assert metadata["Name"] == "zorkmcp"
    assert metadata["Version"] == zorkmcp.__version__  # one version: zorkmcp --version says the same
    assert metadata["License-Expression"] == "MIT"
    assert metadata.get_all("License-File") == ["LICENSE", "zorkmcp/game/data/zork1.LICENSE"]
    assert metadata["Requires-Python"] == ">=3.11"
    assert "Typing :: Typed" in metadata.get_all("Classifier")
    assert not [c for c in metadata.get_all("Classifier") if c.startswith("License ::")]  # PEP 639
    requires = metadata.get_all("Requires-Dist")
    # matplotlib 3.8 and 3.9 fail the eval report (Axes.boxplot has no orientation=); every httpx2
    # from 2.13 on needs anyio 4.10
    assert "matplotlib>=3.10" in requires
    assert "anyio>=4.10" in requires
    assert {r.partition("extra == ")[2].strip("\"'") for r in requires if "extra ==" in r} == {
        "dev",
        "tracing",
        "langfuse",
        "ray",
    }


def test_the_sdist_holds_a_suite_that_runs_and_no_local_state(dists: dict[str, Path]) -> None:
    with tarfile.open(dists["sdist"]) as archive:
        root = dists["sdist"].name.removesuffix(".tar.gz")
        names = {n.removeprefix(f"{root}/") for n in archive.getnames()}
    for needed in (
        "tests/conftest.py",
        "tests/llm_server.py",
        "tests/servers/__init__.py",
        "tests/test_package_dist.py",
        "mcp_config.json",
        "examples/mcp_config.thoughtbox.json",
        "LICENSE",
        "zorkmcp/game/data/zork1.LICENSE",
        "zorkmcp/game/data/zork1.z3",
        "zorkmcp/config/default_mcp_config.json",
        "zorkmcp/py.typed",
    ):
        assert needed in names, needed
    assert not [n for n in names if n.startswith(("tests/node/", "logs/", "build/", "benchmarks/results/"))]
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc") or ".hypothesis" in n]


def test_a_wheel_built_from_the_sdist_equals_the_wheel_built_from_the_tree(dists: dict[str, Path]) -> None:
    assert _contents(dists["wheel_from_sdist"]) == _contents(dists["wheel"])
