"""Bad scenario files: one line naming the file, the field and the fix; exit code 2; no traceback."""

from __future__ import annotations

import textwrap

import pytest
from typer.testing import CliRunner

from netsim.cli.main import app

runner = CliRunner()

GOOD = """
name: t
topology: ring4
collective:
  op: all_gather
input:
  shape: [4]
  dtype: int32
"""


def run_text(tmp_path, text, name="s.yaml"):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(textwrap.dedent(text))
    return path, runner.invoke(app, ["run", str(path)])


def replace(old, new):
    assert old in GOOD
    return GOOD.replace(old, new)


CASES = [
    (replace("  dtype: int32", "  dtype: int32\n  colour: red"), "input.colour: unknown field; allowed here: shape, bytes_per_device, dtype, values"),
    (
        replace("name: t", "name: t\nalgoritm: ring"),
        "algoritm: unknown field; did you mean algorithm? allowed here: name, description, topology, collective, input, algorithm, link, device, "
        "forwarding, engine, seed, "
        "expected, mesh, faults, stragglers, data",
    ),
    (
        replace("  op: all_gather", "  op: all_gather\n  scatter_dimension: 0"),
        "collective.scatter_dimension: unknown field; allowed here: op, axis, tiled, axis_index_groups",
    ),
    (replace("name: t\n", ""), "name: required field is missing"),
    (replace("  op: all_gather", "  op: all_reduce"), "collective.op: expected one of all_gather, psum_scatter, psum"),
    (
        replace("name: t", "name: t\nalgorithm: tree"),
        "algorithm: unknown algorithm 'tree'; expected one of ring, bidirectional_ring, bidirectional_halfway, "
        "direct, recursive_doubling, recursive_halving, rabenseifner, multiaxis, dimension_ordered, multiaxis_bundled, hierarchical, "
        "or multipath (ppermute only) (got 'tree')",
    ),
    (
        replace("ring4", "{kind: ring, dims: [4], device: {peak_flops: fast}}"),
        "topology.device.peak_flops: cannot read 'fast' as a compute rate; write it like '197 TFLOP/s' (got 'fast')",
    ),
    (
        replace("ring4", "{kind: ring, dims: [4], device: {flops: 197 TFLOP/s}}"),
        "topology.device.flops: unknown field; allowed here: peak_flops, hbm_bandwidth, hbm_capacity",
    ),
    (
        replace("ring4", "{kind: ring, dims: [4], device: {hbm_bandwidth: 819 GBps}}"),
        "topology.device.hbm_bandwidth: cannot read '819 GBps' as a bandwidth; write it like '819 GB/s' (got '819 GBps')",
    ),
    (
        replace("ring4", "{kind: ring, dims: [4], device: {hbm_capacity: true}}"),
        "topology.device.hbm_capacity: expected a number or a string with a unit such as '64 MiB' (got True)",
    ),
    (replace("ring4", "{kind: ring, dims: [4], device: {hbm_capacity: 0 GiB}}"), "topology.device.hbm_capacity: Input should be greater than 0 (got '0 GiB')"),
    (
        replace("ring4", "{kind: ring, dims: [4], device: {peak_flops: 0.5}}"),
        "topology.device.peak_flops: compute rates below 1 FLOP/s are not simulated (got 0.5)",
    ),
    (
        replace("name: t", "name: t\ndevice: {peak_flops: 197 TFLOPs}"),
        "device.peak_flops: cannot read '197 TFLOPs' as a compute rate; write it like '197 TFLOP/s'",
    ),
    (replace("name: t", "name: t\nlink: {bandwidth: 0 GB/s}"), "link.bandwidth: Input should be greater than 0 (got '0 GB/s')"),
    (
        replace("name: t", "name: t\nlink: {bandwidth: 45 Gbit/s}"),
        "link.bandwidth: cannot read '45 Gbit/s' as a bandwidth; write it like '45 GB/s' (got '45 Gbit/s')",
    ),
    (replace("name: t", "name: t\nlink: {latency: -1 us}"), "link.latency: cannot read '-1 us' as a duration; write it like '1 us' (got '-1 us')"),
    (replace("  dtype: int32", "  dtype: complex64"), "input.dtype: dtype 'complex64' is not a numeric type; use an int, uint or float type (got 'complex64')"),
    (
        replace("  dtype: int32", "  dtype: float33"),
        "input.dtype: unknown dtype 'float33'; did you mean float32? use e.g. float32, int32, float16, bfloat16, float8_e4m3fn (got 'float33')",
    ),
    (replace("  shape: [4]", "  shape: [-4]"), "input.shape.0: Input should be greater than or equal to 0 (got -4)"),
    (replace("  shape: [4]", "  bytes_per_device: 6 B"), "input.bytes_per_device: 6 bytes is not a whole number of int32 elements (4 bytes each)"),
    (replace("  shape: [4]\n", ""), "input: give either shape (a list of sizes) or bytes_per_device (e.g. '4 MiB')"),
    (replace("  shape: [4]", "  shape: [4]\n  bytes_per_device: 16 B"), "input: give shape or bytes_per_device, not both"),
    (replace("  op: all_gather", "  op: all_gather\n  axis: 2"), "collective.axis: axis=2 is out of range for 2 dimension(s) (valid: -2..1)"),
    (
        replace("  op: all_gather", "  op: all_gather\n  axis_index_groups: [[0, 1], [1, 2]]"),
        "collective.axis_index_groups: axis_index_groups must cover every device exactly once; device 1 appears more than once in [[0, 1], [1, 2]]",
    ),
    (
        replace("  op: all_gather", "  op: all_gather\n  axis_index_groups: [[0, 1, 2]]"),
        "collective.axis_index_groups: axis_index_groups must cover every device exactly once; device 3 is in no group of [[0, 1, 2]]",
    ),
    (
        replace("  op: all_gather", "  op: psum_scatter\n  tiled: true").replace("[4]", "[6]"),
        "input.shape: psum_scatter with tiled=True needs shape[0]=6 to be divisible by the group size 4",
    ),
    (replace("topology: ring4", "topology: ring99"), "topology: no topology file 'ring99'; bundled ones are: "),
    (replace("topology: ring4", "topology: {kind: torus, dims: [2, 2], wraparound: [true]}"), "topology: wraparound has 1 flags for 2 axes"),
    (replace("name: t", "name: t\nforwarding: wormhole"), "forwarding: Input should be 'cut_through' or 'store_and_forward' (got 'wormhole')"),
    (replace("name: t", "name: t\nseed: -1"), "seed: Input should be greater than or equal to 0 (got -1)"),
    ("name: [unclosed\n", ": invalid YAML at line 2, column 1: expected ',' or ']', but got '<stream end>'"),
    ("- just\n- a list\n", ": expected a mapping of fields at the top level, got list"),
    (
        "!!python/object/apply:os.system ['echo hacked']\n",
        ": invalid YAML at line 1, column 1: could not determine a constructor for the tag 'tag:yaml.org,2002:python/object/apply:os.system'",
    ),
    (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", ": not a text file (expected UTF-8 YAML)"),
    # all_to_all and ppermute
    (replace("  op: all_gather", "  op: all_reduce"), "collective.op: expected one of all_gather, psum_scatter, psum, all_to_all, ppermute"),
    (
        replace("  op: all_gather", "  op: all_to_all\n  axis: 0"),
        "collective.axis: unknown field; allowed here: op, split_axis, concat_axis, tiled, axis_index_groups",
    ),
    (replace("  op: all_gather", "  op: all_to_all\n  split_axis: 1"), "collective.split_axis: split_axis=1 is out of range for 1 dimension(s) (valid: -1..0)"),
    (
        replace("  op: all_gather", "  op: all_to_all\n  concat_axis: -2"),
        "collective.concat_axis: concat_axis=-2 is out of range for 1 dimension(s) (valid: -1..0)",
    ),
    (
        replace("  op: all_gather", "  op: all_to_all\n  tiled: true").replace("[4]", "[6]"),
        "input.shape: all_to_all with tiled=True needs shape[0]=6 to be divisible by the group size 4",
    ),
    (
        replace("  op: all_gather", "  op: all_to_all").replace("[4]", "[2, 4]"),
        "input.shape: all_to_all with tiled=False needs shape[0]=2 to equal the group size 4",
    ),
    (
        replace("  op: all_gather", "  op: all_to_all").replace("  shape: [4]", "  bytes_per_device: 24 B"),
        "input.bytes_per_device: 6 elements do not split into 4 equal blocks; pick a multiple of 16 bytes",
    ),
    (
        replace("  op: all_gather", "  op: all_to_all\n  tiled: true\n  axis_index_groups: [[0, 1], [2, 3]]").replace(
            "name: t", "name: t\nalgorithm: recursive_doubling"
        ),
        "algorithm: algorithm 'recursive_doubling' does not run the all_to_all pattern; algorithms that do: direct, dimension_ordered",
    ),
    (replace("  op: all_gather", "  op: ppermute"), "collective.perm: required field is missing"),
    (
        replace("  op: all_gather", "  op: ppermute\n  perm: [[0, 1], [1, 4]]"),
        "collective.perm: perm index 4 is out of range for 4 devices (valid: 0..3), in (1, 4)",
    ),
    (replace("  op: all_gather", "  op: ppermute\n  perm: [[0, 1], [0, 2]]"), "collective.perm: perm repeats source 0: (0, 1) and (0, 2) both send from it"),
    (replace("  op: all_gather", "  op: ppermute\n  perm: [[0, 2], [1, 2]]"), "collective.perm: perm repeats destination 2: (0, 2) and (1, 2) both send to it"),
    (
        replace("  op: all_gather", "  op: ppermute\n  perm: [[0, 1, 2]]"),
        "collective.perm: perm must be a list of (source, destination) pairs; (0, 1, 2) is not a pair",
    ),
    (
        replace("  op: all_gather", "  op: ppermute\n  perm: [[0, 1]]").replace("name: t", "name: t\nalgorithm: ring"),
        "algorithm: ppermute sends every pair directly (direct, the default) or over disjoint shortest routes (multipath), got 'ring'",
    ),
    (
        replace("name: t", "name: t\nalgorithm: multipath"),
        "algorithm: multipath is a ppermute algorithm (a pair's payload over disjoint routes); all_gather cannot run it",
    ),
    (
        replace("  op: all_gather", "  op: psum").replace("name: t", "name: t\nalgorithm: multipath"),
        "algorithm: multipath is a ppermute algorithm (a pair's payload over disjoint routes); psum cannot run it",
    ),
    (
        replace("  op: all_gather", "  op: psum").replace("name: t", "name: t\nalgorithm: rabenseifner").replace("ring4", "{kind: ring, dims: [6]}"),
        "algorithm: rabenseifner needs a power-of-two group size, got 6",
    ),
    (
        replace("  op: all_gather", "  op: psum_scatter").replace("name: t", "name: t\nalgorithm: recursive_doubling"),
        "algorithm: algorithm 'recursive_doubling' does not run the reduce_scatter pattern; "
        "algorithms that do: ring, bidirectional_ring, bidirectional_halfway, direct, recursive_halving",
    ),
]


@pytest.mark.parametrize(("text", "message"), CASES, ids=[c[1][:40] for c in CASES])
def test_bad_scenario_is_one_clear_line(tmp_path, text, message):
    path, result = run_text(tmp_path, text)
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"error: {path}: ")
    assert message in lines[0]


