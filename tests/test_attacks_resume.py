"""A resumed sweep keeps a row only while the files its point read are unchanged; renaming a study keeps its rows."""

from __future__ import annotations

import shutil

import yaml
from conftest import ROOT
from typer.testing import CliRunner

from netsim.cli.main import app
from netsim.studies.sweep import RESULTS_FILE

runner = CliRunner()
BASE = {"topology": "t.yaml", "collective": {"op": "all_gather"}, "input": {"bytes_per_device": "64 B", "dtype": "int8"}}
STUDY = {"name": "tiny", "base": BASE, "grid": {"seed": [0, 1]}}


def _sweep(tmp_path, study: dict = STUDY, *args: str):
    (tmp_path / "study.yaml").write_text(yaml.safe_dump(study), encoding="utf-8")
    return runner.invoke(app, ["sweep", str(tmp_path / "study.yaml"), "-o", str(tmp_path / "out"), "-j", "1", "-q", *args])


def _refused(out, tmp_path) -> None:
    assert out.exit_code == 2, out.output
    assert out.output == (
        f"error: {tmp_path / 'out' / RESULTS_FILE}: row 2, column row_sha256: does not match the point's scenario and the row's cells,"
        " or the files the point reads: the study's base or a file it names changed, or the row was edited;"
        " remove results.csv (or that row) to run the point afresh, or choose another output folder\n"
    )


def test_resume_refuses_rows_computed_before_the_topology_file_was_edited(tmp_path):
    shutil.copy(ROOT / "topologies" / "ring4.yaml", tmp_path / "t.yaml")
    assert _sweep(tmp_path).exit_code == 0
    text = (tmp_path / "t.yaml").read_text()
    (tmp_path / "t.yaml").write_text(text.replace("ring4", "ring4b", 1) if "ring4" in text else text + "\n# edited\n")
    before = (tmp_path / "out" / RESULTS_FILE).read_bytes()
    _refused(_sweep(tmp_path, STUDY, "--resume"), tmp_path)
    assert (tmp_path / "out" / RESULTS_FILE).read_bytes() == before


def test_resume_does_not_keep_a_point_that_failed_on_a_file_created_since(tmp_path):
    assert _sweep(tmp_path).exit_code == 1  # t.yaml does not exist yet: every point fails
    shutil.copy(ROOT / "topologies" / "ring4.yaml", tmp_path / "t.yaml")
    _refused(_sweep(tmp_path, STUDY, "--resume"), tmp_path)


def test_renaming_a_study_keeps_its_rows(tmp_path):
    shutil.copy(ROOT / "topologies" / "ring4.yaml", tmp_path / "t.yaml")
    assert _sweep(tmp_path).exit_code == 0
    before = (tmp_path / "out" / RESULTS_FILE).read_text()
    out = _sweep(tmp_path, {**STUDY, "name": "renamed"}, "--resume")
    assert out.exit_code == 0, out.output
    assert (tmp_path / "out" / RESULTS_FILE).read_text() == before


def test_sweeping_a_parameter_the_base_does_not_have_is_refused_with_did_you_mean(tmp_path):
    text = (ROOT / "scenarios" / "studies" / "batch_crossover.yaml").read_text().replace("params.B:", "params.b:")
    (tmp_path / "s.yaml").write_text(text)
    out = runner.invoke(app, ["sweep", str(tmp_path / "s.yaml"), "-o", str(tmp_path / "out")])
    assert out.exit_code == 2 and not (tmp_path / "out").exists()
    assert out.output == f"error: {tmp_path / 's.yaml'}: grid.params.b: the base has no params 'b' (it has B, D, F); did you mean B?\n"


def test_sweeping_an_entry_of_the_ops_the_base_writes_out(tmp_path):
    from netsim.studies.files import study_from_data

    base = str(ROOT / "scenarios" / "programs" / "allgather_matmul.yaml")
    study = study_from_data({"name": "e", "base": base, "grid": {"ops.1.efficiency": [0.5, 1.0]}}, "s.yaml")
    assert [p.data["ops"][1]["efficiency"] for p in study.points] == [0.5, 1.0]
    assert all(p.data["ops"][0] == study.points[0].data["ops"][0] and "efficiency" not in p.data["ops"][0] for p in study.points)
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"name": "e", "base": base, "grid": {"ops.2.efficiency": [0.5]}}))
    out = runner.invoke(app, ["sweep", str(tmp_path / "s.yaml"), "-o", str(tmp_path / "out")])
    assert out.exit_code == 2
    assert out.output == f"error: {tmp_path / 's.yaml'}: grid.ops.2.efficiency: ops is a list of 2: name an entry by its index, 0 to 1 (e.g. ops.0)\n"


def test_a_study_of_an_hlo_program_file_is_refused_before_anything_runs(tmp_path):
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"name": "h", "base": str(ROOT / "scenarios" / "programs" / "hlo" / "mlp.yaml"), "grid": {"seed": [0, 1]}}))
    out = runner.invoke(app, ["sweep", str(tmp_path / "s.yaml"), "-o", str(tmp_path / "out")])
    assert out.exit_code == 2 and not (tmp_path / "out").exists()
    assert out.output == (
        f"error: {tmp_path / 's.yaml'}: base: the base is an HLO program file (hlo:), which a study does not sweep;"
        " run it with `netsim program`, or give a scenario or a program file with ops\n"
    )


def test_the_books_crossover_is_drawn_only_over_rows_per_chip(tmp_path):
    import netsim
    from netsim.studies.program_plots import per_chip_params, plot_program_results

    def study(sharding: list) -> dict:
        base = {
            "name": "b",
            "topology": "tpu-v5e:2x2",
            "mesh": {"X": 4},
            "params": {"B": 1024},
            "arrays": {"x": {"shape": ["B", 256], "dtype": "bfloat16", "sharding": sharding}, "W": {"shape": [256, 256], "dtype": "bfloat16"}},
            "ops": [{"name": "mm", "op": "matmul", "in": ["x", "W"], "out": "y"}],
            "data": "none",
        }
        return {"name": "s", "base": base, "grid": {"params.B": [4096, 1048576]}}

    for sharding, drawn in (([None, None], True), ([["X"], None], False)):  # B rows on each chip; B split over the mesh
        data = study(sharding)
        table = netsim.sweep(data)
        (plot,) = plot_program_results(table, tmp_path / str(drawn), "s", per_chip_params(data["base"]))
        assert any(s.label.startswith("scaling book crossover") for s in plot.series) == drawn
    assert per_chip_params(study([["X"], None])["base"]) == set()
