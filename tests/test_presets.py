"""TPU slices by name: the generations' numbers, their wraparound rules, the files, the errors."""

from __future__ import annotations

import importlib.util
import textwrap

import numpy as np
import pytest
import yaml
from conftest import ROOT
from typer.testing import CliRunner

import netsim
from netsim.cli.main import app
from netsim.engine import play
from netsim.network.presets import GENERATIONS, parse_slice, tpu_slice
from netsim.run import resolve_topology

runner = CliRunner()


def test_generation_numbers_are_the_documented_ones():
    # the scaling book's TPU chapter: one-way bandwidth per link direction, ~1 us per hop.
    expected = {
        "tpu-v4": (3, 45e9, 4096),
        "tpu-v5p": (3, 90e9, 8960),
        "tpu-v5e": (2, 45e9, 256),
        "tpu-v6e": (2, 90e9, 256),
        "tpu-v3": (2, 100e9, 1024),  # the book's interconnect table: 1e11 one way; pod 32x32
        "tpu-v2": (2, 60e9, 256),  # the book's profiling example: 1.2e11 bidirectional on one link
        # TPU7x: the book's 90 GB/s per chip-to-chip link, shared by the chip's two devices (assumed
        # evenly: a 45 GB/s lane each); 9216 chips per pod (the Cloud TPU7x page)
        "tpu7x": (3, 90e9 / 2, 9216),
    }
    assert {name: (g.n_axes, g.bandwidth_Bps, g.max_chips) for name, g in GENERATIONS.items()} == expected
    assert all(g.latency_s == 1e-6 for g in GENERATIONS.values())


def test_chip_figures_are_the_cited_ones():
    # The scaling book's TPU chapter, table "TPU specs", per chip: bf16 FLOP/s, HBM bytes/s, HBM "GB", which are GiB
    # (libtpu's available HBM is more than 10**9 x the figure on every generation: see the next test).
    expected = {
        "tpu-v4": (2.75e14, 1.2e12, 32 * 2**30),
        "tpu-v5p": (4.59e14, 2.8e12, 96 * 2**30),
        "tpu-v5e": (1.97e14, 8.1e11, 16 * 2**30),
        "tpu-v6e": (9.20e14, 1.6e12, 32 * 2**30),
        "tpu-v3": (1.4e14, 9.0e11, 32 * 2**30),
        "tpu-v2": (None, None, None),  # not in the book's table: unknown
        # TPU7x, per device = half a chip: 2307 TFLOP/s bf16 and 192 GiB (Cloud TPU7x page), 7.37 TB/s (Google)
        "tpu7x": (2307e12 / 2, 7.37e12 / 2, 192 * 2**30 // 2),
    }
    assert {name: (g.peak_flops, g.hbm_bandwidth_Bps, g.hbm_capacity_bytes) for name, g in GENERATIONS.items()} == expected
    # every device of every slice carries them
    for name, shape in (("tpu-v4", "2x2x4"), ("tpu-v5p", "4x4x4"), ("tpu-v5e", "4x4"), ("tpu-v6e", "8x16"), ("tpu7x", "2x2x2")):
        t = tpu_slice(f"{name}:{shape}")
        peak, hbm, capacity = expected[name]
        assert all(t.device(d) == {"peak_flops": peak, "hbm_bandwidth_Bps": hbm, "hbm_capacity_bytes": capacity} for d in range(t.n_devices))
    # v5e: the arithmetic intensity where a chip stops being HBM-bound, about 240 FLOP/byte
    v5e = tpu_slice("tpu-v5e:4x4").device(0)
    assert v5e["peak_flops"] / v5e["hbm_bandwidth_Bps"] == pytest.approx(243, abs=1)


def test_capacities_hold_the_hbm_the_tpu_compiler_offers_which_is_more_than_the_tables_gb():
    """What libtpu offers a chip (HBM_OFFERED_GIB) is more than the tables' figure read as 10**9 bytes, so the
    tables' GB are GiB; each capacity holds it."""
    from netsim.network.presets import HBM_OFFERED_GIB

    assert set(HBM_OFFERED_GIB) == {"tpu-v4", "tpu-v5p", "tpu-v5e", "tpu-v6e"}
    for name, gib in HBM_OFFERED_GIB.items():
        capacity = GENERATIONS[name].hbm_capacity_bytes
        assert gib * 2**30 > capacity // 2**30 * 10**9 and gib * 2**30 <= capacity, name


@pytest.mark.skipif(importlib.util.find_spec("libtpu") is None, reason="needs libtpu (the tpu extra)")
def test_the_tpu_compiler_offers_a_v5e_chip_the_hbm_the_presets_say():
    """Where libtpu is installed: its refusal of two 16 GiB temporaries on a v5e chip names the HBM it offers."""
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    from tpu_hbm_available import available_hbm

    from netsim.network.presets import HBM_OFFERED_GIB

    assert available_hbm("v5e:2x2", "default", 16) == f"temporaries 32.00G, available HBM {HBM_OFFERED_GIB['tpu-v5e']}G"


def test_a_scenario_device_section_overrides_the_preset_field_by_field(tmp_path):
    text = """
        name: t
        topology: tpu-v5e:2x2
        device: {hbm_capacity: 32 GiB, hbm_bandwidth: 819 GB/s}
        collective: {op: psum}
        input: {shape: [8], dtype: int32}
    """
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(text))
    scenario = netsim.load_scenario(path)
    merged = {"peak_flops": 1.97e14, "hbm_bandwidth_Bps": 8.19e11, "hbm_capacity_bytes": 32 * 2**30}
    assert scenario.topology_obj.device(3) == merged
    assert scenario.topology_shape.device == merged
    # the scenario as run carries the merged figures in its inline topology and loads back to them
    as_run = scenario.as_run()
    assert as_run["topology"]["device"] == {"peak_flops": "197 TFLOP/s", "hbm_bandwidth": "819 GB/s", "hbm_capacity": "32 GiB"} and "device" not in as_run
    again = tmp_path / "again.yaml"
    again.write_text(yaml.safe_dump(as_run))
    assert netsim.load_scenario(again).topology_obj.device(0) == merged
    # without a device section, the preset's figures
    path.write_text(textwrap.dedent(text).replace("device: {hbm_capacity: 32 GiB, hbm_bandwidth: 819 GB/s}\n", ""))
    assert netsim.load_scenario(path).topology_obj.device(0) == GENERATIONS["tpu-v5e"].device


