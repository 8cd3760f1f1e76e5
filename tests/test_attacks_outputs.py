"""Attacks on where netsim writes: outputs go only to regular files or new (or forced) folders
the user named, never over the run's inputs or each other, whole or not at all, with the umask's permissions."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys

import pytest
from conftest import ROOT
from typer.testing import CliRunner

from netsim.cli import files as run_files
from netsim.cli.main import app
from netsim.cli.output import OUTPUT_FILES
from netsim.destinations import MANIFEST, StagedFolder, check_file, staged_file

runner = CliRunner()
SCENARIO = (ROOT / "scenarios" / "allgather_ring8_latency_bound.yaml").read_text(encoding="utf-8")


@pytest.fixture
def work(tmp_path, monkeypatch):
    (tmp_path / "scenario.yaml").write_text(SCENARIO, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(*args: str):
    return runner.invoke(app, ["run", "scenario.yaml", *args])


def test_output_dot_holding_the_scenario_is_refused_even_with_force(work):
    for extra in ([], ["--force"]):
        out = _run("--output", ".", *extra)
        assert out.exit_code == 2
        assert out.output == "error: --output .: the folder holds scenario.yaml, an input of this run and would be replaced whole; name a new folder\n"
    assert (work / "scenario.yaml").read_text(encoding="utf-8") == SCENARIO
    assert sorted(os.listdir(work)) == ["scenario.yaml"]


def test_output_folder_holding_the_topology_file_is_refused_with_force(work):
    (work / "topo").mkdir()
    (work / "topo" / "ring.yaml").write_text("kind: ring\ndims: [4]\n", encoding="utf-8")
    (work / "scenario.yaml").write_text(SCENARIO.replace("topology: ring8", "topology: topo/ring.yaml").replace("bytes_per_device: 8 B", "shape: [2]"))
    out = _run("--output", "topo", "--force")
    assert out.exit_code == 2, out.output
    assert "the folder holds ring.yaml, which netsim did not write" in out.output  # refused before the topology is even read
    assert (work / "topo" / "ring.yaml").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--output", ""], "error: --output '': give a folder name such as run1\n"),
        (["--trace", ""], "error: --trace '': give a file name such as run.json\n"),
        (["--trace", "scenario.yaml"], "error: --trace scenario.yaml: that is an input of this run; write to another file\n"),
    ],
)
def test_empty_names_and_the_input_itself_are_refused(work, args, message):
    out = _run(*args)
    assert (out.exit_code, out.output) == (2, message)
    assert sorted(os.listdir(work)) == ["scenario.yaml"]


def test_trace_inside_the_output_folder_is_refused(work):
    (work / "out").mkdir()
    out = _run("--output", "out", "--trace", "out/result.json")
    assert out.exit_code == 2
    assert "inside the --output folder out" in out.output
    assert os.listdir(work / "out") == []


def test_trace_onto_a_fifo_keeps_the_fifo(work):
    os.mkfifo(work / "pipe")
    out = _run("--trace", "pipe")
    assert out.exit_code == 2
    assert "not a regular file" in out.output
    assert stat.S_ISFIFO(os.lstat(work / "pipe").st_mode)


def test_a_character_device_is_never_a_trace_destination():
    with pytest.raises(ValueError, match="not a regular file"):
        check_file("--trace", os.devnull)
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def _disk_full(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/somewhere/.netsim-staged")


def test_a_trace_failing_after_the_output_leaves_neither_and_names_the_trace(work, monkeypatch):
    monkeypatch.setattr(run_files, "save_trace", _disk_full)
    out = _run("--output", "out", "--trace", "t.json")
    assert (out.exit_code, out.output) == (2, "error: cannot write t.json: No space left on device\n")
    assert sorted(os.listdir(work)) == ["scenario.yaml"]


def test_a_failure_after_the_output_removes_the_parents_it_created(work, monkeypatch):
    monkeypatch.setattr(run_files, "save_trace", _disk_full)
    out = _run("--output", "new/deeper/out", "--trace", "t.json")
    assert out.exit_code == 2
    assert sorted(os.listdir(work)) == ["scenario.yaml"]


def test_a_failure_with_force_keeps_the_old_folder_whole(work, monkeypatch):
    assert _run("--output", "out").exit_code == 0
    before = {p: (work / "out" / p).read_bytes() for p in OUTPUT_FILES}
    monkeypatch.setattr(run_files, "save_trace", _disk_full)
    out = _run("--output", "out", "--trace", "t.json", "--force")
    assert out.exit_code == 2
    assert {p: (work / "out" / p).read_bytes() for p in OUTPUT_FILES} == before
    assert sorted(os.listdir(work)) == ["out", "scenario.yaml"]


def test_a_folder_named_as_an_output_file_is_not_netsims_and_is_kept_even_with_force(work):
    (work / "out" / "scenario.yaml").mkdir(parents=True)
    (work / "out" / "scenario.yaml" / "draft.yaml").write_text("mine", encoding="utf-8")
    for extra in ([], ["--force"]):
        out = _run("--output", "out", *extra)
        assert (out.exit_code, out.output) == (
            2,
            "error: --output out: the folder holds scenario.yaml/, which netsim did not write;"
            " --force replaces only what netsim wrote: move it out of out, or name a new folder\n",
        )
    assert (work / "out" / "scenario.yaml" / "draft.yaml").read_text(encoding="utf-8") == "mine"


def test_a_swapped_folder_can_be_put_back(tmp_path):
    old = tmp_path / "out"
    old.mkdir()
    (old / "result.json").write_text("old")
    staged = StagedFolder(old)
    (staged.path / "b").write_text("new")
    staged.commit()
    assert sorted(os.listdir(old)) == [MANIFEST, "b"]
    staged.undo()
    assert sorted(os.listdir(old)) == ["result.json"] and sorted(os.listdir(tmp_path)) == ["out"]


@pytest.mark.parametrize("mask", [0o022, 0o077, 0o002])
def test_outputs_respect_the_umask(work, mask):
    previous = os.umask(mask)
    try:
        assert _run("--output", "out", "--trace", "t.json").exit_code == 0
        timeline = runner.invoke(app, ["timeline", "scenario.yaml", "-o", "t.png"])
        assert timeline.exit_code == 0, timeline.output
    finally:
        os.umask(previous)
    assert stat.S_IMODE(os.stat(work / "out").st_mode) == 0o777 & ~mask
    for path in [work / "t.json", work / "t.png", *(work / "out" / name for name in OUTPUT_FILES)]:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~mask, path


@pytest.mark.parametrize("command", ["timeline", "animate"])
@pytest.mark.parametrize(
    "target, message",
    [
        ("missing/x.png", "error: --output missing/x.png: the folder missing does not exist; create it first\n"),
        ("adir.png", "error: --output adir.png: not a regular file (a device, a FIFO or a folder); give a file name such as run.png\n"),
    ],
)
def test_drawings_into_a_missing_folder_or_onto_a_folder_are_user_errors(work, command, target, message):
    (work / "adir.png").mkdir()
    (work / "adir.gif").mkdir()
    target = target.replace(".png", ".gif") if command == "animate" else target
    out = runner.invoke(app, [command, "scenario.yaml", "-o", target])
    assert (out.exit_code, out.output) == (2, message.replace(".png", ".gif") if command == "animate" else message)


def test_a_drawing_onto_a_full_disk_is_a_user_error_and_leaves_nothing(work, monkeypatch):
    import netsim.teaching.timeline as timeline

    monkeypatch.setattr(timeline, "save_timeline", _disk_full)
    out = runner.invoke(app, ["timeline", "scenario.yaml", "-o", "t.png"])
    assert (out.exit_code, out.output) == (2, "error: cannot write t.png: No space left on device\n")
    assert sorted(os.listdir(work)) == ["scenario.yaml"]


def test_an_animation_of_2000_frames_is_refused_up_front(tmp_path):
    out = runner.invoke(app, ["animate", str(ROOT / "scenarios" / "allgather_ring8.yaml"), "-o", str(tmp_path / "a.gif"), "--frames", "2000"])
    assert out.exit_code == 2
    assert "Invalid value for '--frames': Input should be less than or equal to 300" in out.output
    assert not (tmp_path / "a.gif").exists()


def test_what_a_killed_run_staged_is_removed_by_the_next_write_and_a_live_runs_is_kept(tmp_path):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True).stdout.strip()
    killed = tmp_path / f".out.netsim-new-{gone}-abc123"
    killed.mkdir()
    (killed / "result.json").write_text("{}", encoding="utf-8")
    live = tmp_path / f".out.netsim-old-{os.getpid()}-def456"  # a run still going (this process)
    live.mkdir()
    out = runner.invoke(app, ["run", str(ROOT / "scenarios" / "allgather_ring8.yaml"), "-o", str(tmp_path / "out")])
    assert out.exit_code == 0, out.output
    assert not killed.exists() and live.is_dir()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [".netsim-files", "devices.csv", "links.csv", "result.json", "scenario.yaml"]


# --- --force replaces only what netsim wrote (issue 30, data loss) ----------------------


def test_force_onto_a_folder_holding_files_netsim_never_wrote_refuses_and_deletes_nothing(work):
    (work / "d" / "figures").mkdir(parents=True)
    (work / "d" / "thesis.tex").write_text("months of work", encoding="utf-8")
    (work / "d" / "figures" / "f.pdf").write_bytes(b"%PDF")
    (work / "d" / "result.json").write_text("{}", encoding="utf-8")  # an earlier run's: netsim's
    out = _run("--output", "d", "--force", "--trace", "t.json")
    assert (out.exit_code, out.output) == (
        2,
        "error: --output d: the folder holds 2 entries netsim did not write: figures/, thesis.tex;"
        " --force replaces only what netsim wrote: move them out of d, or name a new folder\n",
    )
    assert (work / "d" / "thesis.tex").read_text(encoding="utf-8") == "months of work"
    assert (work / "d" / "figures" / "f.pdf").read_bytes() == b"%PDF"
    assert sorted(os.listdir(work / "d")) == ["figures", "result.json", "thesis.tex"]
    assert sorted(os.listdir(work)) == ["d", "scenario.yaml"]  # no trace either: all or nothing


def test_force_replaces_an_earlier_runs_folder_and_its_manifest_says_what_netsim_wrote(work):
    assert _run("--output", "d").exit_code == 0
    assert (work / "d" / MANIFEST).read_text(encoding="utf-8").splitlines()[1:] == sorted(OUTPUT_FILES)
    assert _run("--output", "d", "--force").exit_code == 0
    assert sorted(os.listdir(work / "d")) == sorted([*OUTPUT_FILES, MANIFEST])
    (work / "d" / "notes.txt").write_text("mine", encoding="utf-8")
    out = _run("--output", "d", "--force")
    assert out.exit_code == 2 and "the folder holds notes.txt, which netsim did not write" in out.output
    assert (work / "d" / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_a_symbolic_link_in_a_forced_folder_is_refused_and_what_it_points_to_is_kept(work):
    assert _run("--output", "d").exit_code == 0
    (work / "mine.csv").write_text("mine", encoding="utf-8")
    (work / "d" / "links.csv").unlink()
    (work / "d" / "links.csv").symlink_to(work / "mine.csv")
    out = _run("--output", "d", "--force")
    assert out.output == (
        "error: --output d: the folder holds links.csv (a symbolic link), which netsim did not write;"
        " --force replaces only what netsim wrote: move it out of d, or name a new folder\n"
    )
    assert (work / "d" / "links.csv").is_symlink() and (work / "mine.csv").read_text(encoding="utf-8") == "mine"


def test_a_file_put_in_the_folder_after_the_check_stops_the_swap(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "result.json").write_text("old", encoding="utf-8")
    staged = StagedFolder(out)
    (staged.path / "result.json").write_text("new", encoding="utf-8")
    (out / "thesis.tex").write_text("mine", encoding="utf-8")  # while the run was going
    with pytest.raises(ValueError, match=r"the folder holds thesis\.tex, which netsim did not write"):
        staged.commit()
    staged.discard()
    assert sorted(os.listdir(out)) == ["result.json", "thesis.tex"] and sorted(os.listdir(tmp_path)) == ["out"]


# --- an output named through a symbolic link: the link stays, its target is written -----


@pytest.mark.parametrize(
    "args, name, head",
    [
        (["run", "scenario.yaml", "--trace"], "t.json", b'{"traceEvents"'),
        (["program", str(ROOT / "scenarios" / "programs" / "allgather_matmul.yaml"), "--trace"], "p.json", b'{"traceEvents"'),
        (["timeline", "scenario.yaml", "-o"], "t.png", b"\x89PNG"),
        (["animate", "scenario.yaml", "--frames", "3", "-o"], "a.gif", b"GIF8"),
    ],
)
def test_an_output_file_named_through_a_symbolic_link_is_written_where_the_link_points(work, args, name, head):
    (work / "kept").mkdir()
    (work / "kept" / name).write_text("old", encoding="utf-8")
    (work / name).symlink_to(os.path.join("kept", name))
    out = runner.invoke(app, [*args, name])
    assert out.exit_code == 0, out.output
    assert (work / name).is_symlink() and os.readlink(work / name) == os.path.join("kept", name)
    assert (work / "kept" / name).read_bytes().startswith(head)
    assert sorted(os.listdir(work)) == sorted([name, "kept", "scenario.yaml"]) and os.listdir(work / "kept") == [name]  # nothing staged left


def test_a_dangling_link_makes_its_target_and_one_into_a_missing_folder_is_refused(work):
    (work / "t.json").symlink_to("made.json")
    assert _run("--trace", "t.json").exit_code == 0
    assert (work / "t.json").is_symlink() and (work / "made.json").read_bytes().startswith(b'{"traceEvents"')
    (work / "u.json").symlink_to(os.path.join("missing", "u.json"))
    out = _run("--trace", "u.json")
    real = work.resolve()
    message = f"error: --trace u.json (a symbolic link to {real / 'missing' / 'u.json'}): the folder {real / 'missing'} does not exist; create it first\n"
    assert (out.exit_code, out.output) == (2, message)
    assert (work / "u.json").is_symlink()


def test_a_link_to_an_input_is_refused_as_the_input(work):
    (work / "t.json").symlink_to("scenario.yaml")
    out = _run("--trace", "t.json")
    assert (out.exit_code, out.output) == (2, "error: --trace t.json: that is an input of this run; write to another file\n")
    assert (work / "scenario.yaml").read_text(encoding="utf-8") == SCENARIO


def test_every_staged_write_follows_a_chain_of_links(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "data.csv").write_text("old", encoding="utf-8")
    (tmp_path / "middle.csv").symlink_to(tmp_path / "real" / "data.csv")
    (tmp_path / "first.csv").symlink_to("middle.csv")
    with staged_file(tmp_path / "first.csv") as path:
        path.write_text("new", encoding="utf-8")
    assert (tmp_path / "first.csv").is_symlink() and (tmp_path / "middle.csv").is_symlink()
    assert (tmp_path / "real" / "data.csv").read_text(encoding="utf-8") == "new"
    assert sorted(os.listdir(tmp_path / "real")) == ["data.csv"]


def test_the_fixed_output_names_are_netsims_even_without_a_manifest():
    from netsim.destinations import KNOWN_OUTPUTS
    from netsim.studies.sweep import RESULTS_FILE

    assert {*OUTPUT_FILES, RESULTS_FILE} == KNOWN_OUTPUTS
