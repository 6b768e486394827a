"""``zorkmcp eval --ray`` against a real Ray cluster that is given the wrong address, and that goes away.

The cluster is real (``ray start --head --block`` on 127.0.0.1), and so are the runs (real processes
on the real clock) and the loopback model. The README's "Evaluate" section promises one line at
once for an address that is not a cluster's, and a run that no process outlives; ``--resume``
plays what a stopped run did not finish.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import trio
from llm_server import LLMServer, rendezvous
from play_support import default_sigint, offline_env, zork1_path

from zorkmcp.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="Ray is not installed (pip install 'zorkmcp[ray]')"
)

GUARD = 180.0
"""Real seconds a run or the cluster may take before the test gives up (a hang guard)."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _listens(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


class Head:
    """A one-node cluster: ``ray start --head --block``, which stops every process it started on SIGINT."""

    def __init__(self) -> None:
        self.temp = tempfile.mkdtemp(prefix="zp", dir="/tmp")  # Ray's socket paths must stay short
        self.gcs, self.client = _free_port(), _free_port()
        command = [
            str(Path(sys.executable).with_name("ray")), "start", "--head", "--block", "--node-ip-address",
            "127.0.0.1", "--port", str(self.gcs), "--ray-client-server-port", str(self.client),
            "--dashboard-agent-listen-port", str(_free_port()), "--num-cpus", "1", "--include-dashboard",
            "false", "--disable-usage-stats", "--temp-dir", self.temp,
        ]  # fmt: skip
        self.proc = subprocess.Popen(
            command, env=offline_env(RAY_AUTH_MODE="disabled"), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True, preexec_fn=default_sigint,
        )  # fmt: skip
        started, self.output = threading.Event(), list[str]()

        def drain() -> None:  # to the end, so that the head never blocks on a full pipe
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self.output.append(line)
                if "Ray runtime started" in line:
                    started.set()
            started.set()

        self.reader = threading.Thread(target=drain, daemon=True)
        self.reader.start()
        started.wait(GUARD)  # real-time: Ray's head starts its processes
        assert self.proc.poll() is None, "".join(self.output[-30:])
        # "Ray runtime started" can come before the Ray Client server listens (a CI run found its
        # port refused): wait until both ports take connections
        deadline = time.monotonic() + GUARD
        for port in (self.gcs, self.client):
            while not _listens(port):
                assert self.proc.poll() is None, "".join(self.output[-30:])
                assert time.monotonic() < deadline, f"port {port} of Ray's head takes no connection"
                time.sleep(0.1)  # real-time: Ray's head starts its servers

    def stop(self) -> None:
        """Stop the cluster and wait until every process of it is gone."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(GUARD)  # real-time: ray start --block stops its processes
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.reader.join(GUARD)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def processes(self) -> set[int]:
        """The live processes of this cluster's session (its raylet, GCS, workers), from /proc."""
        found = set()
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if os.getsid(int(entry.name)) == self.proc.pid:
                        found.add(int(entry.name))
                except OSError:
                    continue
        return found


@pytest.fixture(scope="module")
def head() -> Iterator[Head]:
    cluster = Head()
    try:
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(cluster.temp, ignore_errors=True)


