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
    assert runs["nominal"]["calibration"]["mode"] == "nominal" and runs["nominal"]["calibration"]["collective_overhead_s"] == 0
    assert runs["calibrated"]["calibration"] == {
        "mode": "calibrated",
        "terms": "measured",
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
    expected = "calibrated (measured): links at 0.95 of their bandwidth, a fixed cost of 3.47 us per collective (docs/validation.md;"
    assert rows["calibration"].startswith(expected)
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


def _program(tmp_path, topology: str, rows: int) -> str:
    path = tmp_path / "p.yaml"
    path.write_text(
        f"name: p\ntopology: {topology}\nmesh: {{X: 4}}\narrays:\n  a: {{shape: [{rows}, 1048576], dtype: float32, sharding: [X, null]}}\n"
        "ops:\n  - {name: g, op: all_gather, in: a, axes: X, axis: 0, tiled: true, out: b}\ndata: none\n"
    )
    return str(path)


def test_require_fit_refuses_before_playing(tmp_path, monkeypatch):
    import netsim.programs.run as run

    def never(*args, **kwargs):
        raise AssertionError("played a program --require-fit refuses")

    monkeypatch.setattr(run, "play_lowered", never)
    path = _program(tmp_path, "tpu-v5e:2x2", 4096)  # 4 GiB a device, gathered into 16 GiB: 20 GiB on a 16 GiB chip
    out = runner.invoke(app, ["program", path, "--require-fit"])
    assert out.exit_code == 2
    assert out.output == f"error: {path}: does not fit: 20 GiB on a 16 GiB chip (--require-fit)\n"


def test_require_fit_on_a_chip_without_hbm_capacity_says_it_cannot_check(tmp_path):
    path = _program(tmp_path, "{kind: ring, dims: [4]}", 4)
    out = runner.invoke(app, ["program", path, "--require-fit"])
    assert out.exit_code == 2
    assert out.output == (
        f"error: {path}: unknown: 0.0195 GiB, the chip gives no HBM capacity to check against;"
        " give the topology's device: {hbm_capacity: 16 GiB} (--require-fit)\n"
    )
    table = runner.invoke(app, ["program", path], env={"COLUMNS": "200"})
    assert "│ chip                     │ FLOP/s unknown, HBM unknown" in table.output and "0 TFLOP/s" not in table.output


def test_sweep_json_of_a_program_study_follows_the_sweep_schema(tmp_path):
    import jsonschema

    study = tmp_path / "s.yaml"
    study.write_text(f"name: s\nbase: {PROGRAM}\ngrid: {{seed: [0, 1]}}\n")
    out = runner.invoke(app, ["sweep", str(study), "-o", str(tmp_path / "out"), "--json", "-q", "-j", "1"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    schema = json.loads(runner.invoke(app, ["schema", "sweep"]).output)
    jsonschema.validate(rows, schema)
    assert [row["point"] for row in rows] == [0, 1] and all(row["compute_s"] > 0 for row in rows)


def test_run_program_names_the_program_not_an_op_and_a_file_keeps_its_topology():
    import netsim
    from netsim.programs.files import load_program

    program = load_program(PROGRAM).program
    with pytest.raises(ValueError) as error:
        netsim.run_program(program, "tpu-v5e:4x5")
    assert str(error.value) == (
        "program 'allgather_matmul': mesh {'X': 4, 'Y': 4} on topology 'tpu-v5e:4x5': input has 16 devices on its leading axis but topology tpu-v5e:4x5 has 20"
    )
    with pytest.raises(ValueError) as error:
        netsim.run_program(PROGRAM, "tpu-v5e:4x5")  # it ran on the file's tpu-v5e:4x4, the argument ignored
    assert str(error.value) == "program 'allgather_matmul': a program file names its own topology ('tpu-v5e:4x4'); topology= goes with a Program"
