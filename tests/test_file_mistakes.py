"""A file's mistakes all at once, a line each, with "did you mean"; YAML that is not YAML named at its place, quickly.

Exit code 2, no traceback, no class of netsim's in a message.
"""

from __future__ import annotations

import resource
import textwrap
import time

import pytest
from conftest import TWO_LAYER_PROGRAM as PROGRAM
from typer.testing import CliRunner

from netsim.cli.main import app
from netsim.scenario.errors import MAX_LISTED

runner = CliRunner()

SCENARIO = """
name: t
topology: ring4
collective: {op: all_gather}
input: {shape: [4], dtype: int32}
"""


def _lines(tmp_path, text, command="run"):
    path = tmp_path / "f.yaml"
    path.write_text(textwrap.dedent(text)) if isinstance(text, str) else path.write_bytes(text)
    out = runner.invoke(app, [command, str(path)])
    assert out.exit_code == 2, out.output
    assert "Traceback" not in out.output
    return [line.removeprefix(f"error: {path}: ") for line in out.output.splitlines()]


def test_two_bad_units_are_both_named_in_one_run(tmp_path):
    text = SCENARIO + "link: {bandwidth: 45 GBps, latency: 1 usec}\n"
    assert _lines(tmp_path, text) == [
        "link.bandwidth: cannot read '45 GBps' as a bandwidth; write it like '45 GB/s' (got '45 GBps')",
        "link.latency: cannot read '1 usec' as a duration; write it like '1 us' (got '1 usec')",
    ]


def test_mistakes_in_every_section_come_together_in_one_run(tmp_path):
    text = """
    name: t
    topology: {kind: ring, dims: [4], link: {bandwidth: 45, latency: 1 us}, colour: red}
    collective: {op: all_gather, axiss: 0}
    input: {shape: [4], dtype: flaot32}
    engine: fsat
    algorithim: ring
    """
    assert _lines(tmp_path, text) == [
        "topology.link.bandwidth: 45 has no unit: write '45 GB/s' (units: B/s, MB/s, GB/s, or bits: Gb/s)",
        "topology.colour: unknown field; allowed here: name, description, kind, dims, wraparound, cables, link, devices_per_chip, chip_link, "
        "device, calibration",
        "collective.axiss: unknown field; did you mean axis? allowed here: op, axis, tiled, axis_index_groups, axes",
        "input.dtype: unknown dtype 'flaot32'; did you mean float32? use e.g. float32, int32, float16, bfloat16, float8_e4m3fn (got 'flaot32')",
        "engine: Input should be 'auto', 'processes' or 'fast' (got 'fsat'); did you mean fast?",
        "algorithim: unknown field; did you mean algorithm? allowed here: name, description, topology, collective, input, algorithm, link, device, "
        "forwarding, engine, calibration, seed, expected, mesh, faults, stragglers, data",
    ]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "{op: all_gather}",
            "{op: all_reduce}",
            "collective.op: expected one of all_gather, psum_scatter, psum, all_to_all, ppermute; did you mean psum? (JAX's all-reduce is jax.lax.psum)",
        ),
        (
            "{op: all_gather}",
            "{op: reduce_scatter}",
            "collective.op: expected one of all_gather, psum_scatter, psum, all_to_all, ppermute; did you mean psum_scatter? (JAX's reduce-scatter",
        ),
        (
            "{op: all_gather}",
            "{op: allgather}",
            "collective.op: expected one of all_gather, psum_scatter, psum, all_to_all, ppermute; did you mean all_gather?",
        ),
        (
            "name: t",
            "name: t\nalgorithm: bidirectonal_ring",
            "algorithm: unknown algorithm 'bidirectonal_ring'; did you mean bidirectional_ring? expected one of",
        ),
        (
            "name: t",
            "name: t\nforwarding: cut-through",
            "forwarding: Input should be 'cut_through' or 'store_and_forward' (got 'cut-through'); did you mean cut_through?",
        ),
        ("name: t", "name: t\nmesh: [4]", "mesh: expected a mapping of each axis's name to its size, e.g. {data: 8} or {data: 2, model: 4} (got [4])"),
        ("name: t", "name: t\nlink: fast", "link: expected a mapping of fields, e.g. {bandwidth: 45 GB/s, latency: 1 us} (got 'fast')"),
        ("[4], dtype", "[4], colour: red, dtype", "input.colour: unknown field; allowed here: shape, bytes_per_device, dtype, values"),
        ("topology: ring4", "topology: rign4", "topology: no topology file 'rign4'; did you mean ring4? bundled ones are: ring16, ring4, "),
        ("topology: ring4", "topology: ring5", "topology: no topology file 'ring5'; bundled ones are: "),  # another size, not a typo
    ],
)
def test_a_misspelt_value_or_field_gets_its_likely_fix(tmp_path, old, new, message):
    assert old in SCENARIO
    lines = _lines(tmp_path, SCENARIO.replace(old, new))
    assert len(lines) == 1 and lines[0].startswith(message), lines
    assert "Spec" not in lines[0]  # no class of netsim's


def test_a_misspelt_op_field_is_named_not_the_field_it_hides(tmp_path):
    assert _lines(tmp_path, PROGRAM.replace("{name: up1", "{nmae: up1"), "program") == [
        "ops.0.nmae: unknown field; did you mean name? matmul takes: name, op, in, out, after, algorithm, efficiency, overlap"
    ]


def test_a_program_op_named_as_other_libraries_name_it_gets_jax_s_name(tmp_path):
    [line] = _lines(tmp_path, PROGRAM.replace("op: psum", "op: all_reduce"), "program")
    assert line.startswith("ops.1.op: Input should be 'all_gather', 'psum_scatter', 'psum', ")
    assert line.endswith("(got 'all_reduce'); did you mean psum? (JAX's all-reduce is jax.lax.psum)")


def test_the_same_mistake_in_many_items_is_said_once(tmp_path):
    lines = _lines(tmp_path, SCENARIO.replace("{op: all_gather}", "{op: all_gather, axis_index_groups: [[a, b], [c, d]]}"))
    assert lines == ["collective.axis_index_groups.0.0: Input should be a valid integer (got 'a') (and 3 more like it)"]


def test_many_mistakes_are_capped(tmp_path):
    text = SCENARIO + "".join(f"extra{k}: 1\n" for k in range(40))
    lines = _lines(tmp_path, text)
    assert len(lines) == MAX_LISTED + 1 and lines[-1] == f"... and {40 - MAX_LISTED} more"


def test_a_control_character_is_named_at_its_place(tmp_path):
    lines = _lines(tmp_path, SCENARIO + "description: a\x07b\n")
    assert lines == [
        'invalid YAML at line 6, column 15: the control character U+0007 is not allowed in YAML; delete it (or write it as "\\x07" in a double-quoted string)'
    ]


def test_a_tab_that_starts_a_token_keeps_pyyaml_s_words(tmp_path):
    assert _lines(tmp_path, SCENARIO + "\tdescription: x\n") == ["invalid YAML at line 6, column 1: found character '\\t' that cannot start any token"]


def test_a_3_mb_alias_file_is_refused_in_a_second(tmp_path):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"] + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    text = "\n".join(lines) + "\nb: [" + ", ".join(["*a8"] * 600_000) + "]\n"
    assert len(text) > 3_000_000
    started = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    wall = time.perf_counter()
    [line] = _lines(tmp_path, text)
    assert line.startswith("the document expands to more than 300000 values")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_utime - started < 3  # 52 s with PyYAML's own parser
    assert time.perf_counter() - wall < 20
