"""Which engine plays a run: ``engine: auto | processes | fast`` in scenarios, the API and the CLI.

Both engines must give the same report: on every scenario bundled in scenarios/
(the multiaxis_bundled one included), ``netsim run --json`` on the process model and
on the fast player differ only in the ``engine`` they name.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import ROOT
from test_engines import OverheadLink
from typer.testing import CliRunner

import netsim
from netsim.cli.main import app
from netsim.run import AUTO_PROCESSES_MAX_TRANSFERS

SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))
runner = CliRunner()


def run_json(path, *options):
    result = runner.invoke(app, ["run", str(path), "--json", *options])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_auto_plays_every_bundled_scenario_on_the_process_model_and_the_fast_player_gives_the_same_report(path):
    processes, fast = run_json(path), run_json(path, "--engine", "fast")  # auto: the process model (one run, not two)
    assert (processes.pop("engine"), fast.pop("engine")) == ("processes", "fast")
    assert processes["transfers"] <= AUTO_PROCESSES_MAX_TRANSFERS
    assert processes["time_s"] == fast["time_s"]
    assert processes["links"] == fast["links"]  # every link's bytes, messages, busy time, queue and waits
    assert processes == fast  # and everything else: statistics, steps, estimates, output digest


def test_engine_processes_is_what_auto_plays_on_a_small_run():
    path = ROOT / "scenarios" / "allgather_ring8.yaml"
    assert run_json(path, "--engine", "processes") == run_json(path)


def test_the_table_says_which_engine_ran():
    result = runner.invoke(app, ["run", str(ROOT / "scenarios" / "allgather_ring8.yaml"), "--engine", "fast"])
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if "│ engine " in line)
    assert "fast (the same events, without the processes)" in row


def test_a_bad_engine_is_one_line():
    result = runner.invoke(app, ["run", str(ROOT / "scenarios" / "allgather_ring8.yaml"), "--engine", "turbo"])
    assert result.exit_code == 2
    assert result.output.strip() == "error: --engine 'turbo': use one of auto, processes, fast"


def test_a_scenario_names_its_engine(tmp_path):
    text = (ROOT / "scenarios" / "allgather_ring8.yaml").read_text()
    path = tmp_path / "s.yaml"
    path.write_text(text + "engine: fast\n")
    assert run_json(path)["engine"] == "fast"
    path.write_text(text + "engine: turbo\n")
    result = runner.invoke(app, ["run", str(path)])
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {path}: engine: Input should be 'auto', 'processes' or 'fast' (got 'turbo')"


def test_auto_plays_big_schedules_on_the_fast_player():
    small = netsim.all_gather(np.zeros((8, 8), np.float32))
    big = netsim.all_gather(np.zeros((128, 2), np.float32))  # 2 * 128 * 127 = 32,512 transfers
    assert len(big.leaves[0].schedule.transfers) > AUTO_PROCESSES_MAX_TRANSFERS
    assert (small.engine, big.engine) == ("processes", "fast")
    assert netsim.all_gather(np.zeros((128, 2), np.float32), engine="processes").time == big.time
    with pytest.raises(ValueError, match=r"^engine must be one of 'auto', 'processes', 'fast', got 'turbo'$"):
        netsim.psum(np.zeros(4), engine="turbo")


def test_your_own_link_through_the_api():
    # A unidirectional ring all_gather on a ring of 8: 7 steps, each a one-hop message of s bytes.
    n, s, alpha, bandwidth = 8, 4096, 1e-6, 45e9
    x = np.zeros((n, s // 4), np.float32)
    plain = netsim.all_gather(x, topology=netsim.ring(n, bandwidth, alpha), algorithm="ring")
    mine = netsim.all_gather(x, topology=netsim.ring(n, bandwidth, alpha), algorithm="ring", link_class=OverheadLink)
    assert plain.time == pytest.approx((n - 1) * (alpha + s / bandwidth), rel=1e-12)
    assert mine.time == pytest.approx((n - 1) * (alpha + s / bandwidth + OverheadLink.overhead_s), rel=1e-12)
    assert mine.engine == "processes" and mine.verified
    with pytest.raises(ValueError, match=r"^the fast player and its compiled loop play only the built-in links"):
        netsim.all_gather(x, algorithm="ring", engine="fast", link_class=OverheadLink)
