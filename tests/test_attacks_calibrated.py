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
