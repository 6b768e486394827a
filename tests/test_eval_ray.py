"""``zorkmcp eval --ray``: each episode is a Ray task in a local Ray runtime that the run starts and
shuts down; the driver writes the same files."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from play_support import offline_env, zork1_path

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="Ray is not installed (pip install 'zorkmcp[ray]')"
)


def _ray_processes() -> set[int]:
    """PIDs of running Ray processes (raylet, gcs_server, workers), from /proc."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if (
            b"raylet" in cmdline
            or b"gcs_server" in cmdline
            or b"ray::" in cmdline
            or b"default_worker" in cmdline
        ):
            found.add(int(entry.name))
    return found


def test_episodes_run_as_ray_tasks_and_no_ray_process_outlives_the_run(tmp_path: Path) -> None:
    if not sys.platform.startswith("linux"):  # pragma: no cover
        pytest.skip("needs /proc")
    before = _ray_processes()
    run = tmp_path / "run"
    command = [
        sys.executable, "-m", "zorkmcp.cli", "eval", "--ray", "--game", str(zork1_path()), "--no-mcp",
        "--episodes", "2", "--turns", "3", "--concurrency", "2", "--out", str(run),
    ]  # fmt: skip
    proc = subprocess.Popen(
        command, cwd=tmp_path, env=offline_env(RAY_AUTH_MODE="disabled"), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err[-2000:]
    records = [json.loads(p.read_text()) for p in sorted((run / "episodes" / "no-mcp").glob("seed-*.json"))]
    assert [r["seed"] for r in records] == [12, 13]
    for record in records:
        assert (record["runner"], record["turns"], record["scripted"]) == ("ray", 3, True)
        assert "error" not in record
        assert record["pid"] != proc.pid  # played in a Ray worker, not in the driver
        events = (
            (run / "episodes" / "no-mcp" / f"seed-{record['seed']}.events.jsonl").read_text().splitlines()
        )
        assert json.loads(events[-1])["event_type"] == "episode_complete"
    assert (run / "summary.json").is_file()
    assert _ray_processes() - before == set()
