"""Calibration: a fixed cost per collective and a link efficiency, each a term of its own; nominal is the ideal model bit for bit."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

import netsim
from netsim.analysis.op_estimates import op_estimate
from netsim.analysis.program_stats import program_stats
from netsim.analysis.why import analyse
from netsim.cli.main import app
from netsim.cli.terms import calibration_rows
from netsim.network.calibration import CALIBRATIONS, NOMINAL, Calibration, calibrate, in_force, offered
from netsim.network.presets import tpu_slice
from netsim.network.topology import mesh, ring, torus
from netsim.network.units import format_seconds
from netsim.programs.files import load_program, program_as_data
from netsim.programs.model import Op, Program, Sharded
from netsim.scenario import load_scenario
from netsim.studies.sweep import sweep

ALPHA, B = 1e-6, 45e9
TERMS = Calibration(0.8, 5e-6, source="a test")
"""Round numbers far from nominal, so a term applied twice or not at all shows."""


def _gather(topology, n, per_device, **kwargs):
    return netsim.all_gather(np.zeros((n, per_device), np.uint8), topology=topology, data="none", **kwargs)


def test_a_preset_offers_its_terms_and_runs_nominal_unless_asked():
    v5e = tpu_slice("tpu-v5e:8x4")
    assert in_force(v5e) == NOMINAL and in_force(calibrate(v5e)) == CALIBRATIONS["tpu-v5e"]
    assert in_force(calibrate(ring(4))) == NOMINAL  # nothing offered: calibrated is nominal
    assert in_force(calibrate(calibrate(v5e), "nominal")) == NOMINAL
    # a generation with no terms at all (v3: no Multislice, no measurement) says so when asked for calibrated times
    [(label, text)] = calibration_rows(calibrate(tpu_slice("tpu-v3:4x4")))
    assert label == "calibration" and text == "calibrated, but tpu-v3:4x4 offers no measured terms: the ideal model (docs/validation.md)"
    assert calibration_rows(v5e) == [] and calibration_rows(calibrate(v5e))[0][1].startswith("calibrated (measured): links at 0.95 of their bandwidth")


def test_nominal_is_the_ideal_model_bit_for_bit():
    # the scaling book's Pop Quiz 2 line: 3·s/B + α, exactly as before calibration existed
    shard = 512 * 8192 * 2
    for topology in (tpu_slice("tpu-v5e:8x4"), calibrate(tpu_slice("tpu-v5e:8x4"), "nominal")):
        r = netsim.all_gather(
            np.zeros((32, shard // 2), np.float16), axis_index_groups=netsim.Mesh({"X": 8, "Y": 4}, topology).groups("Y"), topology=topology, data="none"
        )
        assert r.time == 3 * shard / B + ALPHA


@pytest.mark.parametrize(
    ("name", "topology", "n", "kwargs", "form"),
    [
        # a ring: (n−1)·(α + s/(2·e·B)) + F
        ("ring", ring(8), 8, {"algorithm": "bidirectional_ring"}, lambda s, e, f: 7 * (ALPHA + s / (2 * e * B)) + f),
        # the book's half-way scheme on a ring of 5: ⌊n/2⌋·(α + s/(e·B)) + F
        ("halfway", ring(5), 5, {"algorithm": "bidirectional_halfway"}, lambda s, e, f: 2 * (ALPHA + s / (e * B)) + f),
        # a line of 4 (the ring closes the long way back): (2n−3)·α + (n−1)·s/(e·B) + F
        ("line", mesh((4,)), 4, {"algorithm": "ring"}, lambda s, e, f: 5 * ALPHA + 3 * s / (e * B) + f),
    ],
)
@pytest.mark.parametrize("per_device", [4096, 1 << 20])
def test_closed_forms_stay_exact_calibrated_and_nominal(name, topology, n, kwargs, form, per_device):
    for terms in (NOMINAL, TERMS):
        run = _gather(calibrate(topology, values=terms), n, per_device, **kwargs)
        estimate = analyse(run).estimate
        assert estimate.kind == "exact", name
        assert estimate.fixed_s == terms.collective_overhead_s  # its own term, beside latency and bandwidth
        assert run.time == pytest.approx(estimate.time_s, rel=1e-9) and run.time == pytest.approx(
            form(per_device, terms.link_efficiency, terms.collective_overhead_s), rel=1e-9
        )


def test_a_torus_is_exact_under_both_settings():
    # a 4x4 torus of equal axes, both planned as rings, bundles sent a ring step at a time: exact
    times = []
    for terms in (NOMINAL, TERMS):
        topology = calibrate(torus((4, 4), (True, True)), values=terms)
        groups = netsim.Mesh({"x": 4, "y": 4}, topology).groups(["x", "y"])
        run = netsim.all_gather(np.zeros((16, 4096), np.uint8), axis_index_groups=groups, topology=topology, data="none", algorithm="multiaxis_bundled")
        estimate = analyse(run).estimate
        assert estimate.kind == "exact" and run.time == pytest.approx(estimate.time_s, rel=1e-9)
        assert estimate.fixed_s == terms.collective_overhead_s
        times.append((run.time, estimate))
    (_, e0), (calibrated, _) = times
    # every byte at 0.8 of the rate, the collective 5 us late: F + L + S/e
    assert calibrated == pytest.approx(TERMS.collective_overhead_s + e0.latency_s + e0.bandwidth_s / 0.8, rel=1e-9)


@pytest.mark.parametrize(("n", "algorithm"), [(3, "ring"), (5, "ring"), (3, "bidirectional_halfway"), (5, "bidirectional_halfway"), (5, "bidirectional_ring")])
def test_psum_of_a_payload_that_does_not_split_evenly_is_exact(n, algorithm):
    # 1 KiB of float32 on a ring of 3 is blocks of 86, 85 and 85 elements: the largest sets the pace
    run = netsim.psum(np.ones((n, 256), np.float32), algorithm=algorithm)
    estimate = analyse(run).estimate
    assert estimate.kind == "exact" and run.time == pytest.approx(estimate.time_s, rel=1e-9)


@pytest.mark.parametrize(("n", "items"), [(3, 256), (3, 1001), (4, 250), (5, 7), (8, 100003)])
def test_psum_on_a_line_with_uneven_blocks_is_a_bound_it_keeps(n, items):
    # the ring on a line closes the long way back; which block takes that chain depends on the layout,
    # so the form of the smallest piece is a lower bound (never above the run), not an exact form
    t = mesh((n,))
    run = netsim.psum(np.ones((n, items), np.float32), axis_index_groups=netsim.Mesh({"x": n}, t).groups("x"), topology=t, algorithm="ring", data="none")
    estimate = analyse(run).estimate
    assert estimate.kind == "lower_bound" and run.time >= estimate.time_s * (1 - 1e-12) and run.time <= estimate.time_s * 1.001


def test_a_program_pays_the_fixed_cost_as_a_launch_step_per_collective():
    loaded = load_program("scenarios/programs/allgather_matmul.yaml")
    nominal = netsim.run_program(loaded.program, loaded.topology_obj, data="none")
    assert nominal.time == loaded.expected.time_s  # the bundled program, unchanged
    late = netsim.run_program(loaded.program, calibrate(loaded.topology_obj, values=Calibration(1.0, 7e-6)), data="none")
    assert late.time == pytest.approx(nominal.time + 7e-6, rel=1e-12)  # its one collective launches 7 us late on every device
    launches = [c for c in late.program.lowered.schedule.computes if c.name == "gather launch"]
    assert len(launches) == 16 and {c.seconds for c in launches} == {7e-6}


def _work(efficiency=None):
    ops = (Op.of("w", "compute", ("A",), None, flops=1e12, **({} if efficiency is None else {"efficiency": efficiency})),)
    return Program("p", {"X": 16}, {"A": Sharded((16, 8), "float32", (("X",), ()))}, ops)


@pytest.mark.parametrize(("chip", "op", "used"), [(None, None, 1.0), (None, 0.5, 0.5), (0.8, None, 0.8), (0.8, 0.5, 0.5)])
def test_compute_efficiency_per_chip_and_per_op_and_the_roofline_says_which(chip, op, used):
    topology = tpu_slice("tpu-v5e:4x4")
    if chip is not None:
        topology = calibrate(topology, values=Calibration(compute_efficiency=chip))
    run = netsim.run_program(_work(op), topology, data="none")
    assert run.time == pytest.approx(1e12 / (1.97e14 * used), rel=1e-12)
    stats = program_stats(run)
    assert stats.ops[0].estimate_s == pytest.approx(run.time, rel=1e-12)
    facts = run.topology_obj.device(0)
    e = op_estimate(run.program.lowered.ops[0], run.program.lowered, run.topology_obj, facts["peak_flops"], facts["hbm_bandwidth_Bps"])
    assert stats.ops[0].bound == "compute"  # the roofline's formula says at which fraction of the peak it counted
    assert (f"x {used:.3g} (its compute efficiency)" in e.formula) == (used != 1.0)
    assert stats.devices_compute["compute_efficiency"] == (chip or 1.0)


def _gather_program(per_device_elements):
    arrays = {"A": Sharded((16, per_device_elements), "bfloat16", (("X",), ()))}
    ops = (Op.of("g", "all_gather", ("A",), "A_full", axes=("X",), axis=0, tiled=True),)
    return Program("big", {"X": 16}, arrays, ops)


def test_hbm_capacity_flags_an_oversized_program_and_not_a_fitting_one(tmp_path):
    # each device holds its shard, then the gathered copy: 17 x 2.15 GB = 34 GiB on a 16 GiB v5e chip
    big = program_stats(netsim.run_program(_gather_program(1_075_000_000), "tpu-v5e:4x4", data="none"))
    assert big.memory["peak_bytes"] == 17 * 1_075_000_000 * 2 and big.memory["fits"] is False
    assert big.memory["note"] == "does not fit: 34 GiB on a 16 GiB chip" and big.memory["peak_at"] == "g"
    small = program_stats(netsim.run_program("scenarios/programs/allgather_matmul.yaml"))
    assert small.memory["fits"] is True and small.memory["capacity_bytes"] == 16 * 2**30
    # --require-fit turns the flag into an error (exit 2), so a sweep can skip such points
    data = program_as_data(_gather_program(1_075_000_000), "tpu-v5e:4x4", data="none")
    (tmp_path / "big.yaml").write_text(yaml.safe_dump(data))
    runner = CliRunner()
    flagged = runner.invoke(app, ["program", str(tmp_path / "big.yaml"), "--json"])
    assert flagged.exit_code == 0 and json.loads(flagged.output)["memory"]["fits"] is False
    refused = runner.invoke(app, ["program", str(tmp_path / "big.yaml"), "--require-fit"])
    assert refused.exit_code == 2 and "does not fit: 34 GiB on a 16 GiB chip (--require-fit)" in refused.output
    fits = runner.invoke(app, ["program", "scenarios/programs/allgather_matmul.yaml", "--require-fit", "--json"])
    assert fits.exit_code == 0, fits.output


def test_a_sweep_over_calibration():
    base = {
        "topology": "tpu-v5e:8x4",
        "mesh": {"X": 8, "Y": 4},
        "collective": {"op": "all_gather", "axes": "Y"},
        "input": {"shape": [64, 256], "dtype": "bfloat16"},
    }
    table = sweep({"name": "calibration", "base": base, "grid": {"calibration": ["nominal", "calibrated"]}}, workers=1)
    nominal, calibrated = table["time_s"].tolist()
    shard, terms = 64 * 256 * 2, CALIBRATIONS["tpu-v5e"]
    assert nominal == pytest.approx(3 * ALPHA + 4 * shard / (2 * B), rel=1e-12)  # the book's 32 kB shards: 4.46 us
    assert calibrated == pytest.approx(terms.collective_overhead_s + 3 * ALPHA + 4 * shard / (2 * B * terms.link_efficiency), rel=1e-12)


def test_the_command_line_flag_and_the_scenario_field_agree(tmp_path):
    path = "scenarios/validation/v5e_8x4_line_allgather_32KiB.yaml"
    runner = CliRunner()
    times = {}
    for mode in ("nominal", "calibrated"):
        out = runner.invoke(app, ["run", path, "--calibration", mode, "--json"])
        assert out.exit_code == 0, out.output
        times[mode] = json.loads(out.output)["time_s"]
    assert times["calibrated"] == netsim.simulate(load_scenario(path)).time  # the file says calibrated
    assert times["nominal"] == netsim.simulate(load_scenario(path).with_calibration("nominal")).time
    bad = runner.invoke(app, ["run", path, "--calibration", "measured"])
    assert bad.exit_code == 2 and "--calibration 'measured': use nominal or calibrated" in bad.output
    data = yaml.safe_load(Path(path).read_text())
    data["calibration"] = "exact"
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(data))
    wrong = runner.invoke(app, ["run", str(tmp_path / "s.yaml")])
    assert wrong.exit_code == 2 and "calibration" in wrong.output


def test_a_topology_file_offers_its_own_terms(tmp_path):
    (tmp_path / "t.yaml").write_text("kind: ring\ndims: [4]\ncalibration: {link_efficiency: 0.5, collective_overhead: 2 us, source: a test}\n")
    scenario = {
        "topology": str(tmp_path / "t.yaml"),
        "collective": {"op": "all_gather"},
        "input": {"bytes_per_device": "45 kB", "dtype": "int8"},
        "algorithm": "ring",
    }
    for mode, expected in (("nominal", 3 * (ALPHA + 45e3 / B)), ("calibrated", 2e-6 + 3 * (ALPHA + 45e3 / (0.5 * B)))):
        (tmp_path / "s.yaml").write_text(yaml.safe_dump({"name": "s", **scenario, "calibration": mode}))
        loaded = load_scenario(tmp_path / "s.yaml")
        assert netsim.simulate(loaded).time == pytest.approx(expected, rel=1e-12)
        from netsim.analysis.why import estimate_scenario

        assert estimate_scenario(loaded)[0].estimate.time_s == pytest.approx(expected, rel=1e-12)  # netsim estimate, no graph


def test_bundled_tpu_topology_files_offer_the_presets_terms():
    for name in ("tpu7x-2x2x1", "tpu7x-4x4x4", "tpu-v5e-8x4", "tpu-v5e-8x16", "tpu-v5e-16x16"):
        generation, shape = name.rsplit("-", 1)
        from_file, preset = offered(netsim.load_topology(name)), offered(tpu_slice(f"{generation}:{shape}"))
        assert (from_file.link_efficiency, from_file.collective_overhead_s, from_file.compute_efficiency) == (
            preset.link_efficiency,
            preset.collective_overhead_s,
            preset.compute_efficiency,
        ), name
        assert set(from_file.derived_from) == set(preset.derived_from), name


def test_a_program_sweep_skips_points_that_do_not_fit(tmp_path):
    # require_fit in the base: the point that does not fit is a row with an error, the others run
    base = program_as_data(_gather_program(1000), "tpu-v5e:4x4", data="none")
    base["arrays"]["A"]["shape"] = [16, "N"]
    table = sweep({"name": "fit", "base": {**base, "params": {"N": 1000}, "require_fit": True}, "grid": {"params.N": [1000, 1_075_000_000]}}, workers=1)
    small, big = table.to_dict("records")
    assert not isinstance(small["error"], str) or small["error"] == ""
    assert big["error"] == "require_fit: does not fit: 34 GiB on a 16 GiB chip"


def test_explain_of_a_calibrated_run_uses_the_effective_rate_and_the_fixed_cost():
    from netsim.teaching.explain import explain
    from netsim.teaching.steps import step_costs

    scenario = netsim.load_scenario("scenarios/validation/v5e_8x4_line_allgather_32KiB.yaml")  # calibration: calibrated
    result = netsim.simulate(scenario)
    terms = in_force(result.topology_obj)
    assert (terms.link_efficiency, terms.collective_overhead_s) == (0.95, 3.47e-6)
    text = explain(result, summarise=False)
    assert "Links: B = 42.75 GB/s in each direction" in text  # 0.95 x 45 GB/s, not the nominal 45
    costs = step_costs(result)
    for cost in costs:  # each step: one hop's α plus a 32 KiB block at the effective rate, by hand
        assert cost.model_s == pytest.approx(1e-6 + 32768 / (0.95 * 45e9), rel=1e-12)
    model = 3.47e-6 + sum(c.model_s for c in costs)
    assert "fixed cost per collective (calibration: calibrated), paid before step 1: 3.47 us" in text
    assert f"α–β model, the fixed cost plus the sum of the 3 steps: {format_seconds(model)} ({model!r} s)" in text


@pytest.mark.parametrize("generation", ["tpu-v4", "tpu-v5p", "tpu-v6e"])
def test_generations_without_a_measurement_borrow_v5es_terms_under_a_label(generation):
    lender = CALIBRATIONS["tpu-v5e"]
    terms = CALIBRATIONS[generation]
    assert (terms.link_efficiency, terms.collective_overhead_s, terms.compute_efficiency) == (0.95, 3.47e-6, 1.0)
    assert (terms.link_efficiency, terms.collective_overhead_s) == (lender.link_efficiency, lender.collective_overhead_s)
    assert terms.label == "borrowed from tpu-v5e" and terms.source.startswith(f"borrowed from tpu-v5e (no public {generation} collective measurement found): ")
    assert CALIBRATIONS["tpu-v5e"].label == "measured" and CALIBRATIONS["tpu7x"].label == "measured"


def test_borrowed_terms_act_only_when_asked_and_nominal_stays_the_ideal_model():
    # a line of 4 chips on v6e 8x4, 32 kB a shard: nominal L + S (its closed form), calibrated F + L + S / e with v5e's F and e
    shard = 64 * 256 * 2
    groups = netsim.Mesh({"X": 8, "Y": 4}, tpu_slice("tpu-v6e:8x4")).groups("Y")
    runs = {}
    for mode in ("nominal", "calibrated"):
        topology = calibrate(tpu_slice("tpu-v6e:8x4"), mode)
        runs[mode] = netsim.all_gather(np.zeros((32, shard), np.uint8), axis_index_groups=groups, topology=topology, data="none")
    ideal = analyse(runs["nominal"]).estimate
    assert ideal.kind == "exact" and ideal.fixed_s == 0 and runs["nominal"].time == pytest.approx(ideal.latency_s + ideal.bandwidth_s, rel=1e-12)
    assert ideal.bandwidth_s == pytest.approx(2 * shard / 9e10, rel=1e-12)  # the line's middle link carries two shards each way at 90 GB/s
    assert runs["calibrated"].time == pytest.approx(3.47e-6 + ideal.latency_s + ideal.bandwidth_s / 0.95, rel=1e-9)


def _v6e_scenario(tmp_path: Path) -> Path:
    data = yaml.safe_load(Path("scenarios/validation/v5e_8x4_line_allgather_32KiB.yaml").read_text())
    path = tmp_path / "v6e.yaml"
    path.write_text(yaml.safe_dump({**data, "name": "v6e_line", "topology": "tpu-v6e:8x4"}))
    return path


def _flat(output: str) -> str:
    """A table's text with its borders and line breaks gone (cells wrap at the console's width)."""
    return " ".join(re.sub("[│┃┌┐└┘├┤┬┴┼─━┏┓┗┛┡┩╇]", " ", output).split())


def test_run_estimate_and_program_say_the_terms_are_borrowed(tmp_path):
    runner = CliRunner()
    scenario = str(_v6e_scenario(tmp_path))
    shown = runner.invoke(app, ["run", scenario], terminal_width=200)
    assert shown.exit_code == 0 and "calibrated (borrowed from tpu-v5e): links at 0.95 of their bandwidth" in _flat(shown.output)
    ran = json.loads(runner.invoke(app, ["run", scenario, "--json"]).output)
    assert ran["calibration"]["terms"] == "borrowed from tpu-v5e" and ran["calibration"]["mode"] == "calibrated"
    estimated = runner.invoke(app, ["estimate", scenario], terminal_width=200)
    assert "calibrated (borrowed from tpu-v5e): links at 0.95 of their bandwidth, a fixed cost of 3.47 us" in _flat(estimated.output)
    estimate = json.loads(runner.invoke(app, ["estimate", scenario, "--json"]).output)
    assert estimate["calibration"] == {"mode": "calibrated", "terms": "borrowed from tpu-v5e", "link_efficiency": 0.95,
                                       "collective_overhead_s": 3.47e-6, "compute_efficiency": 1.0}  # fmt: skip
    module = ["program", "--hlo", "scenarios/programs/hlo/tpu/v6e_8x16/psum.txt", "--topology", "tpu-v6e:8x16"]
    program = runner.invoke(app, [*module, "--calibration", "calibrated"], terminal_width=200)
    assert program.exit_code == 0 and "calibrated (borrowed from tpu-v5e)" in _flat(program.output)
    nominal = json.loads(runner.invoke(app, [*module, "--json"]).output)["calibration"]
    assert (nominal["mode"], nominal["terms"], nominal["collective_overhead_s"]) == ("nominal", "none", 0.0)
    calibrated = json.loads(runner.invoke(app, [*module, "--calibration", "calibrated", "--json"]).output)["calibration"]
    assert (calibrated["terms"], calibrated["collective_overhead_s"]) == ("borrowed from tpu-v5e", 3.47e-6)
