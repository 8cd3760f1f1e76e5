"""Attacks on sweeps: reused and empty output folders, edited or foreign rows to resume, too many
workers, a parent killed with -9, schedulers that never answer or speak another protocol, and grids
that expand without bound."""

from __future__ import annotations

import csv
import io
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import netsim
import netsim.studies.sweep as sweep_module
from netsim.cli.main import app
from netsim.destinations import MANIFEST, record_written
from netsim.scenario import ScenarioError
from netsim.studies.files import MAX_EXPANDED, study_from_data
from netsim.studies.resume import HASH_COLUMN
from netsim.studies.sweep import RESULTS_FILE, cores

runner = CliRunner()
BASE = {"topology": "ring4", "collective": {"op": "all_gather"}, "input": {"bytes_per_device": "64 B", "dtype": "int8"}}
STUDY = {"name": "tiny", "base": BASE, "grid": {"algorithm": ["ring", "bidirectional_ring"], "seed": [0, 1]}}


def _study(tmp_path: Path, data: dict = STUDY) -> str:
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return str(path)


def _sweep(tmp_path, *args: str):
    return runner.invoke(app, ["sweep", _study(tmp_path), "-o", str(tmp_path / "out"), "-j", "1", "-q", *args])


def test_an_existing_folder_is_refused_and_force_replaces_it_whole(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old_plot.png").write_bytes(b"old")
    record_written(tmp_path / "out", ["old_plot.png"])  # a plot an earlier sweep drew
    refused = _sweep(tmp_path)
    assert refused.exit_code == 2
    assert "the folder exists and holds files; add --force to replace it whole" in refused.output
    forced = _sweep(tmp_path, "--force")
    assert forced.exit_code == 0, forced.output
    assert not (tmp_path / "out" / "old_plot.png").exists()  # no stale plot beside the new results
    assert (tmp_path / "out" / RESULTS_FILE).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "study.yaml"]


def test_force_refuses_a_folder_holding_what_netsim_did_not_write_and_deletes_nothing(tmp_path):
    study = _study(tmp_path, {**STUDY, "grid": {"algorithm": ["ring", "bidirectional_ring"], "input.bytes_per_device": ["64 B", "128 B"]}})
    out = tmp_path / "out"

    def sweep(*args: str):
        return runner.invoke(app, ["sweep", study, "-o", str(out), "-j", "1", "-q", *args])

    assert sweep().exit_code == 0
    listed = (out / MANIFEST).read_text(encoding="utf-8").splitlines()
    assert RESULTS_FILE in listed and any(name.endswith(".png") for name in listed)  # the plots are netsim's too
    (out / "thesis.tex").write_text("months of work", encoding="utf-8")
    (out / "figures").mkdir()
    (out / "figures" / "f.pdf").write_bytes(b"%PDF")
    before = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    refused = sweep("--force")
    assert (refused.exit_code, refused.output) == (
        2,
        f"error: --output {out}: the folder holds 2 entries netsim did not write: figures/, thesis.tex;"
        f" --force replaces only what netsim wrote: move them out of {out}, or name a new folder\n",
    )
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == before
    assert (out / "thesis.tex").read_text(encoding="utf-8") == "months of work"
    (out / "thesis.tex").unlink()
    shutil.rmtree(out / "figures")
    assert sweep("--force").exit_code == 0  # only netsim's files left: replaced
    assert sweep("--resume").exit_code == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(["busbw_vs_payload.png", "time_vs_payload.png", RESULTS_FILE, MANIFEST])


def test_an_empty_folder_is_fine_and_an_empty_name_is_refused(tmp_path):
    (tmp_path / "out").mkdir()
    assert _sweep(tmp_path).exit_code == 0
    empty = runner.invoke(app, ["sweep", _study(tmp_path), "-o", ""])
    assert (empty.exit_code, empty.output) == (2, "error: --output '': give a folder name such as results\n")


def test_a_sweep_whose_points_failed_exits_1(tmp_path):
    data = {**STUDY, "grid": {"algorithm": ["ring", "no_such_algorithm"]}}
    out = runner.invoke(app, ["sweep", _study(tmp_path, data), "-o", str(tmp_path / "out"), "-j", "1", "-q"])
    assert out.exit_code == 1
    assert out.stderr == f"error: 1 of 2 points failed (see the error column of {tmp_path / 'out' / RESULTS_FILE})\n"


def _rows(tmp_path) -> tuple[list[str], list[list[str]]]:
    lines = list(csv.reader(io.StringIO((tmp_path / "out" / RESULTS_FILE).read_text(encoding="utf-8"))))
    return lines[0], lines[1:]


def _write(tmp_path, header, rows) -> None:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([header, *rows])
    (tmp_path / "out" / RESULTS_FILE).write_text(buffer.getvalue(), encoding="utf-8")


@pytest.mark.parametrize(
    "column, value, message",
    [
        ("time_s", "1.25", "row 3, column row_sha256: does not match the point's scenario and the row's cells"),
        ("point", "x" * 5000, "row 3, column point: "),
        ("seed", "7", "row 3, column seed: '7', but point 1 of the study has '1'"),
        ("error", "internal error: forged", "row 3, column row_sha256: does not match"),
    ],
)
def test_resume_refuses_edited_rows_naming_file_row_and_column(tmp_path, column, value, message):
    assert _sweep(tmp_path).exit_code == 0
    header, rows = _rows(tmp_path)
    rows[1][header.index(column)] = value
    _write(tmp_path, header, rows)
    out = _sweep(tmp_path, "--resume")
    assert out.exit_code == 2
    line = out.output.strip()
    assert len(line.splitlines()) == 1 and len(line) < 600
    assert line.startswith(f"error: {tmp_path / 'out' / RESULTS_FILE}: {message}")


