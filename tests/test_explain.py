"""explain: the step-by-step text, its step count and its totals against the simulation and the closed forms."""

from __future__ import annotations

import re

import numpy as np
import pytest
from conftest import ROOT
from typer.testing import CliRunner

import netsim
from netsim.analysis.why import analyse
from netsim.cli.main import app
from netsim.teaching.explain import explain
from netsim.teaching.steps import step_captions, step_costs

runner = CliRunner()
B, ALPHA = 45e9, 1e-6


def _scenario(name):
    return ROOT / "scenarios" / f"{name}.yaml"


def _seconds(text, label):
    match = re.search(label + r".*?\(([0-9.e+-]+) s\)", text, flags=re.S)  # (a line may wrap before its number)
    assert match, f"no {label!r} line in:\n{text}"
    return float(match.group(1))


@pytest.mark.parametrize(
    ("name", "steps", "closed_form"),
    [
        ("allgather_ring8", 7, lambda s: 7 * (ALPHA + s / (2 * B))),
        ("allgather_ring8_ring", 7, lambda s: 7 * (ALPHA + s / B)),
        ("allgather_ring8_halfway", 4, lambda s: 4 * (ALPHA + s / B)),
    ],
)
def test_explain_ring8_prints_every_step_and_a_total_equal_to_the_simulated_time(name, steps, closed_form):
    result = runner.invoke(app, ["explain", str(_scenario(name))])
    assert result.exit_code == 0, result.output
    text = result.output
    headers = re.findall(r"^Step (\d+)/(\d+)", text, flags=re.M)
    assert [int(k) for k, _ in headers] == list(range(1, steps + 1))
    assert {int(n) for _, n in headers} == {steps}
    simulated = netsim.simulate(netsim.load_scenario(_scenario(name))).time
    s = 256 * 256 * 4
    assert simulated == pytest.approx(closed_form(s), rel=1e-9)
    assert _seconds(text, "simulated time") == pytest.approx(simulated, rel=1e-12)
    assert _seconds(text, "α–β model, sum of the") == pytest.approx(simulated, rel=1e-9)
    assert _seconds(text, "closed form for") == pytest.approx(closed_form(s), rel=1e-9)
    assert "The simulation takes" not in text  # no difference to explain on a contention-free ring


def test_explain_names_who_sends_what_and_what_everyone_holds():
    x = np.arange(4)
    text = explain(netsim.all_gather(x, algorithm="ring"))
    step1 = text.split("Step 1/3")[1].split("Step 2/3")[0]
    for src in range(4):
        assert re.search(rf"^\s+{src} → {(src + 1) % 4}\s+block {src} \(device {src}'s data\)", step1, flags=re.M)
    # after the last step, every device holds one block from each device, in order
    last = text.split("Step 3/3")[1].split("Total")[0]
    for device in range(4):
        assert re.search(rf"device {device}\s+0 1 2 3\s*$", last, flags=re.M)


def test_explain_says_why_the_simulation_beats_the_alpha_beta_model_under_contention():
    result = netsim.simulate(netsim.load_scenario(_scenario("allgather_ring4_strided")))
    text = explain(result)
    s = 1 << 20
    # two 2-hop blocks share each link: the model charges 2 alpha + 2s/B, cut-through gives alpha + 2s/B
    assert _seconds(text, "α–β model") == pytest.approx(2 * ALPHA + 2 * s / B, rel=1e-9)
    assert result.time == pytest.approx(ALPHA + 2 * s / B, rel=1e-9)
    assert "messages cross several links cut-through" in text
    assert "queue behind each other" in text
    assert "lower bound for ring on a ring of 2: ≥ a chain of dependent transfers" in text
    assert "(a lower bound: this algorithm has no exact closed form on this layout; the simulated time is at least this)" in text


@pytest.mark.parametrize(
    "name", ["allgather_torus4x4_multiaxis", "alltoall_torus4x4_dimension_ordered", "psum_rabenseifner_2x2x2", "allgather_tpu_v5e_8x4_line"]
)
def test_explain_prints_the_closed_form_that_run_prints(name):
    # one registry: explain, run and estimate read the same closed form
    result = netsim.simulate(netsim.load_scenario(_scenario(name)))
    e = analyse(result).estimate
    assert f": {e.formula}: " in explain(result) and "no closed form is registered" not in explain(result)


def test_step_costs_add_up_to_the_simulated_time_on_a_row_psum():
    result = netsim.simulate(netsim.load_scenario(_scenario("psum_torus4x4_row")))
    costs = step_costs(result)
    assert len(costs) == 6
    assert sum(c.model_s for c in costs) == pytest.approx(result.time, rel=1e-9)
    assert costs[-1].finished_s == pytest.approx(result.time, rel=1e-12)


def test_captions_describe_reduce_scatter_and_all_gather_phases():
    captions = step_captions(netsim.psum(np.ones((4, 8)), algorithm="ring"))
    assert captions[0] == "step 1/6, reduce-scatter phase: every device sends its own share of one block to its right neighbour, which adds it to its own copy"
    assert captions[1].startswith("step 2/6, reduce-scatter phase: every device passes on its partial sum")
    assert captions[3] == "step 4/6, all-gather phase: every device sends its fully summed block to its right neighbour"
    assert captions[4] == "step 5/6, all-gather phase: every device forwards the block it received last step to its right neighbour"


def test_explain_rejects_a_bad_leaf_and_cli_reports_bad_files():
    with pytest.raises(ValueError, match=r"leaf=3 is out of range: this result has 1 leaf run\(s\)"):
        explain(netsim.all_gather(np.arange(4)), leaf=3)
    result = runner.invoke(app, ["explain", "no/such/file.yaml"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == ["error: no/such/file.yaml: no such file"]