def test_the_wrong_kind_of_ray_port_is_one_line_at_once_naming_the_address_to_give(head: Head) -> None:
    # Ray Client at the GCS port gave up after 32 s; the Ray Client port as a GCS address failed
    # after 22 s and 20 warnings; ray:// without a port went to 443 (gRPC's default) for 31 s
    from zorkmcp.eval._ray import check_ray_address

    with pytest.raises(ConfigError) as at_gcs:
        check_ray_address(f"ray://127.0.0.1:{head.gcs}")
    assert str(at_gcs.value) == (
        f"--ray ray://127.0.0.1:{head.gcs}: 127.0.0.1:{head.gcs} is a Ray cluster's GCS port, not its Ray "
        "Client server, which ray:// needs (Ray Client would give up after 30 s); join the GCS as --ray "
        f"127.0.0.1:{head.gcs}, or give the Ray Client port, ray://127.0.0.1:10001 unless ray start "
        "--ray-client-server-port said otherwise"
    )
    with pytest.raises(ConfigError) as at_client:
        check_ray_address(f"127.0.0.1:{head.client}")
    assert str(at_client.value).startswith(
        f"--ray 127.0.0.1:{head.client}: a gRPC server answers at 127.0.0.1:{head.client}, but not a Ray "
        "cluster's GCS (it does not know ray.rpc.NodeInfoGcsService.GetClusterId; Ray would retry for "
        f"20 s); if it is the cluster's Ray Client server, join it as --ray ray://127.0.0.1:{head.client}, "
        "else check the address"
    )
    with socket.socket() as probe:  # nothing listens on this machine's port 443 (else: not this case)
        if probe.connect_ex(("127.0.0.1", 443)) == 0:
            pytest.skip("something listens on 127.0.0.1:443")
    with pytest.raises(ConfigError) as no_port:
        check_ray_address("ray://127.0.0.1")
    assert str(no_port.value).startswith(
        "--ray ray://127.0.0.1 (no port: gRPC's default, 443; Ray Client's is 10001): no Ray cluster "
        "answers at 127.0.0.1:443 (ConnectionRefusedError: [Errno 111] Connection refused); "
    )
    # the right addresses pass
    check_ray_address(f"127.0.0.1:{head.gcs}")
    check_ray_address(f"ray://127.0.0.1:{head.client}")


async def test_a_cluster_that_goes_away_mid_run_stops_it_with_its_summary_and_leaves_the_rest_to_resume(
    head: Head, llm_server: LLMServer, tmp_path: Path
) -> None:
    # Ray ended the driver 60 s after its head went: exit status 1, no summary, the episodes lost
    # recorded as failed (NodeDiedError), so only --retry-failed would play them. Last in this
    # module: it stops the cluster.
    if not sys.platform.startswith("linux"):  # pragma: no cover
        pytest.skip("needs /proc")
    llm_server.default, asked = rendezvous(2, lambda: None, release=False)  # both episodes in flight
    run = tmp_path / "run"
    command = [
        sys.executable, "-m", "zorkmcp.cli", "eval", "--ray", f"127.0.0.1:{head.gcs}", "--game",
        str(zork1_path()), "--base-url", llm_server.base_url, "--model", "m", "--no-mcp", "--turns", "2",
        "--episodes", "3", "--concurrency", "2", "--out", str(run),
    ]  # fmt: skip
    ended: list[subprocess.CompletedProcess[bytes]] = []

    async def play() -> None:
        ended.append(
            await trio.run_process(
                command,
                cwd=tmp_path,
                env=offline_env(RAY_AUTH_MODE="disabled"),
                check=False,
                capture_stdout=True,
                capture_stderr=True,
            )
        )

    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(play)
            await asked.wait()
            await trio.to_thread.run_sync(head.stop)
    out, err = ended[0].stdout.decode(), ended[0].stderr.decode()
    assert ended[0].returncode == 1, err[-3000:]
    assert err.splitlines()[-1] == (
        f"zorkmcp eval: stopped, the Ray cluster at 127.0.0.1:{head.gcs} went away mid-run: its GCS has "
        "not answered for 20 s (ConnectionRefusedError: [Errno 111] Connection refused); the files "
        "written before are kept; start the cluster again (ray start --head), then "
        f"run the same command with --resume --out {run}"
    )
    assert "0 episode(s) played, 0 resumed" in out
    assert json.loads((run / "summary.json").read_text())["plan"] == {
        "arms": ["no-mcp"], "first_seed": 12, "last_seed": 14,
    }  # fmt: skip
    assert sorted(p.name for p in (run / "episodes").glob("*/*")) == []  # none recorded as failed
    assert head.processes() == set()
