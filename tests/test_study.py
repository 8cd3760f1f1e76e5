"""Study files: grids expand into the right points, and bad studies are one clear line."""

from __future__ import annotations

import textwrap

import pytest
import yaml
from conftest import ROOT
from typer.testing import CliRunner

from netsim.cli.main import app
from netsim.scenario import ScenarioError
from netsim.studies.files import load_study, study_from_data

runner = CliRunner()

BASE = {"topology": "ring4", "collective": {"op": "all_gather"}, "input": {"bytes_per_device": "1 KiB", "dtype": "float32"}}


def study(grid, **extra):
    return study_from_data({"name": "s", "base": BASE, "grid": grid, **extra})


def test_fields_are_crossed_first_field_slowest_and_set_at_their_paths():
    s = study({"algorithm": ["ring", "bidirectional_ring"], "input.bytes_per_device": ["1 KiB", "4 KiB", "16 KiB"]})
    assert s.fields == ("algorithm", "input.bytes_per_device")
    assert [p.index for p in s.points] == list(range(6))
    pairs = [(p.data["algorithm"], p.data["input"]["bytes_per_device"]) for p in s.points]
    assert pairs == [(a, b) for a in ("ring", "bidirectional_ring") for b in ("1 KiB", "4 KiB", "16 KiB")]
    assert [dict(p.labels)["input.bytes_per_device"] for p in s.points] == ["1 KiB", "4 KiB", "16 KiB"] * 2
    # the base is not modified, and every point is a scenario of its own
    assert BASE["input"]["bytes_per_device"] == "1 KiB"
    assert [p.data["name"] for p in s.points[:2]] == ["s[0]", "s[1]"]
    assert s.points[5].scenario().input.bytes_per_device == 16 * 1024


def test_zip_true_moves_every_field_together():
    s = study({"topology": ["ring4", "ring8", "ring16"], "input.bytes_per_device": ["4 KiB", "2 KiB", "1 KiB"]}, zip=True)
    assert [(p.data["topology"], p.data["input"]["bytes_per_device"]) for p in s.points] == [("ring4", "4 KiB"), ("ring8", "2 KiB"), ("ring16", "1 KiB")]
    assert [p.scenario().topology_obj.n_devices for p in s.points] == [4, 8, 16]


def test_zip_groups_are_crossed_with_the_other_fields():
    s = study(
        {"algorithm": ["ring", "bidirectional_ring"], "topology": ["ring4", "ring8"], "input.bytes_per_device": ["4 KiB", "2 KiB"]},
        zip=[["topology", "input.bytes_per_device"]],
    )
    got = [(p.data["algorithm"], p.data["topology"], p.data["input"]["bytes_per_device"]) for p in s.points]
    assert got == [("ring", "ring4", "4 KiB"), ("ring", "ring8", "2 KiB"), ("bidirectional_ring", "ring4", "4 KiB"), ("bidirectional_ring", "ring8", "2 KiB")]


def test_zipped_fields_may_repeat_a_value():
    s = study({"topology": ["ring4", "ring4"], "input.bytes_per_device": ["4 KiB", "8 KiB"]}, zip=True)
    assert [dict(p.labels)["topology"] for p in s.points] == ["ring4", "ring4"]


def test_labels_from_mappings_names_and_json():
    s = study(
        {
            "collective.axis_index_groups": {"neighbours": [[0, 1], [2, 3]], "strided": [[0, 2], [1, 3]]},
            "topology": [{"name": "mine", "kind": "ring", "dims": [4]}, {"kind": "torus", "dims": [2, 2]}],
            "link.latency": ["1 us", "2 us"],
        }
    )
    labels = [dict(p.labels) for p in s.points]
    assert {d["collective.axis_index_groups"] for d in labels} == {"neighbours", "strided"}
    assert [d["topology"] for d in labels[0:4:2]] == ["mine", '{"kind": "torus", "dims": [2, 2]}']
    assert s.points[4].data["collective"] == {"op": "all_gather", "axis_index_groups": [[0, 2], [1, 3]]}
    assert s.points[1].data["link"] == {"latency": "2 us"}
    assert s.points[1].scenario().topology_obj.link((0, 1, (0, 1)))["latency_s"] == 2e-6


def test_sweeping_inside_an_inline_topology():
    base = {**BASE, "topology": {"kind": "torus", "dims": [2, 2], "cables": 2}}
    s = study_from_data({"name": "s", "base": base, "grid": {"topology.wraparound": [[False, True], [True, True]]}})
    assert [p.scenario().topology_obj.wraparound for p in s.points] == [(False, True), (True, True)]


def test_base_file_is_relative_to_the_study_and_its_topology_to_the_base(tmp_path):
    (tmp_path / "scen").mkdir()
    (tmp_path / "scen" / "mine.yaml").write_text("kind: ring\ndims: [4]\n")
    (tmp_path / "scen" / "base.yaml").write_text(yaml.safe_dump({**BASE, "name": "b", "topology": "mine.yaml", "expected": {"time_s": 1.0}}))
    (tmp_path / "study.yaml").write_text(yaml.safe_dump({"name": "s", "base": "scen/base.yaml", "grid": {"seed": [1, 2]}}))
    s = load_study(tmp_path / "study.yaml")
    assert [p.scenario().topology_obj.name for p in s.points] == ["mine", "mine"]
    assert "expected" not in s.points[0].data
    assert s.points[0].source == f"{tmp_path / 'study.yaml'} point 0"