def test_resume_refuses_rows_computed_from_another_base(tmp_path):
    assert _sweep(tmp_path).exit_code == 0
    changed = {**STUDY, "base": {**BASE, "input": {"bytes_per_device": "128 B", "dtype": "int8"}}}
    out = runner.invoke(app, ["sweep", _study(tmp_path, changed), "-o", str(tmp_path / "out"), "-j", "1", "-q", "--resume"])
    assert out.exit_code == 2
    assert "row 2, column row_sha256: does not match the point's scenario" in out.output


def test_resume_keeps_untouched_rows_and_reruns_only_missing_ones(tmp_path):
    assert _sweep(tmp_path).exit_code == 0
    header, rows = _rows(tmp_path)
    assert all(len(row[header.index(HASH_COLUMN)]) == 64 for row in rows)
    _write(tmp_path, header, rows[:2])
    out = _sweep(tmp_path, "--resume")
    assert out.exit_code == 0, out.output
    assert _rows(tmp_path) == (header, rows)


def test_workers_are_capped(tmp_path):
    with pytest.raises(ValueError, match=rf"workers 1000 is more than 4 per core on this machine \({cores()} cores\)"):
        netsim.sweep(STUDY, workers=1000)
    assert sweep_module._worker_count(None, 1000) == cores()
    assert sweep_module._worker_count(None, 1) == 1


_ORPHANS = """
import os, sys, time
import netsim, netsim.studies.sweep as sw
def stuck(point):
    time.sleep(120)
sw.run_point = stuck
print(os.getpid(), flush=True)
netsim.sweep({study!r}, workers=2)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signals are Linux's")
def test_workers_die_with_a_parent_killed_with_sigkill():
    parent = subprocess.Popen([sys.executable, "-c", _ORPHANS.format(study=STUDY)], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(parent.stdout.readline())
        children: list[int] = []
        deadline = time.monotonic() + 60
        while len(children) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
            children = [int(c) for t in os.listdir(f"/proc/{pid}/task") for c in Path(f"/proc/{pid}/task/{t}/children").read_text().split()]
        assert len(children) >= 2
        os.kill(pid, signal.SIGKILL)
        parent.wait(timeout=30)
        deadline = time.monotonic() + 20
        while any(Path(f"/proc/{c}").exists() and "Z" not in Path(f"/proc/{c}/stat").read_text().split()[2] for c in children):
            assert time.monotonic() < deadline, "workers outlived their parent"
            time.sleep(0.2)
    finally:
        if parent.poll() is None:
            parent.kill()


@pytest.mark.parametrize("speaks", [b"", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" + b"\xff" * 64])
def test_a_silent_or_foreign_scheduler_fails_within_its_timeout(monkeypatch, speaks):
    pytest.importorskip("dask.distributed")
    monkeypatch.setattr(sweep_module, "SCHEDULER_TIMEOUT_S", 1.0)
    server = socket.create_server(("127.0.0.1", 0))
    connections = []

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            connections.append(connection)
            if speaks:
                connection.sendall(speaks)

    threading.Thread(target=serve, daemon=True).start()
    started = time.monotonic()
    try:
        with pytest.raises(OSError, match=r"Dask scheduler tcp://127\.0\.0\.1:\d+.*is it a Dask scheduler, and running\?"):
            netsim.sweep(STUDY, scheduler=f"tcp://127.0.0.1:{server.getsockname()[1]}")
    finally:
        server.close()
        for connection in connections:
            connection.close()
    assert time.monotonic() - started < 1.0 + 5 + 5  # the timeout, the grace, and some slack


def test_study_expansion_is_bounded_before_anything_is_built():
    faults = [{"link": [0, 1], "state": "down"}] * 3000
    data = {"name": "big", "base": {**BASE, "faults": faults}, "grid": {"seed": list(range(20_000))}}
    started = time.monotonic()
    with pytest.raises(ScenarioError, match=rf"grid: 20000 points of up to \d+ values each is more than a study expands to \({MAX_EXPANDED} values\)"):
        study_from_data(data, "big.yaml")
    assert time.monotonic() - started < 10


def test_long_labels_must_be_named():
    groups = [[list(range(4))] * 60]
    with pytest.raises(ScenarioError, match=r"grid.collective.axis_index_groups: a value's label is longer than 200 characters"):
        study_from_data({"name": "s", "base": BASE, "grid": {"collective.axis_index_groups": groups}}, "s.yaml")


def test_a_study_given_as_its_own_base_is_named(tmp_path):
    path = tmp_path / "self.yaml"
    path.write_text("name: s\nbase: self.yaml\ngrid: {seed: [0, 1]}\n", encoding="utf-8")
    out = runner.invoke(app, ["sweep", str(path), "-o", str(tmp_path / "out")])
    assert (out.exit_code, out.output) == (
        2,
        f"error: {path}: base: names this study file itself; give the scenario file the points start from, or the scenario inline\n",
    )
