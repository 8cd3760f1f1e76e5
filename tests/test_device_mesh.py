"""Meshes with named axes: the groups they derive, their placement, and collectives over them."""

from __future__ import annotations

import itertools
import re
import textwrap

import numpy as np
import pytest
from conftest import expected_all_gather, expected_psum, expected_psum_scatter, sample_then_slow
from typer.testing import CliRunner

import netsim
from netsim.analysis.stats import run_stats
from netsim.cli.main import app
from netsim.network.device_mesh import AxisGroups, Mesh
from netsim.network.presets import tpu_slice
from netsim.network.topology import mesh, ring, torus

runner = CliRunner()


def jax_groups(devices: np.ndarray, names: list[str], axes: list[str]) -> list[list[int]]:
    """Groups from the definition, position by position: two devices share a group when
    they agree on every axis not named; a member's index is its axis_index over ``axes``,
    row-major in the order given."""
    sizes = dict(zip(names, devices.shape, strict=True))
    groups: dict[tuple, dict[int, int]] = {}
    for position in itertools.product(*(range(s) for s in devices.shape)):
        coord = dict(zip(names, position, strict=True))
        key = tuple(coord[a] for a in names if a not in axes)
        index = 0
        for a in axes:
            index = index * sizes[a] + coord[a]
        groups.setdefault(key, {})[index] = int(devices[position])
    return [[members[i] for i in range(len(members))] for _, members in sorted(groups.items())]


@pytest.mark.parametrize("n_axes", [1, 2, 3])
def test_groups_follow_jax_member_order_for_every_choice_of_axes(n_axes):
    names = ["a", "b", "c"]
    m = Mesh({"a": 2, "b": 3, "c": 4}, torus((2, 3, 4)))
    for axes in itertools.permutations(names, n_axes):
        groups = m.groups(list(axes))
        assert [list(g) for g in groups] == jax_groups(m.devices, names, list(axes))
        assert groups.shape == tuple({"a": 2, "b": 3, "c": 4}[a] for a in axes)
        assert groups.axes == axes


def test_row_major_default_puts_mesh_axes_on_torus_axes():
    m = Mesh({"data": 4, "model": 4}, torus((4, 4)))
    assert [list(g) for g in m.groups("model")] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]
    assert [list(g) for g in m.groups("data")] == [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]]
    assert list(m.groups(["model", "data"])[0]) == [0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15]
    # a mesh axis may span several torus rows when the sizes differ
    assert [list(g) for g in Mesh({"data": 2, "model": 8}, torus((4, 4))).groups("model")] == [list(range(8)), list(range(8, 16))]


def test_explicit_devices_and_axis_dims():
    t = torus((4, 4, 4))
    order = np.random.default_rng(0).permutation(64)
    m = Mesh({"x": 4, "y": 16}, t, devices=order)
    np.testing.assert_array_equal(m.devices, order.reshape(4, 16))
    assert [list(g) for g in m.groups("y")] == jax_groups(order.reshape(4, 16), ["x", "y"], ["y"])
    # one mesh axis over two torus axes, row-major over them in the order listed
    folded = Mesh({"x": 4, "yz": 16}, t, axis_dims={"x": 0, "yz": [1, 2]})
    np.testing.assert_array_equal(folded.devices, np.arange(64).reshape(4, 16))
    swapped = Mesh({"x": 4, "yz": 16}, t, axis_dims={"yz": [2, 1], "x": 0})
    assert [t.coord(d) for d in swapped.devices[1, :3]] == [(1, 0, 0), (1, 1, 0), (1, 2, 0)]
    transposed = Mesh({"data": 4, "model": 4}, torus((4, 4)), axis_dims={"data": 1, "model": 0})
    assert [list(g) for g in transposed.groups("model")] == [[0, 4, 8, 12], [1, 5, 9, 13], [2, 6, 10, 14], [3, 7, 11, 15]]