def test_a_topology_file_with_a_device_section_gives_those_figures(tmp_path):
    path = tmp_path / "chips.yaml"
    path.write_text("kind: torus\ndims: [2, 2]\ndevice:\n  peak_flops: 197 TFLOP/s\n  hbm_bandwidth: 819 GB/s\n  hbm_capacity: 16 GiB\n")
    t = netsim.load_topology(path)
    assert all(t.device(d) == {"peak_flops": 1.97e14, "hbm_bandwidth_Bps": 8.19e11, "hbm_capacity_bytes": 16 * 2**30} for d in range(4))
    path.write_text("kind: torus\ndims: [2, 2]\ndevice: {peak_flops: 918 TFLOPS}\n")
    assert netsim.load_topology(path).device(1) == {"peak_flops": 9.18e14, "hbm_bandwidth_Bps": None, "hbm_capacity_bytes": None}
    assert netsim.load_topology("ring8").device(0)["peak_flops"] is None  # a generic ring knows no chip


@pytest.mark.parametrize(
    ("name", "wraps"),
    [
        ("tpu-v5e:8x16", (False, True)),  # v5e wraps an axis only when it has 16 chips
        ("tpu-v5e:16x16", (True, True)),
        ("tpu-v5e:8x4", (False, False)),
        ("tpu-v6e:16x8", (True, False)),
        ("tpu-v4:4x4x4", (True, True, True)),  # a whole cube
        ("tpu-v4:4x4x8", (True, True, True)),
        ("tpu-v4:2x2x4", (False, False, False)),  # smaller than a cube: no wraparound at all
        ("tpu-v4:2x4x4", (False, False, False)),
        ("tpu-v5p:8x8x16", (True, True, True)),
    ],
)
def test_wraparound_rules(name, wraps):
    t = tpu_slice(name)
    assert t.wraparound == wraps
    assert t.name == name
    generation = GENERATIONS[name.split(":")[0]]
    links = [t.link(link) for link in t.links]
    assert {(d["bandwidth_Bps"], d["latency_s"]) for d in links} == {(generation.bandwidth_Bps, 1e-6)}
    # a wrapped axis of size d >= 3 adds one cable per line of that axis
    for axis, (size, wrapped) in enumerate(zip(t.dims, wraps, strict=True)):
        cables = sum(1 for u, v, (a, step) in t.links if a == axis and step == 1)
        lines = t.n_devices // size
        assert cables == lines * (size if wrapped else size - 1)


