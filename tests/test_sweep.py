"""Sweeps: rows equal the simulations, same study same bytes (processes, Dask), failures
recorded, interrupts keep rows, --resume skips them, progress bar only on a terminal, plots
show the table's numbers."""

from __future__ import annotations

import functools
import re
import signal
import struct
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import ROOT
from typer.testing import CliRunner

import netsim
from netsim.analysis.why import analyse
from netsim.cli.main import app
from netsim.studies.files import study_from_data
from netsim.studies.plots import plot_results
from netsim.studies.sweep import RESULTS_FILE, columns, read_results

runner = CliRunner()
B, ALPHA = 45e9, 1e-6

STUDY = {
    "name": "small",
    "base": {"topology": "ring4", "collective": {"op": "all_gather"}, "input": {"bytes_per_device": "1 KiB", "dtype": "float32"}},
    "grid": {
        "collective.axis_index_groups": {"all": None, "pairs": [[0, 1], [2, 3]], "overlap": [[0, 1], [1, 2]]},
        "algorithm": ["ring", "bidirectional_ring"],
        "input.bytes_per_device": ["1 KiB", "64 KiB"],
    },
}
OVERLAP_ERROR = "collective.axis_index_groups: axis_index_groups must cover every device exactly once; device 1 appears more than once in [[0, 1], [1, 2]]"


@pytest.fixture(scope="module")
def small():
    return study_from_data(STUDY, "small.yaml")


@pytest.fixture(scope="module")
def reference(small, tmp_path_factory):
    """The small study run in this process: results.csv bytes and the table."""
    out = tmp_path_factory.mktemp("reference")
    table = netsim.sweep(small, output=out, workers=1)
    return (out / RESULTS_FILE).read_bytes(), table


def write_study(tmp_path, data=STUDY):
    import yaml

    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_rows_are_the_simulations(small, reference):
    _, table = reference
    assert list(table.columns) == columns(small)
    assert list(table["point"]) == list(range(12))
    ok = table[table["error"].isna()]
    assert len(ok) == 8
    for row in ok.to_dict("records"):
        point = small.points[row["point"]]
        result = netsim.simulate(point.scenario())
        assert row["time_s"] == result.time  # bit for bit through the CSV
        assert row["algbw_Bps"] == result.algbw
        assert row["busbw_Bps"] == result.busbw
        assert (row["n_devices"], row["group_size"], row["bytes_per_device"], row["total_bytes"]) == (
            4,
            result.group_size,
            result.bytes_per_device,
            result.total_bytes,
        )
        assert row["verified"]
        assert row["algorithm"] == dict(point.labels)["algorithm"]
        assert row["estimate_s"] == analyse(result).estimate.time_s
        assert row["ratio"] == result.time / analyse(result).estimate.time_s
        assert (row["why"] if isinstance(row["why"], str) else "") == analyse(result).why
    full = ok[ok["collective.axis_index_groups"] == "all"]
    assert len(full) == 4
    for row in full.to_dict("records"):
        s = row["bytes_per_device"]
        bandwidth_term = 3 * s / B if row["algorithm"] == "ring" else 3 * s / (2 * B)
        assert row["time_s"] == pytest.approx(3 * ALPHA + bandwidth_term, rel=1e-9)
        assert row["estimate_s"] == pytest.approx(3 * ALPHA + bandwidth_term, rel=1e-12)
        assert row["ratio"] == pytest.approx(1.0, rel=1e-9)
        assert row["regime"] == ("latency-bound" if bandwidth_term < 3 * ALPHA else "bandwidth-bound")
    assert list(full["regime"]) == ["latency-bound", "bandwidth-bound", "latency-bound", "latency-bound"]


def test_a_failing_point_is_recorded_and_the_sweep_goes_on(reference):
    _, table = reference
    failed = table[table["error"].notna()]
    assert list(failed["collective.axis_index_groups"]) == ["overlap"] * 4
    assert set(failed["error"]) == {OVERLAP_ERROR}
    assert failed["time_s"].isna().all()
    assert table[table["error"].isna()]["time_s"].notna().all()


def test_processes_and_in_process_give_the_same_bytes_every_time(small, reference, tmp_path):
    csv_bytes, _ = reference
    netsim.sweep(small, output=tmp_path / "a", workers=2)
    netsim.sweep(small, output=tmp_path / "b", workers=1)
    assert (tmp_path / "a" / RESULTS_FILE).read_bytes() == csv_bytes
    assert (tmp_path / "b" / RESULTS_FILE).read_bytes() == csv_bytes


