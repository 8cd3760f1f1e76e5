"""Attacks on the up-front memory estimate: it must bound what a run really takes (measured with
tracemalloc) for every collective and algorithm, with data and timing-only, and refuse what cannot fit.

Measured peaks on a grid of small sizes (rings of 4 and 8, 64 KiB and 1 MiB per device, float32);
the estimate must be at least the peak everywhere, and within 1.5x of it where the data dominate
(peaks over 8 MiB) for every collective: psum_scatter's partial sums are counted per algorithm
(what a ring, recursive halving and direct keep of the sums they make), and its check's temporaries
a slice of its output at a time.
"""

from __future__ import annotations

import gc
import tracemalloc
import warnings

import pytest
from typer.testing import CliRunner

from netsim.checks.memory import BYTES_PER_HOP, BYTES_PER_TRANSFER, estimate_memory, mean_hops
from netsim.cli.main import app
from netsim.collectives import simulate
from netsim.scenario import scenario_from_data
from netsim.scenario.loading import memory_estimate

runner = CliRunner()

ALGORITHMS = {
    "all_gather": ["ring", "bidirectional_ring", "bidirectional_halfway", "recursive_doubling", "direct"],
    "psum_scatter": ["ring", "bidirectional_ring", "recursive_halving", "direct"],
    "psum": ["ring", "bidirectional_ring", "rabenseifner", "direct"],
    "all_to_all": ["direct"],
    "ppermute": [None],
}
CASES = [(op, algorithm) for op, algorithms in ALGORITHMS.items() for algorithm in algorithms]


def _scenario(op: str, algorithm: str | None, n: int, per_device: int, data: str):
    collective = {"op": op}
    if op == "ppermute":
        collective["perm"] = [[i, (i + 1) % n] for i in range(n)]
    data_map = {
        "name": "m",
        "topology": {"kind": "ring", "dims": [n]},
        "collective": collective,
        "input": {"bytes_per_device": per_device, "dtype": "float32"},
        "data": data,
    }
    if algorithm is not None:
        data_map["algorithm"] = algorithm
    return scenario_from_data(data_map, "m")


def _peak(scenario) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        simulate(scenario)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module", autouse=True)
def _warm():
    warnings.simplefilter("ignore", RuntimeWarning)
    simulate(_scenario("psum", "ring", 4, 1024, "values"))  # imports and caches: not part of any run's peak


@pytest.mark.parametrize("op, algorithm", CASES)
def test_the_estimate_bounds_the_measured_peak(op, algorithm):
    for n, per_device in ((4, 64 * 1024), (8, 1024 * 1024)):
        for data in ("values", "none"):
            scenario = _scenario(op, algorithm, n, per_device * n // 4, data)
            estimate, peak = memory_estimate(scenario).total, _peak(scenario)
            assert estimate >= peak, f"{op} {algorithm} n={n} {data}: estimate {estimate} below the peak {peak}"
            if peak > 8 * 2**20:
                assert estimate <= 1.5 * peak, f"{op} {algorithm} n={n} {data}: estimate {estimate} is {estimate / peak:.2f}x the peak {peak}"


def test_multi_hop_schedules_grow_with_their_hops():
    # all_to_all on a ring of 512: 512 x 511 transfers of 128 hops on average (n^3), not n^2
    estimate = estimate_memory("all_to_all", 512, 512, 512, pieces=1, data="none", hops=mean_hops("direct", (512,), (True,)))
    assert estimate.schedule >= 512 * 511 * (BYTES_PER_TRANSFER + 128 * BYTES_PER_HOP)


def test_a_timing_only_run_is_checked_and_advised_differently(tmp_path):
    path = tmp_path / "pod.yaml"
    path.write_text(
        "name: pod\ntopology: {kind: ring, dims: [16384]}\ncollective: {op: all_to_all}\ninput: {bytes_per_device: 1 TiB, dtype: int8}\ndata: none\n",
        encoding="utf-8",
    )
    out = runner.invoke(app, ["run", str(path)])
    assert out.exit_code == 2
    line = out.output.strip()
    assert line.startswith(f"error: {path}: input: this run needs about ")
    assert line.endswith("is available; use fewer devices, or an algorithm with fewer steps")
    assert "data: none" not in line


@pytest.mark.parametrize(
    ("data", "advice"),
    [
        ("values", "run it timing-only with `data: none`, or use fewer devices or a smaller input"),
        ("none", "use fewer devices, or an algorithm with fewer steps"),
    ],
)
def test_running_out_of_memory_advises_what_the_scenario_does_not_already_do(tmp_path, monkeypatch, data, advice):
    import sys

    collectives = sys.modules["netsim.collectives"]

    def out_of_memory(loaded):
        raise MemoryError("Unable to allocate 96.0 GiB")

    monkeypatch.setattr(collectives, "simulate", out_of_memory)  # the run command imports it when it runs
    path = tmp_path / "ring.yaml"
    path.write_text(f"name: ring\ntopology: ring8\ncollective: {{op: all_gather}}\ninput: {{shape: [8, 4], dtype: float32}}\ndata: {data}\n")
    run = CliRunner().invoke(app, ["run", str(path)])
    assert run.exit_code == 2
    assert run.output.strip() == f"error: {path}: ran out of memory (Unable to allocate 96.0 GiB); {advice}"
