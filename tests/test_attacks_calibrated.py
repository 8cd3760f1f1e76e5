"""A calibrated program says it is calibrated, in its table and its JSON, and counts its launches as the collectives' fixed cost, not compute."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT
from typer.testing import CliRunner

from netsim.cli.main import app
from netsim.network.calibration import CALIBRATIONS

runner = CliRunner()
PROGRAM = str(ROOT / "scenarios" / "programs" / "allgather_matmul.yaml")
FIXED = CALIBRATIONS["tpu-v5e"].collective_overhead_s


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    out = {}
    for mode in ("nominal", "calibrated"):
        result = runner.invoke(app, ["program", PROGRAM, "--calibration", mode, "--data", "none", "--json"])
        assert result.exit_code == 0, result.output
        out[mode] = json.loads(result.output)
    return out


def test_a_calibrated_programs_json_names_its_terms_as_run_does(runs):
    assert "calibration" not in runs["nominal"]
    assert runs["calibrated"]["calibration"] == {
        "mode": "calibrated",
        "link_efficiency": CALIBRATIONS["tpu-v5e"].link_efficiency,
        "collective_overhead_s": FIXED,
        "compute_efficiency": CALIBRATIONS["tpu-v5e"].compute_efficiency,
        "source": CALIBRATIONS["tpu-v5e"].source,
    }


def test_launches_are_the_collectives_fixed_cost_not_compute(runs):
    nominal, calibrated = runs["nominal"], runs["calibrated"]
    collectives = sum(op["op"] in ("all_gather", "psum", "psum_scatter", "all_to_all", "ppermute") for op in calibrated["ops"])
    assert collectives == 1 and nominal["launches_s"] == 0
    assert calibrated["launches_s"] == pytest.approx(FIXED, rel=1e-12)
    assert calibrated["compute_s"] == pytest.approx(nominal["compute_s"], rel=1e-12)  # compute efficiency 1 on v5e: the same work


def test_a_calibrated_programs_table_has_the_calibration_row():
    out = runner.invoke(app, ["program", PROGRAM, "--calibration", "calibrated", "--data", "none"], env={"COLUMNS": "200"})
    assert out.exit_code == 0, out.output
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in out.output.splitlines() if line.count("│") == 3}
    assert rows["calibration"].startswith("calibrated: links at 0.95 of their bandwidth, a fixed cost of 3.47 us per collective (docs/validation.md;")
    assert rows["collective overhead"] == "3.47 us on the busiest device: the fixed cost per collective (calibrated), not compute"


def test_a_calibrated_programs_op_that_differs_from_its_form_is_not_labelled_exact():
    out = runner.invoke(app, ["program", str(ROOT / "scenarios" / "programs" / "megatron_mlp.yaml"), "--calibration", "calibrated", "--json"])
    assert out.exit_code == 0, out.output
    ops = {op["name"]: op for op in json.loads(out.output)["ops"]}
    for op in ops.values():  # exact only where the form equals the run
        assert op["estimate_kind"] != "exact" or op["time_s"] == pytest.approx(op["estimate_s"], rel=0.01), op
    scatter = ops["reduce_scatter"]
    assert scatter["estimate_kind"] == "none" and scatter["time_s"] > 1.04 * scatter["estimate_s"]
    assert "(every device starting at once: its devices started it up to 1.19" in scatter["why"]  # they finished the matmul before it apart


def test_a_straggler_run_is_not_labelled_exact(tmp_path):
    text = (ROOT / "scenarios" / "allgather_ring8.yaml").read_text()
    text = "\n".join(line for line in text.splitlines() if not line.startswith(("expected", "  time_s"))) + "\nstragglers: {2: 20 us}\n"
    (tmp_path / "s.yaml").write_text(text)
    out = runner.invoke(app, ["run", str(tmp_path / "s.yaml"), "--json"])
    assert out.exit_code == 0, out.output
    run = json.loads(out.output)
    assert run["estimate_kind"] == "none" and run["ratio"] > 1.5
    assert run["formula"].endswith("(every device starting at once: no promise where stragglers start late)")
    assert run["why"] == "1.730x the estimate: stragglers: late starts add 20 us to the critical path"