def test_rings_and_lines():
    assert Mesh({"x": 4, "y": 4}, torus((4, 4), wraparound=(True, False))).groups(["x", "y"]).wraparound == (True, False)
    # an axis of 2 without wraparound has one cable: both halves of a ring would share it
    assert Mesh({"x": 2}, mesh((2,))).axis_is_ring("x") is False
    assert Mesh({"x": 2}, ring(2)).axis_is_ring("x") is True
    assert Mesh({"x": 1, "y": 8}, ring(8)).axis_is_ring("x") is True
    # v5e 8x16: the long axis wraps, the short one is a line
    v5e = Mesh({"data": 8, "model": 16}, tpu_slice("tpu-v5e:8x16"))
    assert (v5e.axis_is_ring("data"), v5e.axis_is_ring("model")) == (False, True)
    # a line visited out of order is no chain of neighbours: it runs as a ring with multi-hop messages
    assert Mesh({"x": 4}, mesh((4,)), devices=[0, 2, 1, 3]).axis_is_ring("x") is True


def test_a_mesh_axis_over_several_physical_axes_runs_along_them():
    """``fsdp: 16`` over a 4x4x4 torus's first two axes: from the end of one row to the start of the next is two hops,
    so it is no ring; its groups run along the two physical axes, each a ring, the members in the mesh axis's order."""
    t = torus((4, 4, 4))
    m = Mesh({"fsdp": 16, "tp": 4}, t)
    fsdp = m.groups("fsdp")
    assert (fsdp.axes, fsdp.shape, fsdp.wraparound) == (("fsdp",), (4, 4), (True, True))
    assert [list(g) for g in fsdp] == jax_groups(m.devices, ["fsdp", "tp"], ["fsdp"])  # JAX's order, as before
    both = m.groups(["tp", "fsdp"])
    assert (both.shape, both.wraparound) == ((4, 4, 4), (True, True, True))
    assert fsdp.shape == netsim.network.device_mesh.group_sizes(m.shape, t.dims, ["fsdp"])
    # axis_dims: the physical axes in the order listed (row-major over them); a line stays a line
    folded = Mesh({"a": 4, "b": 16}, torus((4, 4, 4), wraparound=(True, True, False)), axis_dims={"a": 1, "b": [2, 0]})
    assert (folded.groups("b").shape, folded.groups("b").wraparound) == ((4, 4), (False, True))
    # an axis over part of a physical axis, and an explicit device list, keep the axis whole
    assert Mesh({"x": 2, "y": 8}, torus((4, 4))).groups("y").shape == (8,)
    assert Mesh({"fsdp": 16, "tp": 4}, t, devices=np.arange(64)).groups("fsdp").shape == (16,)