def test_missing_file(tmp_path):
    result = runner.invoke(app, ["run", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {tmp_path / 'nope.yaml'}: no such file"


def test_good_scenario_passes(tmp_path):
    _, result = run_text(tmp_path, GOOD)
    assert result.exit_code == 0, result.output


def test_relative_topology_path_is_found_next_to_the_scenario(tmp_path):
    (tmp_path / "mine.yaml").write_text("kind: ring\ndims: [4]\nlink: {bandwidth: 1 GB/s, latency: 2 us}\n")
    _, result = run_text(tmp_path, replace("topology: ring4", "topology: mine.yaml"))
    assert result.exit_code == 0, result.output
    assert "mine" in result.output


def test_bad_device_figures_in_a_topology_file_name_that_file_and_the_field(tmp_path):
    (tmp_path / "chips.yaml").write_text("kind: ring\ndims: [4]\ndevice: {peak_flops: 197 TFLOP/s, hbm_capacity: 16 Gb}\n")
    _, result = run_text(tmp_path, replace("topology: ring4", "topology: chips.yaml"))
    assert result.exit_code == 2
    expected = f"error: {tmp_path / 'chips.yaml'}: device.hbm_capacity: cannot read '16 Gb' as a size; write it like '64 MiB' (got '16 Gb')"
    assert result.output.strip() == expected
