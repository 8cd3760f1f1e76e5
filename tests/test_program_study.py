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
    # exposed communication reaches 0 from B = 4096 on: drawn on the floor of the log axis, not left out
    exposed = next(s for s in plot.series if s.label == "exposed communication")
    floor = next(s for s in plot.series if s.label == "exposed communication: 0 (on the floor)")
    assert floor.x == [4096, 6144, 8192, 16384] and floor.x == [x for x, y in zip(exposed.x, exposed.y, strict=True) if y == 0]
    assert 0 < floor.y[0] < min(y for y in exposed.y if y > 0)


def _two_field_table(pairs):
    """A results table of a study over params.B and topology, each topology's rows from ``pairs`` (per-row compute, communication)."""
    import pandas as pd

    rows = []
    for point, (b, topology, peak, link, compute, comm) in enumerate(pairs):
        exposed = comm  # a psum the next op waits for: never hidden
        row = {"point": point, "params.B": str(b), "topology": topology, "n_devices": 16, "time_s": compute + comm, "compute_s": compute}
        row |= {"communication_s": comm, "exposed_communication_s": exposed, "peak_flops": peak, "link_bandwidth_Bps": link, "verified": False, "error": None}
        rows.append(row)
    return pd.DataFrame(rows)


def test_a_two_field_program_sweep_draws_a_panel_per_chip_and_no_crossover_where_nothing_hides(tmp_path):
    chips = [("tpu-v5e:4x4", 1.97e14, 45e9), ("tpu-v6e:4x4", 9.2e14, 90e9)]
    compute = {1024: 1e-6, 4096: 4e-6, 16384: 32e-6}  # overtakes the communication at B = 16384, which still cannot hide
    pairs = [(b, t, peak, link, compute[b] / (1 if t.startswith("tpu-v5e") else 2), b * 1e-9) for b in (1024, 4096, 16384) for t, peak, link in chips]
    table = _two_field_table(pairs)
    (plot,) = plot_program_results(table, tmp_path, name="two")
    times = [s for s in plot.series if s.label.startswith("program time")]
    assert [s.label for s in times] == ["program time, topology=tpu-v5e:4x4", "program time, topology=tpu-v6e:4x4"]
    assert all(s.x == [1024, 4096, 16384] for s in times)  # one line per chip: no zig-zag through both
    assert times[1].y == pytest.approx([(compute[b] / 2 + b * 1e-9) * 1e6 for b in (1024, 4096, 16384)])
    assert not [s for s in plot.series if s.label.startswith("simulated crossover")]  # compute crosses nothing that hides
    books = {s.label: s.x[0] for s in plot.series if s.label.startswith("scaling book")}
    assert books == {f"scaling book crossover, topology={t}": pytest.approx(peak / (2 * link)) for t, peak, link in chips}


def test_crossover_interpolates_on_log_axes():
    assert crossover([1, 4], [1.0, 4.0], [2.0, 2.0]) == pytest.approx(2.0)
    assert crossover([1, 2], [1.0, 1.5], [2.0, 2.0]) is None


def test_a_program_study_checks_its_fields():
    base = {"name": "b", "topology": "ring4", "mesh": {"X": 4}, "arrays": {"A": {"shape": [8]}}, "ops": [{"name": "c", "op": "compute", "seconds": "1 us"}]}
    with pytest.raises(ScenarioError, match=r"grid\.colour: unknown field 'colour'; allowed: name, description, topology"):
        study_from_data({"name": "s", "base": base, "grid": {"colour": [1, 2]}})
