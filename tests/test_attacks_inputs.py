"""No output lands on a file the run reads: the module, its device map, a program's module, a study's base and their topology files."""

from __future__ import annotations

import shutil

import pytest
from conftest import ROOT
from typer.testing import CliRunner

from netsim.cli.main import app

runner = CliRunner()
HLO = ROOT / "scenarios" / "programs" / "hlo"


@pytest.fixture
def module(tmp_path, monkeypatch):
    """mlp.txt, its device map and a program file naming it (hlo: mlp.txt), copied into a fresh folder (the current one)."""
    for name in ("mlp.txt", "mlp.devices.json", "mlp.yaml"):
        shutil.copy(HLO / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _refused(args: list[str], option: str, target: str, folder) -> None:
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    out = runner.invoke(app, args)
    assert out.exit_code == 2, out.output
    assert out.output == f"error: {option} {target}: that is an input of this run; write to another file\n"
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before  # inputs untouched, nothing added


@pytest.mark.parametrize("target", ["mlp.txt", "mlp.devices.json"])
def test_a_trace_never_replaces_the_module_or_its_device_map(module, target):
    _refused(["program", "--hlo", "mlp.txt", "--topology", "tpu-v5e:2x4", "--trace", target], "--trace", target, module)
    _refused(["program", "mlp.yaml", "--trace", target], "--trace", target, module)


def test_a_timeline_never_replaces_a_module_a_program_names(module):
    (module / "mlp.txt").rename(module / "m.png")
    (module / "mlp.devices.json").rename(module / "m.devices.json")
    (module / "mlp.yaml").write_text((module / "mlp.yaml").read_text().replace("hlo: mlp.txt", "hlo: m.png"))
    _refused(["timeline", "mlp.yaml", "-o", "m.png"], "--output", "m.png", module)
