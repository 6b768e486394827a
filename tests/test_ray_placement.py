"""How ``zorkmcp eval --ray`` fits K episodes on a cluster: each asks for a share of a CPU.

Pure arithmetic on the nodes' CPUs (no Ray needed); ``test_eval_ray.py`` runs it on a real cluster.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zorkmcp.eval import RayPlacement
from zorkmcp.eval._ray import place_episodes


@pytest.mark.parametrize(
    ("node_cpus", "k", "share", "at_once"),
    [
        ([2.0], 16, 0.125, 16),  # two cores, 16 at once: an eighth of a CPU each
        ([2.0], 2, 1.0, 2),  # K CPUs or more: Ray's default, a whole CPU each
        ([8.0, 8.0], 4, 1.0, 4),
        ([1.0], 3, 0.3333, 3),  # 3 × 0.3333 ≤ 1; 0.3334 would fit only 2
        ([3.0, 1.0], 6, 0.6, 6),  # 5 + 1; at 0.6666 the nodes hold 4 + 1
        ([0.5], 1, 0.5, 1),
        ([2.0], 100_000, 0.0001, 20_000),  # Ray's smallest share: as many as fit
        ([0.0, 4.0], 8, 0.5, 8),  # a node without CPU (a head node kept free) holds none
        ([], 4, 1.0, 0),
        ([0.0], 4, 1.0, 0),  # no CPU yet (an autoscaler from zero): ask for whole CPUs
    ],
)
def test_each_episode_asks_for_the_largest_share_that_fits_k_at_once(
    node_cpus: list[float], k: int, share: float, at_once: int
) -> None:
    placement = place_episodes(node_cpus, k)
    assert (placement.cpus_per_episode, placement.at_once) == (share, at_once)
    assert placement.nodes == len(node_cpus)


@pytest.mark.parametrize(
    ("placement", "line"),
    [
        (
            RayPlacement(nodes=1, cpus=2.0, cpus_per_episode=0.125, at_once=16),
            "Ray: 2 CPUs on 1 node; each episode asks for 0.125 CPU, so 16 run at once",
        ),
        (
            RayPlacement(nodes=3, cpus=1.0, cpus_per_episode=1.0, at_once=1),
            "Ray: 1 CPU on 3 nodes; each episode asks for 1 CPU, so 1 run at once",
        ),
        (
            RayPlacement(nodes=1, cpus=0.0, cpus_per_episode=1.0, at_once=0),
            "Ray: no CPU on 1 node yet; each episode asks for 1 CPU and waits for one",
        ),
    ],
)
def test_the_placement_reads_as_one_line(placement: RayPlacement, line: str) -> None:
    assert placement.describe() == line


def _fits(node_cpus: list[float], share: float) -> int:
    """Episodes of ``share`` CPU each that the nodes hold, counted as Ray does (ten-thousandths)."""
    units = round(share * 10_000)
    return sum(round(c * 10_000) // units for c in node_cpus)


@settings(max_examples=200, deadline=None)
@given(
    node_cpus=st.lists(
        st.integers(min_value=0, max_value=640).map(lambda quarters: quarters / 4), max_size=6
    ),
    k=st.integers(min_value=1, max_value=5000),
)
def test_the_share_fits_every_episode_it_can_and_no_larger_share_would(
    node_cpus: list[float], k: int
) -> None:
    placement = place_episodes(node_cpus, k)
    share = placement.cpus_per_episode
    assert 0 < share <= 1
    assert share == round(share, 4)  # a whole number of Ray's units (ten-thousandths)
    if not any(node_cpus):
        assert (share, placement.at_once) == (1.0, 0)
        return
    most = _fits(node_cpus, 0.0001)  # with Ray's smallest share
    assert placement.at_once == min(k, most)
    assert _fits(node_cpus, share) >= placement.at_once  # they do fit
    if share < 1:  # and one unit more would leave one of them out
        assert _fits(node_cpus, share + 0.0001) < placement.at_once
