"""A study over program fields: the batch-size sweep, its rows and the plot that shows the crossover."""

from __future__ import annotations

from pathlib import Path

import pytest

from netsim.scenario import ScenarioError
from netsim.studies.files import load_study, study_from_data
from netsim.studies.program_plots import crossover, plot_program_results
from netsim.studies.sweep import columns, read_results, sweep

STUDY = Path(__file__).resolve().parent.parent / "scenarios" / "studies" / "batch_crossover.yaml"
D = F = 4096
PEAK, LINK = 1.97e14, 45e9


def test_a_program_study_sweeps_params():
    study = load_study(STUDY)
    assert study.program and study.fields == ("params.B",)
    assert [p.labels[0][1] for p in study.points][:3] == ["256", "512", "1024"]
    assert columns(study)[:4] == ["point", "params.B", "topology", "n_devices"]
    assert study.points[2].program_file().program.arrays["x"].shape == (1024, D)


def test_the_sweep_finds_where_the_gather_hides_behind_the_matmul(tmp_path):
    table = sweep(STUDY, output=tmp_path, workers=1)
    assert table["error"].isna().all()
    assert table.equals(read_results(tmp_path / "results.csv"))
    comm = table["communication_s"].iloc[0]
    # the end chips of X (a line of 4) receive 3/4 of W_next over one link, and pay at most three hops of 1 us
    assert 0.75 * D * F * 2 / LINK < comm <= 0.75 * D * F * 2 / LINK + 3e-6
    assert (table["communication_s"] == comm).all()  # the gather does not depend on the batch
    for _, row in table.iterrows():
        rows = float(row["params.B"])
        roofline = max(2 * rows * D * F / PEAK, (rows * D + D * F + rows * F) * 2 / 810e9)  # HBM-bound at B = 256 only
        assert row["compute_s"] == pytest.approx(roofline, rel=1e-12)
        assert row["time_s"] == pytest.approx(max(comm, row["compute_s"]), rel=1e-12)
        assert row["exposed_communication_s"] == pytest.approx(max(0.0, comm - row["compute_s"]), rel=1e-9, abs=1e-15)
    (plot,) = plot_program_results(table, tmp_path, name="batch_crossover")
    assert plot.path.name == "time_vs_field.png" and plot.path.stat().st_size > 10_000
    marks = {s.label: s.x[0] for s in plot.series if not s.y}
    assert 3072 < marks["simulated crossover"] < 4096
    assert marks["simulated crossover"] == pytest.approx(comm * PEAK / (2 * D * F), rel=1e-9)
    assert marks["scaling book crossover"] == pytest.approx(PEAK / (2 * LINK))


def test_crossover_interpolates_on_log_axes():
    assert crossover([1, 4], [1.0, 4.0], [2.0, 2.0]) == pytest.approx(2.0)
    assert crossover([1, 2], [1.0, 1.5], [2.0, 2.0]) is None


def test_a_program_study_checks_its_fields():
    base = {"name": "b", "topology": "ring4", "mesh": {"X": 4}, "arrays": {"A": {"shape": [8]}}, "ops": [{"name": "c", "op": "compute", "seconds": "1 us"}]}
    with pytest.raises(ScenarioError, match=r"grid\.colour: unknown field 'colour'; allowed: name, description, topology"):
        study_from_data({"name": "s", "base": base, "grid": {"colour": [1, 2]}})
