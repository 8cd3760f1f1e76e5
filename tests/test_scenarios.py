"""Every bundled scenario runs from the CLI, its JSON parses, and it gives its expected time."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import yaml
from conftest import ROOT
from typer.testing import CliRunner

import netsim
from netsim.cli.main import app

SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
runner = CliRunner()


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_bundled_scenario_runs_and_matches_its_expected_result(path):
    result = runner.invoke(app, ["run", str(path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    expected = yaml.safe_load(path.read_text())["expected"]
    assert data["verified"] is True
    assert data["time_s"] == pytest.approx(expected["time_s"], rel=1e-9)
    assert data["scenario"] == path.stem


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_bundled_scenario_table(path):
    result = runner.invoke(app, ["run", str(path)])
    assert result.exit_code == 0, result.output
    for label in (
        "collective",
        "topology",
        "devices",
        "group layout",
        "algorithm",
        "bytes per device",
        "total bytes",
        "simulated time",
        "algbw",
        "busbw",
        "verified",
        "estimate (closed form)",
        "simulated / estimate",
        "regime",
        "book estimate",
        "memory per device",
        "busiest links",
    ):
        assert label in result.output
    assert "yes, equals the NumPy reference" in result.output


def test_scenario_times_match_closed_forms():
    B, alpha = 45e9, 1e-6

    def time_of(name):
        return netsim.simulate(netsim.load_scenario(ROOT / "scenarios" / f"{name}.yaml")).time

    s = 256 * 256 * 4
    assert time_of("allgather_ring8") == pytest.approx(7 * (alpha + s / (2 * B)), rel=1e-9)
    assert time_of("allgather_ring8_ring") == pytest.approx(7 * (alpha + s / B), rel=1e-9)
    assert time_of("allgather_ring8_halfway") == pytest.approx(4 * (alpha + s / B), rel=1e-9)
    assert time_of("allgather_ring8_latency_bound") == pytest.approx(7 * (alpha + 32 / B), rel=1e-9)
    assert time_of("psum_torus4x4_row") == pytest.approx(2 * 3 * (alpha + 2**20 / 4 / (2 * B)), rel=1e-9)
    strided, neighbours = time_of("allgather_ring4_strided"), time_of("allgather_ring4_neighbours")
    assert neighbours == pytest.approx(alpha + 2**20 / B, rel=1e-9)
    assert strided == pytest.approx(alpha + 2 * 2**20 / B, rel=1e-9)
    # multiaxis_bundled on 4x4x4, 48 KiB per device: sum(d_i - 1) alpha + (N - 1) s / (2 k B)
    assert time_of("allgather_tpu_v4_4x4x4_bundled") == pytest.approx(9 * alpha + 63 * 48 * 1024 / (6 * B), rel=1e-9)


def test_docs_scenario_output_is_the_docs_output():
    result = netsim.simulate(netsim.load_scenario(ROOT / "scenarios" / "psum_scatter_docs_groups.yaml"))
    np.testing.assert_array_equal(result.output, [[8, 10], [20, 22], [12, 14], [16, 18]])


def test_same_scenario_same_numbers():
    path = ROOT / "scenarios" / "psum_torus4x4_row.yaml"
    first, second = (netsim.simulate(netsim.load_scenario(path)) for _ in range(2))
    assert first.time == second.time
    np.testing.assert_array_equal(first.output, second.output)


def test_console_script_runs_in_a_real_process():
    done = subprocess.run(
        [sys.executable, "-m", "netsim", "run", str(ROOT / "scenarios" / "allgather_ring8.yaml"), "--json"],
        capture_output=True,
        text=True,
        check=False,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["collective"] == "all_gather"


def test_new_collective_scenarios_match_closed_forms():
    """all_to_all, ppermute and the recursive algorithms, against the formulas in each file's comment."""
    B, alpha = 45e9, 1e-6

    def time_of(name):
        return netsim.simulate(netsim.load_scenario(ROOT / "scenarios" / f"{name}.yaml")).time

    c = 16384 * 4  # all_to_all chunk, bytes
    V = 8 * 8 * c  # bytes over all devices of the ring of 8
    assert time_of("alltoall_ring8") == pytest.approx(V / (4 * 2 * B) + alpha, rel=1e-9)
    V = 16 * 16 * c
    book = V * 4 / (4 * 16 * 2 * B)
    torus = time_of("alltoall_torus4x4")
    assert book == pytest.approx(8 * c / B, rel=1e-12)
    assert book + 2 * alpha < torus < 1.4 * book  # see the scenario's comment: idle axis-1 links
    s = 2**20
    assert time_of("ppermute_ring8_shift") == pytest.approx(alpha + s / B, rel=1e-9)
    assert time_of("psum_rabenseifner_2x2x2") == pytest.approx(2 * 3 * alpha + 2 * (7 / 8) * s / B, rel=1e-9)
    assert time_of("allgather_ring8_recursive_doubling") == pytest.approx(4 * alpha + 19 * s / B, rel=1e-9)


def test_multipath_corner_scenario_is_the_books_half_right_half_down():
    # The scaling book's TPU chapter, Question 5: bf16[8, 128, 8192] from (0,0) to (3,3) of a v5e
    # 4x4 (no wraparound): half right then down, half down then right, so 6 hops plus s/(2B).
    B, alpha, s = 45e9, 1e-6, 2 * 8 * 128 * 8192
    path = ROOT / "scenarios" / "ppermute_multipath_corner.yaml"
    result = runner.invoke(app, ["run", str(path), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["algorithm"] == "multipath" and data["verified"] is True
    assert data["time_s"] == pytest.approx(6 * alpha + s / (2 * B), rel=1e-12)  # 192.414 us
    assert data["estimate_kind"] == "exact" and data["estimate_s"] == pytest.approx(data["time_s"], rel=1e-9)
    # the same file with the default algorithm (direct) sends it all down one route: s/B + 6 hops
    scenario = netsim.load_scenario(path, build_topology=False)
    direct = netsim.simulate(netsim.load_scenario(path).model_copy(update={"algorithm": None, "data": "none"}))
    assert direct.algorithm == "direct" and direct.time == pytest.approx(6 * alpha + s / B, rel=1e-12)
    # estimated without simulating, from the file alone
    mine, _ = netsim.analysis.why.estimate_scenario(scenario)
    assert mine.estimate.kind == "exact" and mine.estimate.time_s == pytest.approx(6 * alpha + s / (2 * B), rel=1e-12)


def test_tpu7x_core_pairs_scenario_is_one_on_chip_hop():
    # each device of a TPU7x chip sends its 256 KiB to the other over the on-chip link (assumed
    # 90 GB/s, 1 us), every chip at once: alpha + s/B
    result = netsim.simulate(netsim.load_scenario(ROOT / "scenarios" / "allgather_tpu7x_2x2x1_cores.yaml"))
    assert [list(g) for g in result.groups] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert result.time == pytest.approx(1e-6 + 256 * 256 * 4 / 90e9, rel=1e-12)