def test_the_largest_v4_pod_builds():
    t = tpu_slice("tpu-v4:16x16x16")
    assert (t.n_devices, t.dims, t.wraparound) == (4096, (16, 16, 16), (True, True, True))
    assert all(t.graph.out_degree(d) == 6 for d in (0, 1234, 4095))


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "tpu-v9:4x4",
            "unknown TPU generation 'tpu-v9' in 'tpu-v9:4x4'; known: tpu-v4, tpu-v5p, tpu-v5e, tpu-v6e, tpu-v3, tpu-v2, tpu7x (write e.g. tpu-v5e:8x16)",
        ),
        (
            "v5e:4x4",
            "unknown TPU generation 'v5e' in 'v5e:4x4'; did you mean tpu-v5e:4x4?;"
            " known: tpu-v4, tpu-v5p, tpu-v5e, tpu-v6e, tpu-v3, tpu-v2, tpu7x (write e.g. tpu-v5e:8x16)",
        ),
        ("tpu-v5e:4x4x4", "tpu-v5e is a 2D torus: 'tpu-v5e:4x4x4' gives 3 axes; write e.g. tpu-v5e:4x4"),
        ("tpu-v4:4x4", "tpu-v4 is a 3D torus: 'tpu-v4:4x4' gives 2 axes; write e.g. tpu-v4:4x4x4"),
        ("tpu-v4:4x4x", "cannot read the slice shape '4x4x' in 'tpu-v4:4x4x'; write the axis sizes joined by 'x', e.g. tpu-v4:4x4x4"),
        ("tpu-v5e:0x4", "cannot read the slice shape '0x4' in 'tpu-v5e:0x4'; write the axis sizes joined by 'x', e.g. tpu-v5e:4x4"),
        ("tpu-v5e:", "cannot read the slice shape '' in 'tpu-v5e:'; write the axis sizes joined by 'x', e.g. tpu-v5e:4x4"),
        ("tpu-v5e:32x8", "'tpu-v5e:32x8': a tpu-v5e axis has at most 16 chips, got 32"),
        ("tpu-v4:32x32x32", "'tpu-v4:32x32x32' has 32768 chips; the largest tpu-v4 pod has 4096"),
    ],
)
def test_bad_slice_names(name, message):
    with pytest.raises(ValueError) as error:
        parse_slice(name)
    assert str(error.value) == message
    with pytest.raises(ValueError) as error:
        netsim.all_gather(np.zeros(16), topology=name)
    assert str(error.value) == message


def test_bundled_tpu_files_agree_with_the_presets():
    files = sorted((ROOT / "topologies").glob("tpu*.yaml"))
    assert len(files) >= 7 and {"tpu7x-2x2x1", "tpu7x-4x4x4"} <= {path.stem for path in files}
    for path in files:
        stem = path.stem
        generation, shape = stem.rsplit("-", 1)
        preset = tpu_slice(f"{generation}:{shape}")
        from_file = netsim.load_topology(path)
        assert (from_file.dims, from_file.wraparound) == (preset.dims, preset.wraparound), stem
        assert {tuple(sorted(from_file.link(lk).items())) for lk in from_file.links} == {tuple(sorted(preset.link(lk).items())) for lk in preset.links}, stem
        assert [from_file.device(d) for d in range(from_file.n_devices)] == [preset.device(d) for d in range(preset.n_devices)], stem
        assert from_file.device(0)["peak_flops"] is not None, stem
        assert "#" in path.read_text() and yaml.safe_load(path.read_text())["name"] == stem


