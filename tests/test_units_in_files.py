"""Bandwidths and latencies in files carry their unit: a bare number is refused with the fix; bits per second are read.

Read as bytes per second and seconds, ``link: {bandwidth: 45, latency: 1}`` once ran a
22-hour all_gather without a word. Every bundled file, and every YAML block of the
README and docs, still loads.
"""

from __future__ import annotations

import re
import textwrap

import pytest
import yaml
from conftest import ROOT
from typer.testing import CliRunner

import netsim
from netsim.cli.main import app
from netsim.programs.hlo.files import load_any_program
from netsim.scenario import load_scenario, scenario_from_data
from netsim.scenario.topology_spec import TopologySpec, load_topology
from netsim.scenario.yaml_files import validate
from netsim.studies.files import load_study, study_from_data

runner = CliRunner()

SCENARIO = """
name: t
topology: ring4
collective: {op: all_gather}
input: {shape: [1024], dtype: float32}
"""


def _run(tmp_path, text, command="run"):
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(text))
    return path, runner.invoke(app, [command, str(path)])


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ("link: {bandwidth: 45}", "link.bandwidth: 45 has no unit: write '45 GB/s' (units: B/s, MB/s, GB/s, or bits: Gb/s)"),
        ("link: {bandwidth: 45.0e9}", "link.bandwidth: 45000000000.0 has no unit: write '45 GB/s' if that is bytes per second (units: "),
        ("link: {bandwidth: 4.5e+10}", "link.bandwidth: 45000000000.0 has no unit: write '45 GB/s' if that is bytes per second (units: "),
        ("link: {latency: 1}", "link.latency: 1 has no unit: write '1 us' (units: ns, us, ms, s)"),
        ("link: {latency: 1.0e-6}", "link.latency: 1e-06 has no unit: write '1 us' if that is seconds (units: ns, us, ms, s)"),
        ("stragglers: {2: 5}", "stragglers.2: 5 has no unit: write '5 us' (units: ns, us, ms, s)"),
        ("device: {hbm_bandwidth: 819}", "device.hbm_bandwidth: 819 has no unit: write '819 GB/s'"),
        (
            "faults: [{link: [0, 1], bandwidth: 10}]",
            "faults.0.bandwidth: 10 has no unit: write a share of the link's bandwidth ('10%') or a bandwidth ('10 GB/s')",
        ),
        ("faults: [{link: [0, 1], latency: 3}]", "faults.0.latency: 3 has no unit: write '3 us'"),
    ],
)
def test_a_bare_bandwidth_or_latency_is_refused_with_the_fix(tmp_path, section, message):
    path, out = _run(tmp_path, SCENARIO + section + "\n")
    assert out.exit_code == 2, out.output
    assert out.output.startswith(f"error: {path}: {message}"), out.output


def test_a_topology_file_with_bare_numbers_is_named_with_its_fields(tmp_path):
    (tmp_path / "mine.yaml").write_text("kind: ring\ndims: [4]\nlink: {bandwidth: 45, latency: 1}\n")
    _, out = _run(tmp_path, SCENARIO.replace("ring4", "mine.yaml"))
    assert out.exit_code == 2
    assert out.output.splitlines() == [
        f"error: {tmp_path / 'mine.yaml'}: link.bandwidth: 45 has no unit: write '45 GB/s' (units: B/s, MB/s, GB/s, or bits: Gb/s)",
        f"error: {tmp_path / 'mine.yaml'}: link.latency: 1 has no unit: write '1 us' (units: ns, us, ms, s)",
    ]


@pytest.mark.parametrize("bits", ["400 Gb/s", "400 Gbps", "400Gbps", "0.4 Tb/s"])
def test_bits_per_second_are_an_eighth_as_many_bytes(tmp_path, bits):
    as_bytes = netsim.simulate(scenario_from_data(yaml.safe_load(SCENARIO + "link: {bandwidth: 50 GB/s, latency: 1 us}"), "bytes"))
    as_bits = netsim.simulate(scenario_from_data(yaml.safe_load(SCENARIO + f"link: {{bandwidth: {bits}, latency: 1 us}}"), "bits"))
    assert as_bits.time == as_bytes.time
    # closed form of the bidirectional ring on 4: 3 * (1 us + 2048 B / 50 GB/s)
    assert as_bits.time == pytest.approx(3 * (1e-6 + 2048 / 50e9), rel=1e-12)
    assert scenario_from_data(yaml.safe_load(SCENARIO + f"link: {{bandwidth: {bits}}}"), "bits").as_run()["topology"]["link"]["bandwidth"] == "50 GB/s"


