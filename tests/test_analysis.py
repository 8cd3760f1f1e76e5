"""Estimates beside every simulated time: in the Result, the CLI table and --json, and why they differ."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import ROOT
from typer.testing import CliRunner

import netsim
from netsim.algorithms.registry import ALGORITHMS
from netsim.analysis.closed_forms import Estimate
from netsim.analysis.stats import run_stats
from netsim.analysis.summary import summary
from netsim.analysis.why import analyse, explain
from netsim.cli.main import app
from netsim.cli.report import summary_rows, to_json
from netsim.network.topology import mesh, ring

SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
CONTENTION_FREE = {
    "allgather_ring4_neighbours",
    "allgather_ring8",
    "allgather_ring8_bandwidth_bound",
    "allgather_ring8_halfway",
    "allgather_ring8_latency_bound",
    "allgather_ring8_ring",
    "allgather_torus8x4_wrapped",
    "allgather_tpu_v4_book_example",
    "allgather_tpu_v4_4x4x4_bundled",  # parts on different axes at every stage: no link is shared
    "psum_torus4x4_row",
}
runner = CliRunner()


@pytest.fixture(scope="module")
def scenario_runs(bundled_runs):
    return bundled_runs


def test_contention_free_rings_are_recognised_from_the_run(scenario_runs):
    # A run is a contention-free ring when every transfer crosses one link and no message ever waited.
    free = {name for name, r in scenario_runs.items() if run_stats(r).max_route_hops == 1 and all(u.wait_s == 0 for u in run_stats(r).links)}
    assert free == CONTENTION_FREE


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_every_bundled_scenario_reports_estimate_ratio_and_regime(path, scenario_runs):
    # tests/test_scenarios.py checks that `netsim run` prints these rows for every bundled scenario.
    result = scenario_runs[path.stem]
    rows = dict(summary_rows(result))
    labels = ["estimate (closed form)", "formula", "simulated / estimate", "regime", "book estimate", "memory per device", "bandwidth bound"]
    for label in labels:
        assert rows[label]
    data = json.loads(to_json(result))  # what `netsim run --json` prints
    assert data["estimate_s"] == pytest.approx(analyse(result).estimate.time_s, rel=1e-12)
    assert data["ratio"] == pytest.approx(data["time_s"] / data["estimate_s"], rel=1e-12)
    assert data["regime"] in ("latency-bound", "bandwidth-bound") and rows["regime"].startswith(data["regime"])
    assert data["latency_term_s"] + data["bandwidth_term_s"] == pytest.approx(data["estimate_s"], rel=1e-12)
    assert data["crossover_bytes_per_device"] > 0
    assert len(data["links"]) == len(result.topology_obj.links)  # all of them in JSON
    assert len(data["devices"]) == result.n_devices
    if path.stem in CONTENTION_FREE:
        assert rows["simulated / estimate"] == "1.000000"
        assert data["why"] is None and "why" not in rows
    elif abs(data["ratio"] - 1) > 0.01:
        assert rows["why"] == data["why"]
    else:  # exact even with shared links (e.g. Rabenseifner on neighbours, halves queued back to back)
        assert data["why"] is None


def test_the_cli_table_prints_the_estimate_beside_the_time():
    table = runner.invoke(app, ["run", str(ROOT / "scenarios" / "allgather_ring8_halfway.yaml")])
    assert table.exit_code == 0, table.output
    lines = [" ".join(line.replace("│", " ").split()) for line in table.output.splitlines()]
    assert "simulated time 27.3017 us" in lines
    assert "estimate (closed form) 27.3017 us = latency 4 us + bandwidth 23.3017 us" in lines
    assert "simulated / estimate 1.000000" in lines


def test_regime_and_crossover_of_the_bundled_latency_and_bandwidth_scenarios(scenario_runs):
    alpha, B = 1e-6, 45e9
    small, large = analyse(scenario_runs["allgather_ring8_latency_bound"]), analyse(scenario_runs["allgather_ring8_bandwidth_bound"])
    assert small.regime == "latency-bound" and large.regime == "bandwidth-bound"
    assert small.crossover_bytes == pytest.approx(2 * alpha * B, rel=1e-12)  # halves of a block each way: alpha = (s/2)/B
    assert small.estimate.latency_s == pytest.approx(7 * alpha, rel=1e-12)
    assert large.estimate.bandwidth_s == pytest.approx(7 * 8 * 2**20 / (2 * B), rel=1e-12)


def test_the_why_parts_account_for_the_whole_difference(scenario_runs):
    for result in scenario_runs.values():
        a, p = analyse(result), run_stats(result).critical_path
        parts = p.queueing_s + (p.latency_s - a.estimate.latency_s) + (p.transmission_s - a.estimate.bandwidth_s) + p.straggle_s
        assert result.time - a.estimate.time_s == pytest.approx(parts, rel=1e-9, abs=1e-15)


def test_strided_groups_name_contended_links_and_hops(scenario_runs):
    why = analyse(scenario_runs["allgather_ring4_strided"]).why
    assert why.startswith("1.959x the lower bound: contention: the critical path waited 22.3 us for busy links 1->2 (22.3 us, queue 1)")
    # The critical path is 1->2 twice: device 1's block for 3, then 0's block for 2, which waited for it (its 0->1 hop is off the path).
    assert [step.link_name for step in scenario_runs["allgather_ring4_strided"].critical_path.steps] == ["1->2", "1->2"]
    assert "4 of 4 transfers cross more than one link (up to 2): group members are not neighbours" in why
    # 0's block was ready at 1->2 one latency (1 us) after the other block started there: that 1 us is transmission on the path.
    assert "transmission: 24.3 us on the critical path against the formula's 23.3 us; the path runs through the message it queued behind" in why


def test_docs_groups_are_latency_bound_and_explained_by_hops(scenario_runs):
    a = analyse(scenario_runs["psum_scatter_docs_groups"])
    assert a.regime == "latency-bound"
    assert a.why.startswith("2.000x the lower bound: latency: the critical path crosses 2 links (2 us) where the formula counts 1·α (1 us)")
    assert a.why.endswith("4 of 4 transfers cross more than one link (up to 2): group members are not neighbours")
    assert "contention" not in a.why


def test_missing_wraparound_is_named():
    result = netsim.all_gather(np.zeros((4, 2**16), np.float32), topology=mesh((4,)), algorithm="bidirectional_ring")
    a = analyse(result)
    assert a.closed.geometry.describe() == "line of 4" and a.estimate.kind == "lower_bound"
    assert "the group's line of 4 has no wraparound, so the ring closes the long way back (routes of up to 3 hops)" in a.why


def test_the_unidirectional_ring_on_a_line_is_exact():
    # The closing transfer goes back 3 hops on links the forward ring does not use: latency only.
    result = netsim.all_gather(np.zeros((4, 2**16), np.float32), topology=mesh((4,)), algorithm="ring")
    a = analyse(result)
    assert a.estimate.kind == "exact" and a.why == ""
    assert result.time == pytest.approx(5e-6 + 3 * 2**18 / 45e9, rel=1e-12)  # (2n−3)·α + (n−1)·s/B


def test_store_and_forward_is_named():
    result = netsim.all_gather(np.zeros((8, 2**14), np.float32), axis_index_groups=[[0, 2, 4, 6], [1, 3, 5, 7]], algorithm="ring", cut_through=False)
    assert "store-and-forward sends each message whole on every hop" in analyse(result).why


def test_uneven_chunks_set_the_pace_with_their_largest_piece():
    # 3 elements per block do not split in two halves: one half carries 8 bytes, the other 4.
    result = netsim.all_gather(np.zeros((2, 3), np.float32), topology=ring(2).with_links(latency_s=0.0))
    a = analyse(result)
    assert a.estimate.kind == "exact" and a.estimate.time_s == pytest.approx(8 / 45e9, rel=1e-12)
    # On a line the halves follow each other: the form with even halves is then a lower bound.
    t = mesh((4,)).with_links(latency_s=1e-9)
    line = netsim.all_gather(np.zeros((4, 3), np.float32), topology=t, axis_index_groups=netsim.Mesh({"x": 4}, t).groups("x"))
    assert analyse(line).estimate.kind == "lower_bound" and line.time > analyse(line).estimate.time_s


def test_a_formula_that_overcounts_transmission_is_called_pipelining():
    result = netsim.all_gather(np.zeros((4, 2**14), np.float32), algorithm="ring")
    a = analyse(result)
    doubled = Estimate("test", "-", a.estimate.latency_s, 2 * a.estimate.bandwidth_s, a.estimate.latency_s + 2 * a.estimate.bandwidth_s, 0.0)
    why = explain(result.time, doubled, run_stats(result), a.closed, a.latency_s)
    assert result.time < doubled.time_s
    assert why.startswith(f"{result.time / doubled.time_s:.3f}x the estimate: pipelining: the critical path transmits for")


def test_an_algorithm_without_closed_form_gets_a_lower_bound():
    ALGORITHMS["test_no_formula"] = ALGORITHMS["ring"]
    try:
        result = netsim.all_gather(np.zeros((4, 16), np.float32), algorithm="test_no_formula")
        a = analyse(result)
        assert a.estimate.kind == "lower_bound" and a.closed.note == ""
        assert a.estimate.formula == "≥ α + R/(L·B), R = (n−1)·input, L = 2 links into a member"
        assert result.time >= a.estimate.time_s
        rows = dict(summary_rows(result))
        assert rows["estimate kind"] == "lower_bound: the simulated time is at least this"
        assert summary(result)["estimate_kind"] == "lower_bound"
        assert a.book is not None  # the book still has its estimate
    finally:
        del ALGORITHMS["test_no_formula"]


def test_pytree_leaves_add_their_estimates():
    x = np.zeros((8, 2**12), np.float32)
    one = netsim.all_gather(x, algorithm="ring")
    both = netsim.all_gather({"a": x, "b": x}, algorithm="ring")
    assert analyse(both).estimate.time_s == pytest.approx(2 * analyse(one).estimate.time_s, rel=1e-12)
    assert f"{analyse(both).ratio:.6f}" == "1.000000"
    assert analyse(both).crossover_bytes == pytest.approx(analyse(one).crossover_bytes * 2, rel=1e-12)  # both leaves grow together


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_estimate_command_agrees_with_the_run(path, scenario_runs):
    out = runner.invoke(app, ["estimate", str(path), "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    run = analyse(scenario_runs[path.stem])
    assert data["estimate_s"] == pytest.approx(run.estimate.time_s, rel=1e-12)
    assert data["regime"] == run.regime
    assert data["book_estimate_s"] == pytest.approx(run.book.time_s, rel=1e-12)
    assert scenario_runs[path.stem].algorithm in [a["algorithm"] for a in data["algorithms"]]
    table = runner.invoke(app, ["estimate", str(path)])
    words = " ".join(table.output.split())
    assert table.exit_code == 0 and "nothing simulated" in words and "every algorithm" in words


def test_estimate_command_reports_bad_files_in_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\ntopology: ring8\ncollective: {op: all_gather}\ninput: {bytes_per_device: 0 B}\n", encoding="utf-8")
    out = runner.invoke(app, ["estimate", str(bad)])
    assert out.exit_code == 2
    assert out.output.strip().count("\n") == 0
    assert f"{bad}: input.bytes_per_device:" in out.output


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_every_bundled_scenario_keeps_its_estimate_kinds_promise(path, scenario_runs):
    result = scenario_runs[path.stem]
    data = json.loads(to_json(result))
    rows = dict(summary_rows(result))
    assert rows["estimate kind"].split(":")[0] == data["estimate_kind"]
    if data["estimate_kind"] == "exact":
        assert rows["simulated / estimate"] == "1.000000" and data["why"] is None
    elif data["estimate_kind"] == "lower_bound":
        assert data["time_s"] >= data["estimate_s"] * (1 - 1e-12)
        assert rows["estimate kind"] == "lower_bound: the simulated time is at least this"
    else:  # failed or slowed links, or links of other speeds: the nominal form promises nothing, and the why-line says what happened
        assert result.faults or "links of other speeds" in data["why"]
        assert data["why"]
    assert data["bound_s"] is None or data["time_s"] >= data["bound_s"] * (1 - 1e-12)  # the bandwidth bound holds


def test_crossed_links_reads_each_distinct_link_once_not_each_hop(monkeypatch):
    """The speeds of a run's links are looked up once per link crossed, not once per hop (2.1 M on a ring of 1024)."""
    from netsim.analysis.mixed_links import crossed_links

    r = netsim.all_gather(np.zeros((16, 64), np.float32), algorithm="ring", topology=netsim.ring(16).degrade_link(3, 4, bandwidth_factor=0.5))
    hops = sum(len(route) for route in r.leaves[0].playback.routes)
    calls = []
    topology = r.topology_obj
    real = type(topology).link
    monkeypatch.setattr(type(topology), "link", lambda self, link: calls.append(link) or real(self, link))
    assert crossed_links(r) == {(1e-6, 45e9), (1e-6, 22.5e9)}
    assert len(calls) == len(set(calls)) == 16 < hops