def test_dask_local_cluster_gives_the_same_rows_bit_for_bit(small, reference, tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    csv_bytes, table = reference
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        from_cluster = netsim.sweep(small, output=tmp_path / "cluster", scheduler=cluster)
        with distributed.Client(cluster) as client:
            from_client = netsim.sweep(small, scheduler=client)
            assert client.status == "running"  # a client we were given stays open
    assert (tmp_path / "cluster" / RESULTS_FILE).read_bytes() == csv_bytes
    assert from_cluster.equals(table)
    assert from_client.equals(table)
    assert np.array_equal(from_cluster["time_s"].to_numpy().view(np.uint64), table["time_s"].to_numpy().view(np.uint64))


def test_the_table_is_the_csv_read_back(tmp_path, reference):
    csv_bytes, table = reference
    (tmp_path / "r.csv").write_bytes(csv_bytes)
    assert read_results(tmp_path / "r.csv").equals(table)


def test_resume_skips_finished_rows(small, reference, tmp_path):
    csv_bytes, _ = reference
    lines = csv_bytes.decode().splitlines(keepends=True)
    header, rows = lines[0], lines[1:]
    # rows 5 and 2 finished (in the order they finished), and row 7 cut short by the interrupt
    (tmp_path / RESULTS_FILE).write_text(header + rows[5] + rows[2] + rows[7][:20])
    calls = []
    table = netsim.sweep(small, output=tmp_path, resume=True, workers=1, progress=lambda done, total: calls.append((done, total)))
    assert calls[0] == (2, 12)
    assert calls[-1] == (12, 12)
    assert len(calls) == 11  # the start, then the 10 points that ran
    assert (tmp_path / RESULTS_FILE).read_text() == csv_bytes.decode()
    assert read_results(tmp_path / RESULTS_FILE).equals(table)


def test_resume_refuses_the_results_of_another_study(small, reference, tmp_path):
    csv_bytes, _ = reference
    text = csv_bytes.decode().replace("\n0,all,ring,1 KiB,", "\n0,all,bidirectional_ring,1 KiB,")
    (tmp_path / RESULTS_FILE).write_text(text)
    with pytest.raises(ValueError, match=r"row 2, column algorithm: 'bidirectional_ring', but point 0 of the study has 'ring'; remove results.csv"):
        netsim.sweep(small, output=tmp_path, resume=True, workers=1)
    (tmp_path / RESULTS_FILE).write_text("point,something,else\n")
    result = runner.invoke(app, ["sweep", str(write_study(tmp_path)), "--output", str(tmp_path), "--resume"])
    assert result.exit_code == 2
    assert (
        result.output.strip() == f"error: {tmp_path / RESULTS_FILE}: row 1: its columns are not the columns of study 'small'; "
        "remove results.csv (or that row) to run the point afresh, or choose another output folder"
    )


def test_an_interrupt_keeps_the_finished_rows_and_resume_finishes(small, reference, tmp_path):
    csv_bytes, _ = reference

    def interrupt_after_three(done, total):
        if done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        netsim.sweep(small, output=tmp_path, workers=1, progress=interrupt_after_three)
    assert (tmp_path / RESULTS_FILE).read_bytes() == b"".join(csv_bytes.splitlines(keepends=True)[:4])
    netsim.sweep(small, output=tmp_path, workers=1, resume=True)
    assert (tmp_path / RESULTS_FILE).read_bytes() == csv_bytes


def test_argument_errors_name_the_values(small, tmp_path):
    with pytest.raises(ValueError, match="workers must be a whole number >= 1, got 0"):
        netsim.sweep(small, workers=0)
    with pytest.raises(ValueError, match=r"give workers .* or a Dask scheduler, not both"):
        netsim.sweep(small, workers=2, scheduler="tcp://127.0.0.1:1")
    with pytest.raises(ValueError, match="resume needs an output directory"):
        netsim.sweep(small, resume=True)
    (tmp_path / "file").write_text("")
    with pytest.raises(ValueError, match="is a file, not a directory"):
        netsim.sweep(small, output=tmp_path / "file")
    with pytest.raises(ValueError, match="study must be a Study, a path to a study file or a mapping, got int"):
        netsim.sweep(3)


def test_dask_is_imported_only_for_a_scheduler():
    code = (
        "import sys, netsim\n"
        f"netsim.sweep({STUDY!r}, workers=1)\n"
        "assert 'dask' not in sys.modules and 'distributed' not in sys.modules, 'dask imported'\n"
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr


# --- the command line ---------------------------------------------------------------


def sweep_cli(tmp_path, *args):
    return runner.invoke(app, ["sweep", str(write_study(tmp_path)), "--output", str(tmp_path / "out"), "--workers", "1", *args])


def test_cli_writes_results_plots_and_a_summary(tmp_path, reference, monkeypatch):
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    csv_bytes, _ = reference
    result = sweep_cli(tmp_path)
    assert result.exit_code == 1, result.output  # some points failed
    assert result.stderr == f"error: 4 of 12 points failed (see the error column of {tmp_path / 'out' / RESULTS_FILE})\n"
    assert (tmp_path / "out" / RESULTS_FILE).read_bytes() == csv_bytes
    assert "netsim sweep: small" in result.stdout
    assert "12 points: 8 ok, 4 failed" in result.stdout
    assert re.search(r"^#\d+ failed: collective.axis_index_groups: axis_index_groups must cover", result.stdout, flags=re.M)
    assert "time_vs_payload.png" in result.stdout
    assert "━" not in result.stderr  # not a terminal: no progress bar


def test_cli_progress_bar_on_a_terminal_and_quiet(tmp_path, monkeypatch):
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich: stderr is a terminal
    monkeypatch.setenv("TTY_INTERACTIVE", "1")
    monkeypatch.setenv("COLUMNS", "120")
    shown = sweep_cli(tmp_path)
    assert shown.exit_code == 1, shown.output
    bar = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown.stderr)  # without colours and cursor moves
    assert "sweep small" in bar
    assert " 0/12 points" in bar
    assert "12/12 points" in bar
    assert "ETA" in bar
    assert "━━━━" in bar
    quiet = sweep_cli(tmp_path, "--quiet", "--force")
    assert quiet.exit_code == 1, quiet.output
    assert quiet.stderr.startswith("error: 4 of 12 points failed")
    assert "12 points: 8 ok, 4 failed" in quiet.stdout


def test_cli_refuses_workers_with_a_scheduler(tmp_path):
    result = runner.invoke(app, ["sweep", str(write_study(tmp_path)), "-o", str(tmp_path / "out"), "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"])
    assert result.exit_code == 2
    assert result.output.strip() == "error: give workers (local processes) or a Dask scheduler, not both: the cluster has its own workers"
    assert not (tmp_path / "out").exists()


# --- plots --------------------------------------------------------------------------


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_plots_are_pngs_showing_the_csv_columns(reference, tmp_path):
    _, table = reference
    plots = plot_results(table, tmp_path, name="small")
    # layout and algorithm are the payload plot's lines already: no bar charts of them
    assert [p.path.name for p in plots] == ["time_vs_payload.png", "busbw_vs_payload.png"]
    ok = table[table["error"].isna()].set_index("point")
    for plot in plots:
        assert plot.path.stat().st_size > 10_000
        width, height = png_size(plot.path)
        assert 600 <= width <= 2000 and 400 <= height <= 1000
        assert plot.title.startswith("small: ") and plot.xlabel and plot.ylabel
        measured = [s for s in plot.series if not s.closed_form]
        # every good row is plotted exactly once, failed rows never
        assert sorted(p for s in measured for p in s.points) == sorted(ok.index)
        for series in plot.series:
            rows = ok.loc[series.points]
            if plot.kind == "time_by_field":
                column = plot.xlabel
                assert series.x == list(rows[column])
            else:
                assert series.x == [float(v) for v in rows["total_bytes"]]
            if series.closed_form:
                assert series.y == [v / 1e-6 for v in rows["estimate_s"]]
            elif plot.kind == "busbw_vs_payload":
                assert series.y == [v / 1e9 for v in rows["busbw_Bps"]]
            else:
                assert series.y == [v / 1e-6 for v in rows["time_s"]]
    lines = {s.label: s for s in plots[0].series}
    assert set(lines) >= {"axis_index_groups=all, ring", "axis_index_groups=pairs, bidirectional_ring"}


def test_time_vs_devices_has_a_line_per_total_payload(tmp_path):
    data = {
        "name": "scaling",
        "base": {"topology": "ring4", "collective": {"op": "all_gather"}, "input": {"bytes_per_device": "1 KiB"}},
        "grid": {
            "topology": ["ring4", "ring8", "ring16", "ring4", "ring8", "ring16"],
            "input.bytes_per_device": ["64 B", "32 B", "16 B", "256 KiB", "128 KiB", "64 KiB"],
            "data": ["values"] * 3 + ["none"] * 3,  # timing-only: no line of its own
        },
        "zip": True,
    }
    table = netsim.sweep(data, workers=1)
    assert list(table["verified"]) == [True] * 3 + [False] * 3
    plots = plot_results(table, tmp_path, kinds=["time_vs_devices"], name="scaling")
    assert [p.kind for p in plots] == ["time_vs_devices"]
    measured = [s for s in plots[0].series if not s.closed_form]
    assert [s.label for s in measured] == ["S = 256 B", "S = 1 MiB"]
    assert [s.x for s in measured] == [[4.0, 8.0, 16.0]] * 2
    assert [s.points for s in measured] == [[0, 1, 2], [3, 4, 5]]
    assert measured[1].y == [t / 1e-6 for t in table["time_s"][3:]]


def test_ctrl_c_on_a_real_sweep_keeps_the_rows_and_resume_finishes(tmp_path):
    # Rows are written in point order: enough points that a slow first point on a busy machine
    # cannot let the whole sweep finish before the interrupt arrives.
    points = 64
    data = {
        "name": "ctrl_c",
        "base": {"topology": {"kind": "ring", "dims": [32]}, "collective": {"op": "all_gather"}, "input": {"bytes_per_device": "4 KiB"}},
        "grid": {"seed": list(range(points))},
    }
    study, out = write_study(tmp_path, data), tmp_path / "out"
    command = [sys.executable, "-m", "netsim", "sweep", str(study), "--output", str(out), "--workers", "2"]
    restore = functools.partial(signal.signal, signal.SIGINT, signal.SIG_DFL)  # a test run in the background ignores SIGINT: its children would too
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=restore)
    results = out / RESULTS_FILE
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not results.exists() or results.read_text().count("\n") < 3):
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130
    kept = results.read_text().splitlines(keepends=True)[1:]
    assert 2 <= len(kept) < points, "the sweep finished before it could be interrupted"
    assert stderr.strip() == f"error: interrupted: {len(kept)} of {points} points kept in {results}; run again with --resume to finish"
    assert [int(line.split(",")[0]) for line in kept] == sorted(int(line.split(",")[0]) for line in kept)
    done = subprocess.run([*command, "--resume", "--quiet"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert f"{points} points: {points} ok, 0 failed, {len(kept)} kept from an earlier run" in done.stdout
    final = read_results(results)
    assert list(final["point"]) == list(range(points))
    assert set(kept) <= set(results.read_text().splitlines(keepends=True))
    assert np.allclose(final["ratio"], 1.0, rtol=1e-9, atol=0)  # every ring of 32 takes its closed form: nothing half-written


def test_cli_runs_on_a_dask_scheduler_address(tmp_path, reference):
    distributed = pytest.importorskip("dask.distributed")
    csv_bytes, _ = reference
    cluster_options = {"n_workers": 2, "threads_per_worker": 1, "processes": False, "dashboard_address": None, "protocol": "tcp", "host": "127.0.0.1"}
    with distributed.LocalCluster(**cluster_options) as cluster:
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        result = runner.invoke(app, ["sweep", str(write_study(tmp_path)), "-o", str(tmp_path / "out"), "--scheduler", cluster.scheduler_address, "-q"])
    assert result.exit_code == 1, result.output  # the study's overlapping groups fail
    assert (tmp_path / "out" / RESULTS_FILE).read_bytes() == csv_bytes


def test_a_bug_in_a_point_is_recorded_as_internal_and_the_cli_exits_3(tmp_path, monkeypatch):
    real = netsim.collectives.simulate

    def flaky(scenario):
        if scenario.algorithm == "bidirectional_ring":
            raise RuntimeError("boom")
        return real(scenario)

    monkeypatch.setattr(sys.modules["netsim.studies.sweep"], "simulate", flaky)  # the module: netsim.studies.sweep is the function
    result = sweep_cli(tmp_path, "-q")
    assert result.exit_code == 3
    table = read_results(tmp_path / "out" / RESULTS_FILE)
    assert list(table[table["algorithm"] == "bidirectional_ring"]["error"].str[:60].unique()) == ["internal error: RuntimeError: boom", OVERLAP_ERROR[:60]]
    assert "12 points: 4 ok, 8 failed" in result.stdout
    csv_path = tmp_path / "out" / RESULTS_FILE
    assert result.stderr.strip() == f"error: 4 point(s) hit an internal error in netsim (see the error column of {csv_path}); please report it"


def test_cli_bad_workers_is_one_line(tmp_path):
    result = runner.invoke(app, ["sweep", str(write_study(tmp_path)), "-o", str(tmp_path / "out"), "--workers", "0"])
    assert result.exit_code == 2
    assert result.output.strip() == "error: workers must be a whole number >= 1, got 0"
    assert not (tmp_path / "out").exists()