def test_a_collective_over_a_folded_axis_equals_the_reference_and_uses_both_axes():
    """A psum over ``fsdp: 16`` on a 4x4 torus runs as multiaxis over (4, 4): the reference's values, and every one of
    the torus's 64 link directions busy, where a ring of 16 (two hops at each row's end) uses 40."""
    t = torus((4, 4))
    m = Mesh({"fsdp": 16}, t)
    x = np.random.default_rng(0).integers(-50, 50, size=(16, 64)).astype(np.int32)
    r = netsim.psum(x, m.groups("fsdp"), t)
    np.testing.assert_array_equal(r.output, expected_psum(x, [list(range(16))]))
    flat = netsim.psum(x, [list(range(16))], t, algorithm="bidirectional_ring")
    np.testing.assert_array_equal(flat.output, r.output)
    assert r.time < flat.time
    busy = [sum(1 for u in run_stats(run).links if u.bytes > 0) for run in (r, flat)]
    assert busy[0] == 64 > busy[1]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Mesh({"a": 4, "b": 2}, torus((4, 4))), "mesh {a: 4, b: 2} has 4 x 2 = 8 devices but topology torus4x4 has 16"),
        (lambda: Mesh({}, torus((4,))), "shape must be a non-empty mapping of axis name to size, e.g. {'data': 4, 'model': 4}; got {}"),
        (lambda: Mesh({"a": 0}, torus((4,))), "mesh axis 'a' must have a positive integer size, got 0"),
        (lambda: Mesh({"a": 4}, "ring4"), "topology must be a Topology, got 'ring4'"),
        (lambda: Mesh({"a": 4}, ring(4), devices=[0, 1, 2]), "devices lists 3 devices but the topology has 4"),
        (lambda: Mesh({"a": 4}, ring(4), devices=[0, 1, 2, 2]), "devices must list every device exactly once; device 2 appears more than once"),
        (lambda: Mesh({"a": 4}, ring(4), devices=[0, 1, 2, 7]), "devices: index 7 is out of range for 4 devices (valid: 0..3)"),
        (lambda: Mesh({"a": 4}, ring(4), devices=[0, 1, 2, 3], axis_dims={"a": 0}), "give devices or axis_dims, not both"),
        (lambda: Mesh({"a": 4, "b": 4}, torus((4, 4)), axis_dims={"a": 0, "c": 1}), "axis_dims names 'c', which is not a mesh axis (a, b)"),
        (lambda: Mesh({"a": 4, "b": 4}, torus((4, 4)), axis_dims={"a": 0}), "axis_dims gives no physical axes for mesh axis 'b'"),
        (
            lambda: Mesh({"a": 4, "b": 4}, torus((4, 4)), axis_dims={"a": 0, "b": 0}),
            "axis_dims must use every physical axis of torus4x4 exactly once; physical axis 0 is used twice",
        ),
        (lambda: Mesh({"a": 4, "b": 4}, torus((4, 4)), axis_dims={"a": 0, "b": 2}), "axis_dims['b'] must be a physical axis 0..1 or a list of them, got 2"),
        (
            lambda: Mesh({"a": 2, "b": 8}, torus((4, 4)), axis_dims={"a": 0, "b": 1}),
            "axis_dims['a'] spans physical axes [0] of 4 = 4 devices; mesh axis 'a' has 2",
        ),
        (lambda: Mesh({"a": 4, "b": 4}, torus((4, 4))).groups("c"), "no mesh axis 'c'; the mesh has a, b"),
        (lambda: Mesh({"a": 4, "b": 4}, torus((4, 4))).groups(["a", "a"]), "mesh axis 'a' is named twice in ['a', 'a']"),
        (lambda: Mesh({"a": 4, "b": 4}, torus((4, 4))).groups([]), "axes must name one or more mesh axes (a, b), got []"),
    ],
)
def test_bad_meshes_raise_value_errors_naming_the_values(make, message):
    with pytest.raises(ValueError) as error:
        make()
    assert str(error.value) == message


# --- collectives over mesh axes: outputs equal the independent reference --------------------------

MESHES = [
    ({"data": 4, "model": 4}, torus((4, 4)), {}),
    ({"data": 8, "model": 4}, tpu_slice("tpu-v5e:8x4"), {}),  # two lines
    ({"x": 2, "y": 4, "z": 2}, torus((4, 2, 2), wraparound=(True, False, True)), {"axis_dims": {"x": 2, "y": 0, "z": 1}}),
    ({"a": 3, "b": 2}, torus((2, 3)), {"devices": [5, 0, 3, 1, 4, 2]}),
]


