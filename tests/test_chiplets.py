"""TPU7x (Ironwood): two devices per chip, joined on the chip; the chips on a 3D torus."""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pytest
from typer.testing import CliRunner

import netsim
from netsim.algorithms.registry import ALGORITHMS
from netsim.analysis.why import analyse, estimate_scenario
from netsim.cli.main import app
from netsim.network.chiplets import chip_axis, chip_torus
from netsim.network.presets import TPU7X_CHIP_LINK_BANDWIDTH_BPS, tpu_slice

LANE = 90e9 / 2  # the book's 90 GB/s per chip-to-chip link, one core's half
CHIP_LINK = 90e9  # assumed: as one chip-to-chip link
ALPHA = 1e-6
runner = CliRunner()


def test_a_4x4x4_slice_is_64_chips_and_128_devices_numbered_chip_then_core():
    t = tpu_slice("tpu7x:4x4x4")
    assert (t.n_devices, t.dims, t.wraparound, chip_axis(t)) == (128, (4, 4, 4, 2), (True, True, True, False), 3)
    # device d is core d % 2 of chip d // 2, the chips row-major over (x, y, z)
    for d in (0, 1, 2, 37, 127):
        chip, core = divmod(d, 2)
        assert t.coord(d) == (chip // 16, chip // 4 % 4, chip % 4, core)
        assert t.index(t.coord(d)) == d
    assert tpu_slice("tpu7x:2x2x1").n_devices == 8


def test_the_two_devices_of_a_chip_are_joined_by_the_chip_link_alone():
    t = tpu_slice("tpu7x:4x4x4")
    for chip in (0, 21, 63):
        a, b = 2 * chip, 2 * chip + 1
        # one cable, both ways, with the on-chip link's figures; no second (wrap) cable
        assert [key for key in t.graph[a][b]] == [(3, 1)] and [key for key in t.graph[b][a]] == [(3, -1)]
        assert t.link((a, b, (3, 1))) == {"bandwidth_Bps": CHIP_LINK, "latency_s": ALPHA}
        assert t.link((b, a, (3, -1))) == {"bandwidth_Bps": CHIP_LINK, "latency_s": ALPHA}
        assert t.route(a, b) == ((a, b, (3, 1)),)
    assert TPU7X_CHIP_LINK_BANDWIDTH_BPS == CHIP_LINK
    # every other link is a lane of 45 GB/s
    lanes = {tuple(sorted(t.link(link).items())) for link in t.links if link[2][0] != 3}
    assert lanes == {(("bandwidth_Bps", LANE), ("latency_s", ALPHA))}


def test_neighbours_across_chips_are_the_same_core_of_the_next_chip():
    t = tpu_slice("tpu7x:4x4x4")
    d = t.index((1, 2, 3, 1))
    out = sorted(t.coord(v) for v in t.graph.successors(d))
    # six lanes (x, y and z, both ways; z wraps 3 -> 0) to core 1 of the neighbouring chips, and the chip link
    assert out == sorted([(0, 2, 3, 1), (2, 2, 3, 1), (1, 1, 3, 1), (1, 3, 3, 1), (1, 2, 2, 1), (1, 2, 0, 1), (1, 2, 3, 0)])
    # a route corrects the chips' axes first, then crosses to the other core on the last chip
    route = t.route(t.index((0, 0, 0, 0)), t.index((1, 0, 3, 1)))
    assert [t.link_name(hop) for hop in route] == ["(0,0,0,0)->(1,0,0,0)", "(1,0,0,0)->(1,0,3,0)", "(1,0,3,0)->(1,0,3,1)"]


@pytest.mark.parametrize(
    ("name", "wraps", "lanes_per_core"),
    [
        ("tpu7x:4x4x4", (True, True, True, False), 3 * 64),  # whole cube: every chip axis wraps, 64 cables per axis
        ("tpu7x:4x4x8", (True, True, True, False), 3 * 128),  # a wrapped axis has one cable per chip
        ("tpu7x:2x4x4", (False, False, False, False), 16 + 24 + 24),  # smaller than a cube: none wraps
        ("tpu7x:2x2x1", (False, False, False, False), 2 + 2),
    ],
)
def test_wraparound_follows_v4_and_the_core_axis_never_wraps(name, wraps, lanes_per_core):
    t = tpu_slice(name)
    assert t.wraparound == wraps
    chips = t.n_devices // 2
    forward = [link for link in t.links if link[2][1] == 1]
    assert sum(1 for link in forward if link[2][0] == 3) == chips  # one on-chip cable per chip
    assert sum(1 for link in forward if link[2][0] != 3) == 2 * lanes_per_core  # each chip cable is two lanes


def test_bad_tpu7x_names():
    with pytest.raises(ValueError, match=r"^tpu7x is a 3D torus: 'tpu7x:4x4' gives 2 axes; write e.g. tpu7x:4x4x4$"):
        tpu_slice("tpu7x:4x4")
    with pytest.raises(ValueError, match=r"^'tpu7x:32x32x32' has 32768 chips; the largest tpu7x pod has 9216$"):
        tpu_slice("tpu7x:32x32x32")


def _gather(topology, axis, per_device, **kwargs):
    mesh = netsim.Mesh({"x": 4, "y": 4, "z": 4, "core": 2}, topology)
    x = np.zeros((topology.n_devices, per_device // 4), np.float32)
    return netsim.all_gather(x, axis_index_groups=mesh.groups(axis), topology=topology, data="none", **kwargs)


def test_all_gather_between_the_two_cores_of_every_chip_takes_one_chip_link_hop():
    t, s = tpu_slice("tpu7x:4x4x4"), 1 << 20
    result = _gather(t, "core", s)
    assert len(result.groups) == 64 and all(b == a + 1 for a, b in result.groups)
    # each device sends its 1 MiB to its partner over the on-chip link, every chip at once
    assert result.time == pytest.approx(ALPHA + s / CHIP_LINK, rel=1e-12)  # 12.65 us
    # the run crosses on-chip links only, so the closed forms take their 90 GB/s, not the lanes' 45
    analysis = analyse(result)
    assert analysis.estimate.kind == "exact" and analysis.estimate.time_s == pytest.approx(ALPHA + s / CHIP_LINK, rel=1e-12)
    # a gather over x and core crosses both: the forms, for the lanes, promise nothing
    both = _gather(t, ["x", "core"], s, algorithm="ring")
    assert analyse(both).estimate.kind == "none" and "the run also crosses links of 90 GB/s and 1 us: no promise" in analyse(both).estimate.formula


def test_all_gather_along_x_runs_on_each_cores_lanes_at_once():
    t, s = tpu_slice("tpu7x:4x4x4"), 1 << 20
    result = _gather(t, "x", s, algorithm="ring")
    assert len(result.groups) == 32  # 16 lines of chips x 2 cores
    # a ring of 4 on the wrapped x axis: 3 steps of alpha + s/B on a 45 GB/s lane; the two
    # cores' rings share no link, so 32 rings take as long as one
    assert result.time == pytest.approx(3 * (ALPHA + s / LANE), rel=1e-12)  # 72.9 us
    assert analyse(result).estimate.kind == "exact" and analyse(result).ratio == pytest.approx(1, abs=1e-9)


def test_a_topology_file_sets_the_chip_link_and_must_say_two_devices_per_chip(tmp_path):
    path = tmp_path / "ironwood.yaml"
    path.write_text("kind: mesh\ndims: [2, 1, 1]\ndevices_per_chip: 2\nlink: {bandwidth: 45 GB/s}\nchip_link: {bandwidth: 400 GB/s, latency: 2 us}\n")
    t = netsim.load_topology(path)
    assert t.dims == (2, 1, 1, 2) and t.link((0, 1, (3, 1))) == {"bandwidth_Bps": 4e11, "latency_s": 2e-6}
    assert t.link((0, 2, (0, 1))) == {"bandwidth_Bps": 45e9, "latency_s": 1e-6}
    path.write_text("kind: mesh\ndims: [2, 2]\nchip_link: {bandwidth: 400 GB/s}\n")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: t\ntopology: {path}\ncollective: {{op: psum}}\ninput: {{shape: [8], dtype: int32}}\n")
    result = runner.invoke(app, ["run", str(scenario)])
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {path}: dims: chip_link joins the two devices of a chip; give devices_per_chip: 2 or leave chip_link out"


def test_chip_torus_checks_the_chip_link():
    with pytest.raises(ValueError, match=r"^a link's bandwidth must be positive and finite, got 0 B/s$"):
        chip_torus((2,), False, 45e9, 0.0)


def _run(path):
    result = runner.invoke(app, ["run", str(path), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_a_scenario_on_a_tpu7x_slice_with_mesh_axes_runs_and_estimates(tmp_path):
    text = """
        name: ironwood_core_pairs
        topology: tpu7x:2x2x1
        mesh:
          shape: {x: 2, y: 2, z: 1, core: 2}
        collective: {op: all_gather, axes: [y]}
        input: {bytes_per_device: 1 MiB, dtype: float32}
    """
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(text))
    scenario = netsim.load_scenario(path)
    assert scenario.topology_shape.dims == (2, 2, 1, 2) and scenario.topology_shape.chip_link_bandwidth_Bps == CHIP_LINK
    # y pairs devices on neighbouring chips, same core: one lane hop each way
    s = 1 << 20
    assert _run(path)["time_s"] == pytest.approx(ALPHA + s / LANE, rel=1e-12)
    mine, _ = estimate_scenario(netsim.load_scenario(path, build_topology=False))
    assert mine.estimate.kind == "exact" and mine.estimate.time_s == pytest.approx(ALPHA + s / LANE, rel=1e-9)
    # over the core axis every group is one chip: estimated and run at the on-chip link's speed
    path.write_text(textwrap.dedent(text).replace("axes: [y]", "axes: [core]"))
    mine, _ = estimate_scenario(netsim.load_scenario(path, build_topology=False))
    assert mine.estimate.kind == "exact" and mine.estimate.time_s == pytest.approx(ALPHA + s / CHIP_LINK, rel=1e-12)
    run = _run(path)
    assert run["time_s"] == pytest.approx(ALPHA + s / CHIP_LINK, rel=1e-12) and run["estimate_kind"] == "exact"
    # over y and core the groups cross lanes and on-chip links: no promise
    path.write_text(textwrap.dedent(text).replace("axes: [y]", "axes: [y, core]"))
    mine, _ = estimate_scenario(netsim.load_scenario(path, build_topology=False))
    assert mine.estimate.kind == "none" and _run(path)["estimate_kind"] == "none"
    # the scenario as run writes the chip link back, and loads to the same topology
    as_run = netsim.load_scenario(path).as_run()["topology"]
    assert as_run["dims"] == [2, 2, 1] and as_run["devices_per_chip"] == 2 and as_run["chip_link"] == {"bandwidth": "90 GB/s", "latency": "1 us"}


PATTERN = {"all_gather": "gather", "psum_scatter": "reduce_scatter", "psum": "all_reduce", "all_to_all": "all_to_all"}


def _collective(topology, groups, collective, algorithm, elements):
    n, group = topology.n_devices, len(groups[0]) if groups is not None else topology.n_devices
    x = np.ones((n, group * elements), np.float32)
    kwargs = {"topology": topology, "algorithm": algorithm, "data": "none", "axis_index_groups": groups}
    if collective == "psum_scatter":
        kwargs["tiled"] = True
    if collective == "all_to_all":
        x = x.reshape(n, group, elements)
        kwargs.update(split_axis=0, concat_axis=0)
    return getattr(netsim, collective)(x, **kwargs)


@pytest.mark.parametrize("chip_link", [LANE, LANE / 2, 2 * LANE], ids=["as-fast", "slower", "faster"])
def test_estimate_kinds_keep_their_promise_with_two_devices_per_chip(chip_link):
    """Generated layouts on a 2x2x1 slice of two-device chips: with the on-chip link as fast as a lane
    every promise holds as on any grid; a run that crosses only on-chip links is priced at their speed;
    one that also crosses a faster one promises nothing, a slower one at most a lower bound, which holds."""
    t = chip_torus((2, 2, 1), False, LANE, chip_link)
    names = {"x": 2, "y": 2, "z": 1, "core": 2}
    m = netsim.Mesh(names, t)
    seen = set()
    for groups in (m.groups(list(names)), m.groups("core"), m.groups(["x", "y"]), m.groups(["y", "core"])):
        for collective, pattern in PATTERN.items():
            for algorithm, plan in ALGORITHMS.items():
                if not plan.runs(pattern):
                    continue
                for elements in (3, 12000):
                    result = _collective(t, groups, collective, algorithm, elements)
                    estimate = analyse(result).estimate
                    on_chip = [link[2][0] == 3 for leaf in result.leaves for route in leaf.playback.routes for link in route]
                    crosses, only = any(on_chip), all(on_chip)  # (only: the formulas take the on-chip link's speed)
                    relative = (result.time - estimate.time_s) / estimate.time_s
                    kind = estimate.kind
                    seen.add((crosses, kind))
                    if crosses and not only and chip_link > LANE:
                        assert kind == "none", (collective, algorithm, groups)
                    elif crosses and not only and chip_link < LANE:
                        assert kind in ("none", "lower_bound")
                    else:
                        assert kind in ("exact", "lower_bound")
                    if kind == "exact":
                        assert abs(relative) <= 1e-9, (collective, algorithm, groups, result.time, estimate.time_s)
                    elif kind == "lower_bound":
                        assert relative >= -1e-9, (collective, algorithm, groups, result.time, estimate.time_s)
    assert (False, "exact") in seen and (True, "exact") in seen  # the core axis alone is exact at any on-chip speed
