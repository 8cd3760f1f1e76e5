"""The step report (netsim/analysis/step_report.py): MaxText's figures and where the time went, by hand arithmetic."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import netsim
from netsim.cli.main import app
from netsim.programs.hlo import hlo_from_text
from netsim.programs.hlo.run import run_hlo
from tests.test_hlo_dma import HBM, MIB, MLP, PEAK

DOT = 2 * 8192 * 4096 * 4096  # each of the MLP's two dots, MXU-bound (see tests/test_hlo_dma.py)
MODEL = {"params": 2e9, "layers": 4, "heads": 16, "head_dim": 128, "seq": 2048, "per_device_batch": 2}


@pytest.fixture(scope="module")
def mlp():
    return run_hlo(hlo_from_text(MLP), "tpu-v5e:2x2")


def test_the_mlp_step_is_all_mxu_its_prefetch_hidden(mlp):
    r = mlp.report()
    assert r.flops_per_device == 2 * DOT and r.flops_source.startswith("the module's FLOPs as XLA's cost analysis counts them")
    assert r.time_s == pytest.approx(2 * DOT / PEAK, rel=1e-12)
    assert r.mfu == pytest.approx(1.0, rel=1e-12)  # nominal: every second is MXU work at peak
    assert r.tflops_per_device == pytest.approx(PEAK / 1e12, rel=1e-12)
    assert (r.compute_mxu_s, r.compute_hbm_s) == (pytest.approx(2 * DOT / PEAK, rel=1e-12), 0.0)
    assert (r.dma_s, r.dma_exposed_s, r.idle_s, r.communication_exposed_s) == (pytest.approx(32 * MIB / HBM, rel=1e-12), 0.0, 0.0, 0.0)
    assert r.tokens_per_s is None and r.matmul_efficiency == 1
    assert [(i["name"], i["runs"], i["bound"]) for i in r.instructions] == [("h", 1, "MXU"), ("y", 1, "MXU")]


def test_a_copy_waited_for_at_once_is_exposed_dma():
    text = MLP.replace("  %h = bf16[8192,4096]{1,0} dot(%x, %w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n", "")
    r = netsim.report(run_hlo(hlo_from_text(text.replace("dot(%h,", "dot(%x,")), "tpu-v5e:2x2"))
    assert r.dma_exposed_s == pytest.approx(32 * MIB / HBM, rel=1e-12) == pytest.approx(r.dma_s, rel=1e-12)
    assert r.compute_mxu_s + r.dma_exposed_s == pytest.approx(r.time_s, rel=1e-12)


def test_with_the_model_maxtext_formula_gives_flops_mfu_and_tokens(mlp):
    r = netsim.report(mlp, model=MODEL)
    flops = 6 * 2e9 * 2048 * 2 + 12 * 16 * 4 * 128 * 2048**2 * 2  # MaxText's formula, per device
    assert r.flops_per_device == flops and r.flops_source.startswith("MaxText's formula")
    assert r.mfu == pytest.approx(flops / r.time_s / PEAK, rel=1e-12)
    assert r.tokens_per_s == pytest.approx(2 * 2048 * 4 / r.time_s, rel=1e-12)  # 4 devices


def test_the_python_report_is_the_command_line_s(tmp_path, mlp):
    path = tmp_path / "mlp.txt"
    path.write_text(MLP)
    shown = CliRunner().invoke(app, ["program", "--hlo", str(path), "--topology", "tpu-v5e:2x2"], terminal_width=200)
    assert shown.exit_code == 0, shown.output
    run = run_hlo(path, "tpu-v5e:2x2")
    assert run.report().table() in shown.output and str(netsim.report(run)) == run.report().table()
    printed = json.loads(CliRunner().invoke(app, ["program", "--hlo", str(path), "--topology", "tpu-v5e:2x2", "--json"]).output)
    assert printed["step"] == json.loads(json.dumps(run.report().to_dict()))
    assert run.program.module_text == MLP


def test_a_model_with_a_field_missing_is_refused():
    with pytest.raises(ValueError, match=r"^model lacks seq: give params, layers, heads, head_dim, seq, per_device_batch$"):
        run_hlo(hlo_from_text(MLP), "tpu-v5e:2x2", model={k: v for k, v in MODEL.items() if k != "seq"})


def test_a_program_file_result_has_no_step_report_method_but_netsim_report_reads_it():
    r = netsim.run_program("scenarios/programs/allgather_matmul.yaml")
    with pytest.raises(ValueError, match=r"for another program use netsim\.report"):
        r.report()
    step = netsim.report(r)
    parts = step.compute_mxu_s + step.compute_hbm_s + step.communication_exposed_s + step.dma_exposed_s + step.idle_s
    assert parts == pytest.approx(step.played_s, rel=1e-12)


def test_an_hlo_program_file_gives_the_model_shape(tmp_path):
    (tmp_path / "mlp.txt").write_text(MLP)
    shape = ", ".join(f"{k}: {v:g}" for k, v in MODEL.items())
    (tmp_path / "mlp.yaml").write_text(f"name: mlp\nhlo: mlp.txt\ntopology: tpu-v5e:2x2\nmodel: {{{shape}}}\n")
    from netsim.programs.hlo.run import run_hlo_program

    step = run_hlo_program(tmp_path / "mlp.yaml").report()
    assert step.flops_per_device == 6 * 2e9 * 2048 * 2 + 12 * 16 * 4 * 128 * 2048**2 * 2
    (tmp_path / "bad.yaml").write_text("name: mlp\nhlo: mlp.txt\ntopology: tpu-v5e:2x2\nmodel: {params: 1e9}\n")
    with pytest.raises(netsim.ScenarioError, match=r"bad\.yaml: model\.layers"):
        run_hlo_program(tmp_path / "bad.yaml")