@pytest.mark.parametrize("index", range(len(MESHES)))
@pytest.mark.parametrize("algorithm", [None, "dimension_ordered", "bidirectional_ring"])
def test_collectives_over_mesh_axes_equal_the_reference(index, algorithm):
    shape, topology, placement = MESHES[index]
    m = Mesh(shape, topology, **placement)
    n = topology.n_devices
    rng = np.random.default_rng(index)
    names = list(shape)
    choices = [*itertools.permutations(names, 1), *itertools.permutations(names, 2)]
    if len(names) == 3:
        choices += [tuple(names), tuple(reversed(names))]
    for axes in choices:
        count = len(axes)
        groups = m.groups(list(axes))
        plain = [list(g) for g in groups]
        size = len(plain[0])
        x = rng.integers(-100, 100, size=(n, 2 * size, 3), dtype=np.int32)
        gathered = netsim.all_gather(x, axis=1, tiled=bool(count % 2), axis_index_groups=groups, algorithm=algorithm)
        np.testing.assert_array_equal(gathered.output, expected_all_gather(x, 1, bool(count % 2), plain))
        scattered = netsim.psum_scatter(x, scatter_dimension=0, axis_index_groups=groups, tiled=True, algorithm=algorithm)
        np.testing.assert_array_equal(scattered.output, expected_psum_scatter(x, 0, True, plain))
        summed = netsim.psum(x[:, :5, 0], axis_index_groups=groups, algorithm=algorithm)
        np.testing.assert_array_equal(summed.output, expected_psum(x[:, :5, 0], plain))
        assert gathered.algorithm == (algorithm or "multiaxis")
        assert gathered.axes == axes and gathered.topology == topology.name
        assert gathered.groups == groups.groups


def test_mesh_groups_are_plain_axis_index_groups_too():
    m = Mesh({"data": 2, "model": 4}, torus((2, 4)))
    groups = m.groups(["model", "data"])
    assert isinstance(groups, AxisGroups) and len(groups) == 1 and list(groups[0]) == [0, 4, 1, 5, 2, 6, 3, 7]
    x = np.arange(8 * 3, dtype=np.int32).reshape(8, 3)
    from_mesh = netsim.all_gather(x, axis_index_groups=groups, algorithm="bidirectional_ring")
    by_hand = netsim.all_gather(x, axis_index_groups=[list(g) for g in groups], topology=torus((2, 4)))
    np.testing.assert_array_equal(from_mesh.output, by_hand.output)
    assert from_mesh.time == by_hand.time
    with pytest.raises(ValueError, match=r"^axis_index_groups come from a mesh on torus2x4 but the topology is ring8; pass the mesh's topology or none$"):
        netsim.all_gather(x, axis_index_groups=groups, topology=ring(8))
    # the same grid with other links is fine
    slow = netsim.all_gather(x, axis_index_groups=groups, topology=torus((2, 4), bandwidth_Bps=1e9), algorithm="bidirectional_ring")
    assert slow.time > from_mesh.time


SCENARIO = """
name: t
topology: torus4x4
mesh: {data: 4, model: 4}
collective:
  op: all_gather
  axes: [data, model]
input:
  shape: [8]
  dtype: int32
"""


def run_text(tmp_path, text):
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(text))
    return path, runner.invoke(app, ["run", str(path)])


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ("  axes: [data, model]", "  axes: [data, batch]", "collective.axes: no mesh axis 'batch'; the mesh has data, model"),
        ("  axes: [data, model]", "  axes: [model, model]", "collective.axes: mesh axis 'model' is named twice in ['model', 'model']"),
        ("  axes: [data, model]", "  axes: []", "collective.axes: name one or more mesh axes, e.g. model or [data, model] (got [])"),
        ("  axes: [data, model]", "  axes: model\n  axis_index_groups: [[0, 1]]", "collective.axes: give axes or axis_index_groups, not both"),
        ("mesh: {data: 4, model: 4}\n", "", "collective.axes: naming mesh axes needs a mesh: add e.g. mesh: {data: 4, model: 4} to the scenario"),
        ("mesh: {data: 4, model: 4}", "mesh: {data: 4, model: 2}", "mesh: mesh {data: 4, model: 2} has 4 x 2 = 8 devices but topology torus4x4 has 16"),
        ("mesh: {data: 4, model: 4}", "mesh: {data: 4, model: 0}", "mesh.shape.model: Input should be greater than or equal to 1 (got 0)"),
        ("mesh: {data: 4, model: 4}", "mesh: {shape: {data: 4, model: 4}, order: [1]}", "mesh.order: unknown field; allowed here: shape, devices, axis_dims"),
        (
            "mesh: {data: 4, model: 4}",
            "mesh: {shape: {data: 4, model: 4}, devices: [0, 1]}",
            "mesh.devices: devices lists 2 devices but the topology has 16",
        ),
        (
            "mesh: {data: 4, model: 4}",
            "mesh: {shape: {data: 4, model: 4}, axis_dims: {data: 0, model: 0}}",
            "mesh.axis_dims: axis_dims must use every physical axis of torus4x4 exactly once; physical axis 0 is used twice",
        ),
    ],
)
def test_bad_mesh_scenarios_are_one_clear_line(tmp_path, old, new, message):
    assert old in SCENARIO
    path, result = run_text(tmp_path, SCENARIO.replace(old, new))
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert lines == [f"error: {path}: {message}"]


