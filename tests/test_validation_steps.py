"""The whole-step modules (MaxText's v5e rows, compiled by libtpu) against the compiler's own figures and MaxText's formula.

The simulations themselves take minutes each (``scripts/validation_steps.py``); here the
modules' FLOPs and HBM peak are checked, which take seconds.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import load_script

from netsim.programs.hlo.maxtext import HELD_OUT, MODELS, individual_scales

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def steps():
    return load_script("scripts/validation_steps.py", "validation_steps")


BUNDLED = [name for name in {**MODELS, **HELD_OUT} if (ROOT / "scenarios" / "programs" / "hlo" / "steps" / f"{name}.txt.gz").exists()]


def test_maxtexts_scales_and_formula_by_hand():
    # pyconfig.get_individual_scales: 16 = 2^4 -> base 1, rem 1: heads and mlp x4, embed x2, layers x2
    assert individual_scales(16) == (1, 2, 2, 1)
    m = MODELS["16b"]
    assert (m.emb, m.heads, m.mlp, m.layers) == (5120, 32, 32768, 32)
    per_layer = 5120 + 4 * 5120 * 32 * 256 + 2 * 256 + 32 * 32 + 2 * 5120 * 32768
    assert m.params() == 32 * per_layer + 32768 * 5120 + 5120
    tflops = (6 * m.params() * 2048 * 6 + 12 * 32 * 32 * 256 * 2048**2 * 6) / 1e12
    assert m.model_tflops_per_device() == pytest.approx(tflops, rel=1e-12)
    assert m.step_time_s() == pytest.approx(tflops * 1e12 / (0.6110 * 197e12), rel=1e-12)  # about 10.6 s


def test_maxtexts_v5p_rows_by_hand():
    # v5p/32b.sh at 76bd53b0f: global_parameter_scale=32 -> 32 = 2^5, base 1, rem 2: embed, heads, mlp x4, layers x2
    m = HELD_OUT["32b_v5p"]
    assert (m.emb, m.heads, m.mlp, m.layers, m.fsdp, m.tensor, m.per_device_batch) == (10240, 32, 32768, 32, 16, 4, 8)
    per_layer = 10240 + 4 * 10240 * 32 * 256 + 3 * 256 + 2 * 10240 * 32768  # rotary positions: no bias table, a value norm
    assert m.params() == 32 * per_layer + 32768 * 10240 + 10240
    tflops = (6 * m.params() * 2048 * 8 + 12 * 32 * 32 * 256 * 2048**2 * 8 / 2) / 1e12  # attention counted causal
    assert m.model_tflops_per_device() == pytest.approx(tflops, rel=1e-12)
    assert m.step_time_s() == pytest.approx(tflops * 1e12 / (0.7147 * 459e12), rel=1e-12)  # about 9.9 s
    assert m.published_tflops == pytest.approx(0.7147 * 459, rel=0.001)  # the table's 328 TFLOP/s beside its MFU


@pytest.mark.parametrize("name", BUNDLED)
def test_the_modules_flops_equal_libtpus_cost_analysis_and_maxtexts_formula_with_remat(steps, name):
    row = next(r for r in steps.ROWS if r.config.name == name)
    f = steps.module_checks(row)
    assert f["flops_once"] == pytest.approx(f["xla_flops"], rel=0.02)  # XLA counts each loop body once
    assert f["flops_trips"] == pytest.approx(f["maxtext_remat"], rel=0.02)  # what the step executes


@pytest.mark.parametrize("name", BUNDLED)
def test_the_hbm_peak_lies_between_the_arguments_and_what_the_compiler_reserves(steps, name):
    row = next(r for r in steps.ROWS if r.config.name == name)
    f = steps.module_checks(row)
    assert f["arguments"] < f["hbm_peak"] <= f["memory_analysis"]


@pytest.mark.parametrize("name", BUNDLED)
def test_the_hbm_peak_is_within_10_percent_of_what_the_compilers_buffer_assignment_lays_out(steps, name):
    row = next(r for r in steps.ROWS if r.config.name == name)
    f = steps.module_checks(row)
    assert f["laid_out"] > 0, f"{name}.xla.json has no buffer assignment: scripts/make_step_modules.py records it"
    assert f["hbm_peak"] == pytest.approx(f["laid_out"], rel=0.10)


@pytest.mark.parametrize("efficiency", [0.2, 0.1])
def test_a_step_moved_to_another_matmul_efficiency_takes_what_a_run_there_takes(steps, efficiency):
    # the derivation's shortcut (time_at) against the simulation itself, on a module whose compute runs before its all-reduce
    import dataclasses

    from netsim.network.calibration import calibrate, offered
    from netsim.programs.hlo.run import run_hlo
    from netsim.run import resolve_topology

    slice_ = calibrate(resolve_topology("tpu-v5e:4x4", None), "calibrated")

    def run(value):
        at = calibrate(slice_, "calibrated", dataclasses.replace(offered(slice_), compute_efficiency=value))
        return run_hlo("scenarios/programs/hlo/tpu/v5e_4x4/mlp.txt", at, compare=False)

    assert steps.time_at(run(1.0).report(), efficiency) == pytest.approx(run(efficiency).time, rel=1e-12)
    assert run(efficiency).time > run(1.0).time  # MXU-bound below about 0.49 (2.7e8 FLOPs at 197 TFLOP/s against 2.2 MB at 810 GB/s): not the identity


def test_v5es_matmul_efficiency_is_the_median_the_recorded_runs_derive(steps):
    from netsim.network.calibration import CALIBRATIONS

    value, each = steps.derive()  # from scenarios/programs/hlo/steps/step_times.json (the runs take minutes)
    assert sorted(each) == sorted(name for name in MODELS)  # every derivation row, and only those
    assert all(0 < e <= 1 for e in each.values())
    v5e = CALIBRATIONS["tpu-v5e"]
    assert v5e.compute_efficiency == value
    assert {f"MaxText {name} v5e-256" for name in MODELS} <= set(v5e.derived_from)
    assert "maxtext" in v5e.source.lower() and "9bc243c95" in v5e.source


def test_the_step_reports_formula_is_each_rows_own(steps):
    # what netsim's step report counts for a row (its model: shape, and causal attention from December 2023) is what the table divides by
    from netsim.analysis.step_report import maxtext_flops

    for row in steps.ROWS:
        assert maxtext_flops(row.model) == pytest.approx(row.config.model_tflops_per_device() * 1e12, rel=1e-12)
        assert row.model.get("causal_attention", False) == (row.config.name.endswith("v5p"))


def test_the_in_order_runs_are_recorded_beside_a_rows_figures_and_keep_them(steps, tmp_path, monkeypatch):
    import json

    recorded = tmp_path / "step_times.json"
    recorded.write_text(json.dumps({"16b": {"nominal_s": 1.5, "commit": "a", "in_order_nominal_s": 9.0, "in_order_commit": "old"}}))
    monkeypatch.setattr(steps, "RECORDED", recorded)
    asked = []
    monkeypatch.setattr(steps, "step_time", lambda row, mode, efficiency=None, sync=None: asked.append((row.config.name, mode, sync)) or 2.5)
    steps.simulate_rows(["16b"], in_order=True)
    row = json.loads(recorded.read_text())["16b"]
    assert asked == [("16b", "nominal", "in_order")]  # one run: nominal, its sync collectives in order
    assert row["nominal_s"] == 1.5 and row["commit"] == "a" and row["in_order_nominal_s"] == 2.5 and row["in_order_commit"] != "old"