def test_a_point_that_is_not_a_scenario_fails_alone():
    s = study({"collective.axis_index_groups": {"pairs": [[0, 1], [2, 3]], "overlap": [[0, 1], [1, 2]]}})
    s.points[0].scenario()
    with pytest.raises(ScenarioError, match=r"<study> point 1: collective.axis_index_groups: .*device 1 appears more than once"):
        s.points[1].scenario()


GOOD = """
name: s
base:
  topology: ring4
  collective: {op: all_gather}
  input: {bytes_per_device: 1 KiB}
grid:
  algorithm: [ring, bidirectional_ring]
  input.bytes_per_device: [1 KiB, 4 KiB]
"""


def replace(old, new):
    assert old in GOOD
    return GOOD.replace(old, new)


CASES = [
    (replace("name: s", "name: s\ncolour: red"), "colour: unknown field; allowed here: name, description, base, grid, zip, plots"),
    (replace("name: s\n", ""), "name: required field is missing"),
    (
        replace("  algorithm: [ring, bidirectional_ring]", "  algoritm: [ring]"),
        "grid.algoritm: unknown field 'algoritm'; allowed: name, description, topology, collective",
    ),
    (replace("  input.bytes_per_device:", "  inputs.bytes_per_device:"), "grid.inputs.bytes_per_device: unknown field 'inputs'; allowed: "),
    (replace("  input.bytes_per_device:", "  input.size:"), "grid.input.size: unknown field 'size'; allowed in input: shape, bytes_per_device, dtype, values"),
    (
        replace("  algorithm: [ring, bidirectional_ring]", "  input.dtype.kind: [f]"),
        "grid.input.dtype.kind: input.dtype is a value, not a group of fields; sweep input.dtype as a whole",
    ),
    (
        replace("  algorithm: [ring, bidirectional_ring]", "  topology.dims: [[4]]"),
        "grid.topology.dims: the base has topology: 'ring4', not a mapping; write topology out in the base",
    ),
    (replace("  algorithm: [ring, bidirectional_ring]", "  name: [a, b]"), "grid.name: cannot sweep name: each point's name is set by the study"),
    (replace("[ring, bidirectional_ring]", "ring"), "grid.algorithm: expected a list of values (or a mapping of label: value), got 'ring'"),
    (replace("[ring, bidirectional_ring]", "[]"), "grid.algorithm: no values to sweep; give at least one"),
    (replace("[ring, bidirectional_ring]", "[ring, ring]"), "grid.algorithm: 'ring' appears twice; every value needs its own label"),
    (
        replace("grid:", "zip: true\ngrid:").replace("[1 KiB, 4 KiB]", "[1 KiB]"),
        "zip: zipped fields need lists of one length; algorithm has 2 values, input.bytes_per_device has 1 value",
    ),
    (replace("grid:", "zip: [[algorithm, seed]]\ngrid:"), "zip: 'seed' is not a field of the grid; the grid has: algorithm, input.bytes_per_device"),
    (replace("grid:", "zip: maybe\ngrid:"), "zip: Input should be a valid boolean"),
    (replace("grid:", "plots: [pie]\ngrid:"), "plots.0: Input should be 'time_vs_payload', 'busbw_vs_payload', 'time_vs_devices' or 'time_by_field'"),
    (replace("grid:\n", "grid: {}\nx:\n"), "grid: Dictionary should have at least 1 item after validation, not 0"),
    (
        replace("base:\n  topology: ring4\n  collective: {op: all_gather}\n  input: {bytes_per_device: 1 KiB}", "base: nowhere.yaml"),
        "base: no scenario file 'nowhere.yaml'",
    ),
    (
        replace("[1 KiB, 4 KiB]", "[1 KiB, 2 KiB, 3 KiB, 4 KiB, 5 KiB, 6 KiB, 7 KiB, 8 KiB, 9 KiB, 10 KiB]\n  seed: " + str(list(range(5001)))),
        "grid: 100020 points is more than a sweep runs (100000)",
    ),
]


@pytest.mark.parametrize(("text", "message"), CASES, ids=[c[1][:40] for c in CASES])
def test_bad_study_is_one_clear_line_and_writes_nothing(tmp_path, text, message):
    path = tmp_path / "study.yaml"
    path.write_text(textwrap.dedent(text))
    result = runner.invoke(app, ["sweep", str(path), "--output", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert all(line.startswith(f"error: {path}: ") for line in lines), result.output  # a line per mistake
    assert message in lines[0]
    assert not (tmp_path / "out").exists()


def test_missing_study_file(tmp_path):
    result = runner.invoke(app, ["sweep", str(tmp_path / "nope.yaml"), "--output", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {tmp_path / 'nope.yaml'}: no such file"


STUDIES = sorted((ROOT / "scenarios" / "studies").glob("*.yaml"))


@pytest.mark.parametrize("path", STUDIES, ids=lambda p: p.stem)
def test_bundled_study_points_are_all_valid_scenarios(path):
    s = load_study(path)
    assert s.name == path.stem
    assert s.description
    for point in s.points:
        point.program_file() if s.program else point.scenario()
