"""`netsim run --output DIR`: the files, their contents, reproducing a run, and nothing written on a user error."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
import yaml
from conftest import ROOT
from typer.testing import CliRunner

import netsim
from netsim.analysis.why import analyse
from netsim.cli.main import app
from netsim.cli.output import OUTPUT_FILES
from netsim.destinations import MANIFEST

runner = CliRunner()


@pytest.mark.parametrize("name", ["allgather_ring8", "psum_scatter_docs_groups", "psum_torus4x4_row"])
def test_output_directory_holds_the_run_and_reproduces_it(tmp_path, name):
    source = ROOT / "scenarios" / f"{name}.yaml"
    target = tmp_path / "out"
    out = runner.invoke(app, ["run", str(source), "--output", str(target)])
    assert out.exit_code == 0, out.output
    assert sorted(p.name for p in target.iterdir()) == sorted([*OUTPUT_FILES, MANIFEST])
    assert (target / MANIFEST).read_text(encoding="utf-8").splitlines()[1:] == sorted(OUTPUT_FILES)  # what --force may replace
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no staging directory left behind

    record = json.loads((target / "result.json").read_text(encoding="utf-8"))
    original = netsim.simulate(netsim.load_scenario(source))
    assert record["netsim_version"] == netsim.__version__
    assert record["seed"] == yaml.safe_load(source.read_text(encoding="utf-8")).get("seed", 0)
    assert record["time_s"] == original.time
    assert record["scenario_as_run"]["topology"]["dims"] == list(original.topology_obj.dims)
    assert record["estimate_s"] == pytest.approx(analyse(original).estimate.time_s, rel=1e-12)

    with (target / "links.csv").open(newline="", encoding="utf-8") as stream:
        links = list(csv.DictReader(stream))
    assert len(links) == len(original.topology_obj.links)
    assert sum(int(row["bytes"]) for row in links) == record["totals"]["hop_bytes"]
    with (target / "devices.csv").open(newline="", encoding="utf-8") as stream:
        devices = list(csv.DictReader(stream))
    assert len(devices) == original.n_devices
    assert sum(int(row["bytes_sent"]) for row in devices) == sum(int(row["bytes_received"]) for row in devices)

    again = netsim.simulate(netsim.load_scenario(target / "scenario.yaml"))  # self-contained: topology inline
    assert again.time == original.time
    np.testing.assert_array_equal(again.output, original.output)


def test_output_into_an_existing_folder_is_refused_without_force_and_replaced_whole_with_it(tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "links.csv").write_text("old", encoding="utf-8")
    (out_dir / "stale.csv").write_text("an earlier version's file", encoding="utf-8")
    (out_dir / MANIFEST).write_text("# written by netsim\nstale.csv\n", encoding="utf-8")
    scenario = str(ROOT / "scenarios" / "allgather_ring8_ring.yaml")
    refused = runner.invoke(app, ["run", scenario, "--output", str(out_dir)])
    assert refused.exit_code == 2
    assert refused.output == f"error: --output {out_dir}: the folder exists and holds files; add --force to replace it whole, or name a new folder\n"
    assert (out_dir / "links.csv").read_text(encoding="utf-8") == "old"
    out = runner.invoke(app, ["run", scenario, "--output", str(out_dir), "--force"])
    assert out.exit_code == 0, out.output
    assert (out_dir / "links.csv").read_text(encoding="utf-8").startswith("link,src,dst")
    assert sorted(p.name for p in out_dir.iterdir()) == sorted([*OUTPUT_FILES, MANIFEST])  # replaced whole: no stale file beside the new ones
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # and nothing staged left beside it


def test_force_never_deletes_what_netsim_did_not_write(tmp_path):
    out_dir = tmp_path / "out"
    scenario = str(ROOT / "scenarios" / "allgather_ring8_ring.yaml")
    assert runner.invoke(app, ["run", scenario, "--output", str(out_dir)]).exit_code == 0
    (out_dir / "notes.txt").write_text("keep me", encoding="utf-8")
    before = {p.name: p.read_bytes() for p in out_dir.iterdir()}
    for extra in ([], ["--force"]):
        refused = runner.invoke(app, ["run", scenario, "--output", str(out_dir), *extra])
        assert (refused.exit_code, refused.output) == (
            2,
            f"error: --output {out_dir}: the folder holds notes.txt, which netsim did not write;"
            f" --force replaces only what netsim wrote: move it out of {out_dir}, or name a new folder\n",
        )
        assert {p.name: p.read_bytes() for p in out_dir.iterdir()} == before


def _listing(path):
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.mark.parametrize(
    "scenario_text, message",
    [
        ("name: x\ntopology: ring8\ncollective: {op: all_gather}\ninput: {bytes_per_device: 3 B, dtype: float32}\n", "input.bytes_per_device"),
        ("name: x\ntopology: ring9\ncollective: {op: all_gather}\ninput: {shape: [4]}\n", "topology"),
        ("name: x\ntopology: ring8\ncollective: {op: all_gather, axis: 5}\ninput: {shape: [4]}\n", "collective.axis"),
        ("not: [valid", "invalid YAML"),
    ],
)
def test_a_user_error_writes_nothing(tmp_path, scenario_text, message):
    scenario = tmp_path / "bad.yaml"
    scenario.write_text(scenario_text, encoding="utf-8")
    before = _listing(tmp_path)
    out = runner.invoke(app, ["run", str(scenario), "--output", str(tmp_path / "out"), "--trace", str(tmp_path / "run.json")])
    assert out.exit_code == 2
    assert message in out.output and out.output.count("\n") == 1
    assert "Traceback" not in out.output
    assert _listing(tmp_path) == before


@pytest.mark.parametrize(
    "option, make, message",
    [
        ("--output", lambda p: (p / "taken").write_text("x", encoding="utf-8") and p / "taken", "exists and is not a folder"),
        ("--output", lambda p: (p / "file").write_text("x", encoding="utf-8") and p / "file" / "out", "file is not a folder"),
        ("--trace", lambda p: p, "not a regular file (a device, a FIFO or a folder); give a file name such as run.json"),
        ("--trace", lambda p: p / "missing" / "run.json", "does not exist"),
    ],
)
def test_bad_destinations_are_refused_before_simulating(tmp_path, option, make, message):
    target = make(tmp_path)
    before = _listing(tmp_path)
    out = runner.invoke(app, ["run", str(ROOT / "scenarios" / "allgather_ring8.yaml"), option, str(target)])
    assert out.exit_code == 2
    assert message in out.output and "Traceback" not in out.output
    assert _listing(tmp_path) == before


def test_complex_sums_are_checked_on_both_parts():
    from netsim.outputs import _matches

    rng = np.random.default_rng(0)
    x = (rng.standard_normal((4, 64)) + 1j * rng.standard_normal((4, 64))).astype(np.complex64)
    result = netsim.psum(x, topology="ring4")
    assert result.verified and np.allclose(result.output[0], x.sum(axis=0), rtol=1e-5)
    expected = x.sum(axis=0)
    assert _matches(expected.copy(), expected, exact=False, group_size=4, scale=1.0)
    wrong = expected.copy()
    wrong[3] += 1j  # the real parts agree: a cast to float would see no difference
    assert not _matches(wrong, expected, exact=False, group_size=4, scale=1.0)


def test_exact_checks_compare_bits_then_values_as_numpy_does():
    """Same bits match at once; different bits are compared by value (-0.0 equals 0.0, NaN equals NaN, 1.0 is not 2.0)."""
    from netsim.outputs import first_difference
    from netsim.semantics.gather import AllGatherLayout

    x = np.array([[0.0, np.nan], [1.0, 2.0]], np.float32)
    layout = AllGatherLayout.check(x, 0, False, None)
    output = np.stack([x, x])
    assert first_difference(layout, x, output.copy(), exact=True, group_size=2) is None
    signed = output.copy()
    signed[1, 0, 0] = -0.0  # other bits, the same value
    quiet = output.copy()
    quiet[0, 0, 1] = np.frombuffer(np.uint32(0x7FC00001).tobytes(), np.float32)[0]  # another NaN
    assert first_difference(layout, x, signed, exact=True, group_size=2) is None
    assert first_difference(layout, x, quiet, exact=True, group_size=2) is None
    wrong = output.copy()
    wrong[1, 1, 1] = 3.0
    assert first_difference(layout, x, wrong, exact=True, group_size=2) == 1
