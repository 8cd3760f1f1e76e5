"""HLO modules' names and the compiler's strategies: what played each collective is said truly."""

from __future__ import annotations

import pytest
from conftest import ROOT

from netsim.analysis.hlo_stats import collectives
from netsim.programs.hlo import hlo_from_text
from netsim.programs.hlo.devices import load_device_map
from netsim.programs.hlo.run import run_hlo

NOT_A_COUNT = "is not a count of rings; netsim plays its own algorithm"
MODULE = ROOT / "scenarios" / "programs" / "hlo" / "tpu" / "v5e_4x4" / "mlp.txt"


@pytest.fixture(scope="module")
def played_by_the_compiler() -> dict:
    (entry,) = collectives(run_hlo(MODULE, "tpu-v5e:4x4", compare=False))
    return entry


@pytest.mark.parametrize(
    "edit, note",
    [
        (("StrategyRing{colors:1", "StrategyRing{colors:0"), f"StrategyRing{{colors:0 phases:1}}: colors:0 {NOT_A_COUNT}"),
        (("StrategyRing{colors:1", "StrategyRing{colors:-1"), f"StrategyRing{{colors:-1 phases:1}}: colors:-1 {NOT_A_COUNT}"),
        (('"strategy":"StrategyRing"', '"strategy":"StrategyHypercube"'), None),
    ],
)
def test_a_collective_the_compilers_strategy_does_not_play_says_netsim_played_it(played_by_the_compiler, edit, note):
    text = MODULE.read_text()
    assert edit[0] in text
    changed = text.replace(*edit)
    if "Hypercube" in edit[1]:
        changed = changed.replace("StrategyRing{", "StrategyHypercube{").replace('"emitter":"RotatedPincerShortEmitter"', '"emitter":"HypercubeEmitter"')
    (entry,) = collectives(run_hlo(hlo_from_text(changed), "tpu-v5e:4x4", device_map=load_device_map(MODULE, 16), compare=False))
    assert played_by_the_compiler["played_with"] == "compiler"
    assert entry["played_with"] == "netsim"
    if note is not None:
        assert entry["note"] == note


def test_a_huge_instruction_name_is_echoed_cut_and_tables_wrap_between_cells(tmp_path):
    from typer.testing import CliRunner

    from netsim.cli.main import app

    hlo = ROOT / "scenarios" / "programs" / "hlo"
    name = "all-reduce." + "n" * 200_000 + ".7"
    (tmp_path / "m.txt").write_text((hlo / "mlp.txt").read_text().replace("%all-reduce ", f"%{name} "))
    (tmp_path / "m.devices.json").write_text((hlo / "mlp.devices.json").read_text())
    runner = CliRunner()
    out = runner.invoke(app, ["program", "--hlo", str(tmp_path / "m.txt"), "--topology", "tpu-v5e:2x4"], env={"COLUMNS": "80"})
    assert out.exit_code == 0, out.output[:500]
    assert len(out.output) < 10_000  # it was 828 kB: the name whole, folded over the table
    assert max(len(line) for line in out.output.splitlines()) <= 80
    assert "  all-reduce.nnnnnnnnnnnnnnnnnnn…nnnnnnnnnnnnnnnnnnnnnnnnnnn.7 (multiaxis" in out.output  # 60 characters, its end kept
    compared = runner.invoke(app, ["program", str(hlo / "tpu" / "tpu7x_2x2x1" / "fsdp_matmul.yaml")], env={"COLUMNS": "80"})
    rows = [line for line in compared.output.splitlines() if "bf16[" in line]
    assert rows and all(line.rstrip().endswith("lower") and line.count(" us") == 3 for line in rows), rows  # numbers whole, no cell cut
    assert all(len(line) <= 80 for line in compared.output.splitlines())


def test_texts_say_what_they_list_and_name_the_compilers_strategy_in_words(tmp_path):
    from typer.testing import CliRunner

    from netsim.cli.main import app

    hlo = ROOT / "scenarios" / "programs" / "hlo"
    runner = CliRunner()
    text = (hlo / "mlp.txt").read_text()
    fusion = "%broadcast_maximum_fusion = f32[128,1024]{1,0} fusion(%ynn_fusion.1), kind=kLoop, calls=%fused_computation.2,"
    assert fusion in text
    (tmp_path / "m.txt").write_text(text.replace(fusion, "%broadcast_maximum_fusion = f32[128,1024]{1,0} frobnicate(%ynn_fusion.1),"))
    (tmp_path / "m.devices.json").write_text((hlo / "mlp.devices.json").read_text())
    out = runner.invoke(app, ["program", "--hlo", str(tmp_path / "m.txt"), "--topology", "tpu-v5e:2x4"], env={"COLUMNS": "160"})
    assert "not modelled (not timed)" not in out.output  # over a row that says it is timed by its bytes
    assert "not modelled as what they are (each row says how it is timed, if at all)" in out.output
    assert "unknown opcode 'frobnicate': timed by the bytes it touches" in out.output
    (tmp_path / "n.yaml").write_text(f"name: m\nhlo: {MODULE}\ntopology: tpu-v5e:4x4\nalgorithm: netsim\n")
    out = runner.invoke(app, ["program", str(tmp_path / "n.yaml")], env={"COLUMNS": "200"})
    assert "(multiaxis (the compiler's: StrategyRing{colors:1 phases:1}), 128 KiB per device)" in out.output
    assert '{"debug"' not in out.output