def test_slice_names_work_in_the_api_and_in_scenarios(tmp_path):
    assert resolve_topology("tpu-v5e:8x16", 128).dims == (8, 16)
    with pytest.raises(ValueError, match=r"^input has 16 devices on its leading axis but topology tpu-v5e:8x16 has 128$"):
        resolve_topology("tpu-v5e:8x16", 16)
    r = netsim.all_gather(np.arange(64, dtype=np.int32).reshape(16, 4), topology="tpu-v6e:4x4")
    assert r.topology == "tpu-v6e:4x4" and r.verified
    text = """
        name: t
        topology: tpu-v5e:2x4
        collective: {op: psum}
        input: {shape: [8], dtype: int32}
    """
    path = tmp_path / "s.yaml"
    path.write_text(textwrap.dedent(text))
    assert netsim.load_scenario(path).topology_obj.name == "tpu-v5e:2x4"
    path.write_text(textwrap.dedent(text).replace("tpu-v5e:2x4", "tpu-v5e:2x2x2"))
    result = runner.invoke(app, ["run", str(path)])
    assert result.exit_code == 2
    assert result.output.strip() == f"error: {path}: topology: tpu-v5e is a 2D torus: 'tpu-v5e:2x2x2' gives 3 axes; write e.g. tpu-v5e:4x4"


def test_corner_to_corner_on_a_v5e_4x4_is_data_time_plus_six_hops():
    # The scaling book: on a v5e 4x4 slice (no wraparound) a corner-to-corner send crosses
    # 3 + 3 links; cut-through it takes the data time plus 6 us.
    t = tpu_slice("tpu-v5e:4x4")
    src, dst = t.index((0, 0)), t.index((3, 3))
    route = t.route(src, dst)
    assert [t.link_name(h) for h in route] == ["(0,0)->(1,0)", "(1,0)->(2,0)", "(2,0)->(3,0)", "(3,0)->(3,1)", "(3,1)->(3,2)", "(3,2)->(3,3)"]
    size = 1 << 20
    move = type("Move", (), {"src": src, "dst": dst, "key": "x", "reduce": False, "direction": 1, "deps": ()})()
    buffers = [{} for _ in range(16)]
    buffers[src]["x"] = np.zeros(size, np.uint8)
    data_time = size / 45e9
    assert play(t, [move], buffers).time == pytest.approx(data_time + 6e-6, rel=1e-9)
    assert play(t, [move], buffers, cut_through=False).time == pytest.approx(6 * (data_time + 1e-6), rel=1e-9)
    # with wraparound (a v5e 16x16 pod) the corner is 2 hops away round the back
    pod = tpu_slice("tpu-v5e:16x16")
    assert len(pod.route(0, pod.index((15, 15)))) == 2


def test_a_shape_no_tpu_comes_in_runs_with_one_warning_naming_the_shapes_offered(tmp_path):
    import subprocess
    import sys
    import warnings

    with pytest.warns(netsim.network.presets.SliceShapeWarning) as caught:
        assert tpu_slice("tpu-v5e:3x5").dims == (3, 5)
        assert tpu_slice("tpu-v4:4x4x5").n_devices == 80
    assert [str(w.message) for w in caught] == [
        "'tpu-v5e:3x5' is a shape no TPU comes in, simulated as written: tpu-v5e comes in 1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16 (either way round)",
        "'tpu-v4:4x4x5' is a shape no TPU comes in, simulated as written: tpu-v4 comes in 2x2x1, 2x2x2, 2x2x4, 2x4x4"
        " and shapes whose axes are all multiples of 4 (in any order)",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the documented shapes, turned or not, say nothing
        for name in ("tpu-v5e:8x4", "tpu-v6e:16x8", "tpu-v4:8x4x4", "tpu-v5p:2x1x2", "tpu7x:2x2x1", "tpu-v4:4x4x4x2slices", "tpu-v3:4x4"):
            tpu_slice(name)
    text = (ROOT / "scenarios" / "allgather_tpu_v5e_8x4_line.yaml").read_text()
    path = tmp_path / "odd.yaml"
    path.write_text(text.replace("tpu-v5e:8x4", "tpu-v5e:3x5").replace("{data: 8, model: 4}", "{data: 3, model: 5}").split("expected:")[0])
    ran = subprocess.run([sys.executable, "-m", "netsim", "run", str(path)], capture_output=True, text=True, cwd=ROOT)
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr == (
        "warning: 'tpu-v5e:3x5' is a shape no TPU comes in, simulated as written:"
        " tpu-v5e comes in 1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16 (either way round)\n"
    )