def test_a_bad_mesh_is_an_error_even_when_no_collective_uses_it(tmp_path):
    text = SCENARIO.replace("  axes: [data, model]\n", "").replace("model: 4}", "model: 3}")
    path, result = run_text(tmp_path, text)
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {path}: mesh: mesh {{data: 4, model: 3}} has 4 x 3 = 12 devices but topology torus4x4 has 16"


def test_mesh_scenario_runs_and_reports_its_groups(tmp_path):
    path, result = run_text(tmp_path, SCENARIO.replace("  axes: [data, model]", "  axes: [model, data]"))
    assert result.exit_code == 0, result.output
    assert "mesh axes" in result.output and "model, data" in result.output
    table = re.sub(r"[\s│]+", " ", result.output)  # the table wraps long cells
    assert "[[0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15]]" in table
    scenario = netsim.load_scenario(path)
    r = netsim.simulate(scenario)
    assert r.algorithm == "multiaxis" and r.axes == ("model", "data")
    np.testing.assert_array_equal(r.output, expected_all_gather(scenario.make_input(), 0, False, [[0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15]]))
    # naming an algorithm overrides the multi-axis default
    path, _ = run_text(tmp_path, SCENARIO + "algorithm: dimension_ordered\n")
    assert netsim.simulate(netsim.load_scenario(path)).algorithm == "dimension_ordered"


def _is_ring_by_routes(mesh, axis):
    """axis_is_ring written route by route (the reference of the arrays' version)."""
    a = mesh.axis_names.index(axis)
    lines = np.moveaxis(mesh.devices, a, -1).reshape(-1, mesh.devices.shape[a]).tolist()
    rings = chains = True
    for line in lines:
        n = len(line)
        forward = [mesh.topology.route(line[i], line[(i + 1) % n], 1) for i in range(n)]
        backward = [mesh.topology.route(line[(i + 1) % n], line[i], -1) for i in range(n)]
        hops = forward + backward
        rings &= all(len(r) == 1 for r in hops) and len({r[0] for r in hops}) == 2 * n
        chains &= all(len(forward[i]) == 1 and len(backward[i]) == 1 for i in range(n - 1))
    return n == 1 or rings or not chains


@pytest.mark.parametrize("seed", sample_then_slow(range(60), 15))
def test_axis_is_ring_agrees_with_the_routes(seed):
    rng = np.random.default_rng(seed)
    dims = tuple(int(d) for d in rng.integers(1, 5, rng.integers(1, 4)))
    wraps = tuple(bool(w) for w in rng.random(len(dims)) < 0.6)
    topo = torus(dims, wraps)
    n = topo.n_devices
    shape = {f"a{i}": d for i, d in enumerate(dims)}
    placements = [None, rng.permutation(n)]
    if len(dims) > 1:
        shape = {"a": dims[0], "rest": n // dims[0]}
    for devices in placements:
        mesh = Mesh(shape, topo, devices=devices)
        for axis in mesh.axis_names:
            assert mesh.axis_is_ring(axis) == _is_ring_by_routes(mesh, axis), (dims, wraps, devices, axis)