def test_a_program_op_may_still_give_seconds_as_a_number(tmp_path):
    data = yaml.safe_load((ROOT / "scenarios/programs/allgather_matmul.yaml").read_text())
    data["ops"].append({"name": "wait", "op": "compute", "seconds": 1e-5, "after": ["mm"]})
    loaded = netsim.programs.files.program_from_data(data)
    assert loaded.program.ops[-1].seconds == 1e-5  # the field is named in seconds


def test_the_scenario_as_run_keeps_units_and_loads_again(tmp_path):
    text = SCENARIO + "link: {bandwidth: 45.123456789 GB/s, latency: 1.0000001 us}\nstragglers: {1: 2.5 us}\n"
    text += "faults: [{link: [0, 1], latency: 3 us}]\n"
    scenario = scenario_from_data(yaml.safe_load(text), "s")
    as_run = scenario.as_run()
    assert as_run["stragglers"] == {"1": "2.5 us"} and as_run["faults"][0]["latency"] == "3 us"
    again = scenario_from_data(yaml.safe_load(yaml.safe_dump(as_run)), "again")
    assert again.topology_shape == scenario.topology_shape
    assert netsim.simulate(again).time == netsim.simulate(scenario).time


BUNDLED = sorted(p for p in (ROOT / "scenarios").rglob("*.yaml"))
TOPOLOGIES = sorted((ROOT / "topologies").glob("*.yaml"))


def test_every_bundled_file_loads():
    kinds = {"scenario": 0, "program": 0, "study": 0}
    for path in BUNDLED:
        data = yaml.safe_load(path.read_text())
        if "grid" in data:
            load_study(path)
            kinds["study"] += 1
        elif "ops" in data or "hlo" in data:
            load_any_program(path)
            kinds["program"] += 1
        else:
            load_scenario(path, build_topology=False)
            kinds["scenario"] += 1
    for path in TOPOLOGIES:
        assert load_topology(path).n_devices >= 4
    assert kinds["scenario"] >= 25 and kinds["program"] >= 12 and kinds["study"] >= 5 and len(TOPOLOGIES) >= 14


DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BASE = {"name": "snippet", "topology": "ring8", "collective": {"op": "psum"}, "input": {"shape": [64]}}


def yaml_blocks() -> list[tuple[str, str]]:
    return [(f"{doc.name} block {i}", block) for doc in DOCS for i, block in enumerate(re.findall(r"^```yaml\n(.*?)^```", doc.read_text(), flags=re.S | re.M))]


@pytest.mark.parametrize(("where", "block"), yaml_blocks(), ids=[w for w, _ in yaml_blocks()])
def test_every_yaml_block_of_the_docs_loads(where, block):
    data = yaml.safe_load(block)
    if "kind" in data:
        validate(TopologySpec, data, where).shape(where)
    elif "grid" in data:
        study_from_data(data, where, ROOT / "scenarios" / "studies")
    elif "ops" in data:
        netsim.programs.files.program_from_data(data, where, ROOT / "scenarios" / "programs")
    else:  # a scenario, or the part of one a section shows
        scenario_from_data({**BASE, **data}, where, ROOT / "scenarios", build_topology=False)


def test_the_docs_have_yaml_blocks_of_every_kind():
    blocks = [yaml.safe_load(b) for _, b in yaml_blocks()]
    assert any("kind" in b for b in blocks) and any("grid" in b for b in blocks) and any("ops" in b for b in blocks) and any("faults" in b for b in blocks)


def test_the_estimate_report_says_what_bits_per_second_were_read_as(tmp_path):
    _, out = _run(tmp_path, SCENARIO + "link: {bandwidth: 400 Gbps, latency: 1 us}\n", "estimate")
    assert out.exit_code == 0, out.output
    assert "50 GB/s one way, 1 us per hop" in out.output
