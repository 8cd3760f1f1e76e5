"""Several slices joined by the DCN: the topology, meshes across slices, collectives over them and their closed forms."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import netsim
from netsim.analysis.closed_forms.multislice import DcnPath, estimate_across_slices
from netsim.network.dcn import DCN
from netsim.network.device_mesh import Mesh
from netsim.network.presets import tpu_slice
from netsim.network.slices import SlicedTopology, dcn_axes, hybrid_mesh, multislice
from netsim.network.topology import mesh, torus

# A Hamiltonian cycle of the 4x4 grid: the slice's 16 chips as one ring of neighbours.
CYCLE = [(0, 0), (0, 1), (0, 2), (0, 3), (1, 3), (2, 3), (3, 3), (3, 2), (2, 2), (1, 2), (1, 1), (2, 1), (3, 1), (3, 0), (2, 0), (1, 0)]


@pytest.fixture(scope="module")
def v5e() -> SlicedTopology:
    return tpu_slice("tpu-v5e:4x4x2slices")


def test_slices_hosts_and_nics_of_v5e(v5e):
    assert (v5e.n_devices, v5e.dims, v5e.wraparound, v5e.n_slices) == (32, (2, 4, 4), (True, False, False), 2)
    assert [v5e.slice_of(d) for d in (0, 15, 16, 31)] == [0, 0, 1, 1]
    assert v5e.coord(17) == (1, 0, 1) and v5e.index((1, 0, 1)) == 17
    # v5e: hosts of 4x2 chips, 2 NICs each: a 4x4 slice has 2 hosts, 4 NICs, 4 chips a NIC
    assert [v5e.host_of(d) for d in range(16)] == [0, 0, 1, 1] * 4
    assert len({v5e.nic_of(d) for d in range(32)}) == 8
    assert all(sum(v5e.nic_of(d) == nic for d in range(32)) == 4 for nic in set(v5e.device_nic))
    # devices, then 8 NICs, then the switch; ICI links per slice, then 4 links per device and 2 per NIC
    assert v5e.graph.number_of_nodes() == 32 + 8 + 1
    assert len(v5e.dcn_links) == 2 * 32 + 2 * 8
    assert v5e.graph.number_of_edges() == 2 * 48 + len(v5e.dcn_links)
    up = v5e.link((v5e.nic_of(0), v5e.switch, (0, 1)))
    assert up == {"bandwidth_Bps": 100e9 / 8, "latency_s": 10e-6}  # one 100 Gbps NIC (Cloud TPU v5e page)
    assert v5e.link((0, v5e.nic_of(0), (0, 1)))["bandwidth_Bps"] == 1.6e10  # PCIe, the book's per-chip figure
    assert [v5e.link_name(link) for link in v5e.route(1, 17)] == ["(0,0,1)->nic0", "nic0->switch", "switch->nic4", "nic4->(1,0,1)"]
    assert v5e.route(0, 5) == tpu_slice("tpu-v5e:4x4").route(0, 5).__class__(((0, 4, (1, 1)), (4, 5, (2, 1))))
    assert v5e.device(20) == tpu_slice("tpu-v5e:4x4").device(4)


def test_every_generation_has_cited_dcn_figures():
    for name, figures in DCN.items():
        assert "docs.cloud.google.com" in figures.source or "scaling-book" in figures.source or "book" in figures.source, name
        assert figures.nics_per_host * figures.nic_bandwidth_Bps == pytest.approx(figures.per_chip_Bps * figures.chips_per_host), name
    with pytest.raises(ValueError, match=r"'tpu-v3:4x4x2slices': slices join over the DCN from tpu-v4 on"):
        tpu_slice("tpu-v3:4x4x2slices")
    seven = tpu_slice("tpu7x:2x2x1x2slices")
    assert (seven.n_devices, seven.dims[-1], seven.graph.graph["chip_axis"]) == (16, 2, 4)


def test_multislice_options_and_errors():
    half = multislice(mesh((2, 2)), 2, nic_bandwidth_Bps=1e9, oversubscription=2)
    assert half.link((half.nic_of(0), half.switch, (0, 1)))["bandwidth_Bps"] == 0.5e9
    assert half.with_links(bandwidth_Bps=7e9).link((half.nic_of(0), half.switch, (0, 1)))["bandwidth_Bps"] == 0.5e9
    assert isinstance(half.with_links(bandwidth_Bps=7e9), SlicedTopology) and half.with_links(bandwidth_Bps=7e9).link((4, 5, (2, 1)))["bandwidth_Bps"] == 7e9
    with pytest.raises(ValueError, match=r"^slices must be a positive integer, got 0$"):
        multislice(mesh((2, 2)), 0)
    with pytest.raises(ValueError, match=r"^oversubscription must be a number of at least 1 \(1: a non-blocking switch\), got 0.5$"):
        multislice(mesh((2, 2)), 2, oversubscription=0.5)
    with pytest.raises(ValueError, match=r"^hosts of 3x2 devices do not tile a slice of 4x2$"):
        multislice(mesh((4, 2)), 2, host_shape=(3, 2))


def test_hybrid_mesh_lays_devices_as_jax():
    t = multislice(torus((2, 2)), 4)  # 4 slices of 4 devices
    m = hybrid_mesh({"data": 1, "fsdp": 2, "model": 2}, {"data": 2, "fsdp": 2, "model": 1}, t)
    assert dict(m.shape) == {"data": 2, "fsdp": 4, "model": 2}
    # JAX: along each axis, position = dcn_index * ici_size + ici_index; slice k at DCN position k (row-major)
    for data in range(2):
        for fsdp in range(4):
            for model in range(2):
                slice_ = data * 2 + fsdp // 2
                assert m.devices[data, fsdp, model] == slice_ * 4 + (fsdp % 2) * 2 + model
    assert dcn_axes(m) == ("data", "fsdp")
    assert all(len({t.slice_of(d) for d in group}) == 2 for group in m.groups("data"))
    with pytest.raises(ValueError, match=r"^the DCN mesh \{'data': 3, 'model': 1\} has 3 slices but torus2x2x4slices has 4$"):
        hybrid_mesh({"data": 1, "model": 4}, {"data": 3, "model": 1}, t)


def _snake(t: SlicedTopology) -> Mesh:
    return Mesh({"dcn": 2, "ici": 16}, t, devices=[[t.index((s, *c)) for c in CYCLE] for s in range(2)])


def test_hierarchical_psum_of_two_v5e_slices_equals_its_hand_form(v5e):
    m = _snake(v5e)
    assert m.axis_is_ring("ici") and m.axis_is_ring("dcn") and dcn_axes(m) == ("dcn",)
    x = np.random.default_rng(0).standard_normal((32, 2**18)).astype(np.float32)  # D = 1 MiB per chip
    result = netsim.psum(x, m.groups(["dcn", "ici"]), v5e, "hierarchical")
    assert result.verified
    np.testing.assert_allclose(result.output[5], x.astype(np.float64).sum(axis=0), rtol=1e-4, atol=1e-4)
    # The hand α–β form, written out. D = 2**20 B, S = 2 slices, M = 16 chips a slice, s = D/32.
    alpha, B = 1e-6, 45e9  # ICI: the book's v5e link, 1 us a hop
    alpha_p, B_p, alpha_n, B_n = 1e-6, 16e9, 10e-6, 12.5e9  # PCIe and NIC links (latencies assumed)
    s = 2**20 / 32  # 32768 B
    h, h_n = s / (2 * B), s / (2 * B_n)  # half a block over ICI (0.36409 us), over a NIC (1.31072 us)
    L = 2 * alpha_p + 2 * alpha_n  # 22 us from chip to chip across the DCN
    reduce_scatter_ici = 2 * h + 14 * (alpha + h) + alpha  # the last chunk's 15 hops; its first link sends 2 halves
    dcn_reduce_scatter = L + 8 * h_n  # c = 4 chips a NIC, 2 halves each: 8 messages queue on the uplink
    dcn_gather = L + h_n  # the peer's one message back, on an idle path
    all_gather_ici = 15 * (alpha + h)
    hand = reduce_scatter_ici + dcn_reduce_scatter + dcn_gather + all_gather_ici  # = 30α + 31h + 2L + 9h_n
    assert hand == pytest.approx(97.0832e-6, abs=1e-10)
    assert result.time == pytest.approx(hand, rel=1e-12)
    closed = estimate_across_slices("psum", "hierarchical", 2**20, 2, (16,), (True,), alpha, B, DcnPath(B_n, alpha_n, B_p, alpha_p, 4))
    assert closed.estimate.kind == "exact" and closed.estimate.time_s == pytest.approx(result.time, rel=1e-12)
    assert closed.dcn.time_s == pytest.approx(dcn_reduce_scatter + dcn_gather, rel=1e-12)
    # The naive baseline: one flat ring through all 32 chips in mesh order crosses the DCN at two points.
    flat = netsim.psum(x, m.groups(["dcn", "ici"]), v5e, "ring")
    assert flat.verified and flat.time == pytest.approx(210.33248e-6, rel=1e-6)  # 2.17x the hierarchical
    bound = estimate_across_slices("psum", "ring", 2**20, 2, (16,), (True,), alpha, B, DcnPath(B_n, alpha_n, B_p, alpha_p, 4), flat_order=True)
    assert bound.estimate.kind == "lower_bound" and bound.estimate.time_s <= flat.time


@pytest.mark.parametrize("elements", [2**10, 2**16])
def test_psum_over_the_dcn_axis_alone_equals_its_form(v5e, elements):
    m = Mesh({"dcn": 2, "x": 4, "y": 4}, v5e)
    x = np.arange(32 * elements, dtype=np.float32).reshape(32, elements)
    result = netsim.psum(x, m.groups("dcn"), v5e)
    assert result.verified and result.algorithm == "multiaxis"
    D = 4 * elements
    h_n, L = (D / 2) / (2 * 12.5e9), 22e-6
    assert result.time == pytest.approx(L + max(L + 9 * h_n, 16 * h_n), rel=1e-12)
    closed = estimate_across_slices("psum", "multiaxis", D, 2, (), (), 1e-6, 45e9, DcnPath(12.5e9, 10e-6, 16e9, 1e-6, 4))
    assert closed.estimate.kind == "exact" and closed.estimate.time_s == pytest.approx(result.time, rel=1e-12)
    gathered = netsim.all_gather(x, axis_index_groups=m.groups("dcn"), topology=v5e)
    assert gathered.verified and gathered.time == pytest.approx(L + 8 * D / (2 * 12.5e9), rel=1e-12)


def test_bounds_hold_over_four_slices():
    t = tpu_slice("tpu-v5e:2x2x4slices")  # hosts clipped to the slice: 4 chips, 2 NICs, 2 chips a NIC
    assert t.graph.graph["dcn"]["devices_per_nic"] == 2
    m = Mesh({"dcn": 4, "x": 2, "y": 2}, t)
    x = np.ones((16, 4096), np.float32)
    path = DcnPath(12.5e9, 10e-6, 16e9, 1e-6, 2)
    for algorithm, axes, inner, flat in (
        ("multiaxis", "dcn", (), False),
        ("hierarchical", ["dcn", "x", "y"], (2, 2), False),
        ("ring", ["dcn", "x", "y"], (2, 2), True),
    ):
        result = netsim.psum(x, m.groups(axes), t, algorithm)
        closed = estimate_across_slices("psum", algorithm, 4 * 4096, 4, inner, (False,) * len(inner), 1e-6, 45e9, path, flat_order=flat)
        assert result.verified and closed.estimate.kind == "lower_bound"
        assert closed.estimate.time_s <= result.time * (1 + 1e-12), algorithm


def test_program_across_slices_runs_verified_and_its_dcn_reduction_is_the_closed_form():
    from netsim.analysis.program_stats import program_stats
    from netsim.programs.files import load_program
    from netsim.programs.run import run_program

    result = run_program(load_program(Path(__file__).resolve().parent.parent / "scenarios" / "programs" / "fsdp_across_slices.yaml"))
    assert result.verified
    ops = {op.name: op for op in program_stats(result).ops}
    # layer 1's gradient runs while layer 2's reduction travels
    assert ops["grad1"].start_s < ops["scatter2"].end_s and ops["grad1"].end_s <= ops["sync2"].start_s
    # sync2: a psum of 128 KiB over the DCN alone, 2 slices, 2 chips a NIC (a 2x2 slice is one host of 2 NICs)
    s = 256 * 512 * 4 / 4 / 2
    h_n, L = s / (2 * 12.5e9), 22e-6
    assert ops["sync2"].estimate_s == pytest.approx(L + max(L + 5 * h_n, 8 * h_n), rel=1e-12)
    assert ops["sync2"].time_s == pytest.approx(ops["sync2"].estimate_s, rel=1e-9)


def test_scenario_across_slices_loads_and_estimates(tmp_path):
    from netsim.analysis.why import estimate_scenario
    from netsim.scenario import load_scenario

    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\ntopology: tpu-v5e:4x4x2slices\nmesh: {shape: {dcn: 2, x: 4, y: 4}}\n"
        "collective: {op: psum, axes: [dcn]}\ninput: {bytes_per_device: 16 KiB, dtype: float32}\n"
    )
    scenario = load_scenario(path, build_topology=False)
    assert scenario.topology_shape.slices == 2 and scenario.topology_shape.n_devices == 32
    mine, others = estimate_scenario(scenario)
    h_n, L = 8192 / (2 * 12.5e9), 22e-6
    assert mine.estimate.kind == "exact" and mine.estimate.time_s == pytest.approx(L + max(L + 9 * h_n, 16 * h_n), rel=1e-12)
    assert "ICI 0 us | DCN" in mine.estimate.formula
    assert [name for name, _ in others] == ["hierarchical", "multiaxis", "bidirectional_ring", "ring"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(path.read_text().replace("tpu-v5e:4x4x2slices", "tpu-v2:4x4x2slices"))
    with pytest.raises(ValueError, match=r"topology: 'tpu-v2:4x4x2slices': slices join over the DCN from tpu-v4 on"):
        load_scenario(bad, build_topology=False)


def test_timeline_has_a_dcn_lane_per_slice_and_explain_names_the_dcn():
    from netsim.teaching.explain import explain
    from netsim.teaching.timeline_axes import axis_rows

    t = tpu_slice("tpu-v5e:2x2x2slices")  # a 2x2 slice is one host of 4 chips and 2 NICs
    m = Mesh({"dcn": 2, "x": 2, "y": 2}, t)
    result = netsim.psum(np.ones((8, 64), np.float32), m.groups(["dcn", "x"]), t, "hierarchical")
    rows = {row.label: row for row in axis_rows(result)}
    assert list(rows)[:4] == ["DCN down, slice 0", "DCN down, slice 1", "DCN up, slice 0", "DCN up, slice 1"]
    # each slice's DCN links: its 4 chips' PCIe links and its 2 NICs' links, one way each
    assert rows["DCN up, slice 0"].links == 4 + 2 and rows["DCN up, slice 0"].messages > 0
    assert rows["axis 1 +"].links == 2 * 2 and rows["axis 1 +"].messages > 0  # ICI: 2 lines of 2 a slice
    assert "its peer +1 slice away, over the DCN" in explain(result)
    with pytest.raises(ValueError, match=r"^cannot animate tpu-v5e:2x2x2slices: slices joined by the DCN are not drawn"):
        netsim.animate(result)


DOC = Path(__file__).resolve().parent.parent / "docs" / "multislice.md"


def test_the_multislice_doc_python_blocks_and_commands_run(monkeypatch):
    import re
    import shlex

    from typer.testing import CliRunner

    from netsim.cli.main import app

    monkeypatch.chdir(DOC.parent.parent)  # the doc's paths are the project's
    text = DOC.read_text(encoding="utf-8")
    namespace: dict = {}
    for block in re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M):
        exec(compile(block, str(DOC), "exec"), namespace)
    commands = [line.strip() for line in text.splitlines() if line.startswith("    netsim ")]
    assert [c.split()[1] for c in commands] == ["run", "estimate", "program", "program"]
    runner, outputs = CliRunner(), []
    for command in commands:
        done = runner.invoke(app, shlex.split(command)[1:], env={"COLUMNS": "100"})
        assert done.exit_code == 0, f"{command}\n{done.output[-2000:]}"
        outputs.append(done.output)
    assert "97.0832 us" in outputs[0] and "97.0832 us" in outputs[1] and "verified" in outputs[2]
    assert "75.9018 us" in outputs[3] and "49.9 us" in outputs[3]  # the two-slice module: its step, and its DCN all-reduce
    assert (DOC.parent / "images" / "dcn_data_parallel.png").is_file()


@pytest.mark.parametrize("name", ["tpu-v5e:2x2x2slices", "tpu-v4:2x2x2x2slices"])
def test_every_estimate_across_slices_is_exact_or_a_bound_the_run_keeps(name):
    from netsim.analysis.why import analyse

    t = tpu_slice(name)
    names = ["dcn", *(f"a{i}" for i in range(len(t.slice_dims)))]
    m = Mesh(dict(zip(names, (t.n_slices, *t.slice_dims), strict=True)), t)
    x = np.ones((t.n_devices, 256), np.float32)
    kinds = set()
    for axes in (["dcn"], ["dcn", "a0"], ["a0", "dcn"], names):  # (the DCN axis second: no exact form, a bound)
        for algorithm in ("hierarchical", "ring"):
            for run in (netsim.psum, netsim.all_gather):
                result = run(x, axis_index_groups=m.groups(axes), topology=t, algorithm=algorithm)
                e = analyse(result).estimate
                kinds.add(e.kind)
                assert result.verified
                if e.kind == "exact":
                    assert result.time == pytest.approx(e.time_s, rel=1e-9), (axes, algorithm, run.__name__)
                else:
                    assert e.kind == "lower_bound" and e.time_s <= result.time * (1 + 1e-12), (axes, algorithm, run.__name__)
    # v4's NIC (25 GB/s for 4 chips) is faster than a chip's PCIe (16 GB/s): the exact forms assume the NIC is the slowest link
    assert kinds == ({"exact", "lower_bound"} if name.startswith("tpu-v5e") else {"lower_bound"})
