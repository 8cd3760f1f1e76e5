"""Modules that JAX compiles (CPU, 8 fake devices, a 2x4 mesh x, y): every collective read as compiled.

The modules are compiled in a subprocess (XLA_FLAGS must be set before JAX starts), from
the examples in :mod:`netsim.programs.hlo.examples`; the expectations here are worked out from the
examples' global shapes and PartitionSpecs and the mesh, independently of the import.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from netsim.programs.hlo import hlo_from_text
from netsim.programs.hlo.devices import load_device_map

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs the jax extra")

IDS = np.arange(8).reshape(2, 4)  # the mesh: device id i is mesh.devices.flat[i]
ROWS = IDS.tolist()  # groups along y
COLUMNS = IDS.T.tolist()  # groups along x
F32 = 4

GENERATE = """
import sys
from pathlib import Path
from netsim.programs.hlo.examples import EXAMPLES, compile_example, example_mesh
from netsim.programs.hlo.export import export
out = Path(sys.argv[1])
mesh = example_mesh()
for name in EXAMPLES:
    export(compile_example(name, mesh), mesh, out / f"{name}.txt")
"""


@pytest.fixture(scope="module")
def modules(tmp_path_factory):
    out = tmp_path_factory.mktemp("hlo")
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    subprocess.run([sys.executable, "-c", GENERATE, str(out)], check=True, env=env, cwd=ROOT, capture_output=True, timeout=300)
    return out


def collectives(modules, name):
    return [s.op for s in hlo_from_text((modules / f"{name}.txt").read_text()).collectives]


def test_shard_mapped_all_gather(modules):
    (c,) = collectives(modules, "all_gather")
    assert (c.op, c.groups, c.dimension) == ("all-gather", ROWS, 1)
    assert [str(a) for a in c.operands] == ["f32[512,256]"] and [str(a) for a in c.results] == ["f32[512,1024]"]
    assert c.nbytes == 1024 // 2 * 1024 // 4 * F32


def test_shard_mapped_psum_scatter(modules):
    (c,) = collectives(modules, "psum_scatter")
    assert (c.op, c.groups, c.dimension, c.nbytes) == ("reduce-scatter", ROWS, 0, 2048 // 2 * 1024 * F32)
    assert [str(a) for a in c.results] == ["f32[256,1024]"]


def test_shard_mapped_psum(modules):
    (c,) = collectives(modules, "psum")
    assert (c.op, sorted(c.groups), c.nbytes) == ("all-reduce", COLUMNS, 512 * 256 * F32)


def test_shard_mapped_all_to_all_is_the_tuple_form_on_cpu(modules):
    (c,) = collectives(modules, "all_to_all")
    assert (c.op, c.groups) == ("all-to-all", ROWS)
    assert len(c.operands) == 4 and c.nbytes == 512 * 256 * F32  # one operand per peer: the shard split along axis 0


def test_shard_mapped_ppermute(modules):
    (c,) = collectives(modules, "ppermute")
    expected = sorted((int(IDS[r, i]), int(IDS[r, (i + 1) % 4])) for r in range(2) for i in range(4))
    assert (c.op, sorted(c.pairs), c.nbytes) == ("collective-permute", expected, 512 * 256 * F32)


def _dot_flops(step) -> int:
    """FLOPs of the dots and convolutions of a step (2 B M N K each)."""
    return sum(2 * b * m * n * k for b, m, n, k in getattr(step.op, "matmuls", ()))


def test_auto_sharded_mlp_reduces_over_the_hidden_axis(modules):
    program = hlo_from_text((modules / "mlp.txt").read_text())
    (c,) = [s.op for s in program.collectives]
    assert (c.op, c.groups, c.nbytes) == ("all-reduce", ROWS, 256 // 2 * 1024 * F32)  # [B/x, D] partial sums over y
    dots = sorted(_dot_flops(s) for s in program.steps if _dot_flops(s))  # the steps' dots (their elementwise FLOPs apart)
    assert dots == sorted([2 * 128 * 1024 * (4096 // 4), 2 * 128 * (4096 // 4) * 1024])


def test_fsdp_matmul_gathers_the_weights_from_all_devices(modules):
    program = hlo_from_text((modules / "fsdp_matmul.txt").read_text())
    (gather,) = program.collectives
    assert (gather.op.op, gather.op.groups, gather.op.nbytes) == ("all-gather", [list(range(8))], 1024 // 8 * 4096 * F32)
    (matmul,) = [s for s in program.steps if _dot_flops(s)]
    assert _dot_flops(matmul) == 2 * (256 // 8) * 1024 * 4096
    assert gather.index in _ancestors(program, matmul.index)  # the matmul waits for the gathered weights


def _ancestors(program, index):
    seen, todo = set(), [index]
    while todo:
        for dep in program.steps[todo.pop()].deps:
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def test_scan_collective_matmul_is_a_loop_of_four_permutes(modules):
    program = hlo_from_text((modules / "collective_matmul.txt").read_text())
    permutes = program.collectives
    assert [s.iteration for s in permutes] == [(0,), (1,), (2,), (3,)]
    assert {s.op.name for s in permutes} == {permutes[0].op.name}
    assert all(
        s.op.nbytes == 512 * 256 * F32 and sorted(s.op.pairs) == sorted((r * 4 + i, r * 4 + (i + 1) % 4) for r in range(2) for i in range(4)) for s in permutes
    )
    dots = [s for s in program.steps if _dot_flops(s)]
    assert [_dot_flops(d) for d in dots] == [2 * 512 * 256 * 512] * 4
    for earlier, later in itertools.pairwise(permutes):
        assert earlier.index in _ancestors(program, later.index)  # each block travels on from where the last one arrived
    assert program.unmodelled == []


def test_exported_device_map_lists_every_id_with_the_mesh(modules):
    data = json.loads((modules / "psum.devices.json").read_text())
    assert data["mesh"] == {"x": 2, "y": 4}
    assert [d["id"] for d in data["devices"]] == list(range(8)) and all(d["coords"] is None for d in data["devices"])
    device_map = load_device_map(modules / "psum.txt", 8)
    assert device_map.row_major and device_map.mesh == {"x": 2, "y": 4}


def _summary(path):
    program = hlo_from_text(path.read_text())
    work = [
        (type(s.op).__name__, getattr(s.op, "op", None), [str(a) for a in getattr(s.op, "operands", ())], s.iteration, getattr(s.op, "flops", None))
        for s in program.steps
    ]
    return work, [(s.op.groups, s.op.pairs) for s in program.collectives]


def test_bundled_modules_hold_what_the_examples_compile_to(modules):
    bundled = ROOT / "scenarios" / "programs" / "hlo"
    names = sorted(p.name for p in modules.glob("*.txt"))
    assert names == sorted(p.name for p in bundled.glob("*.txt"))
    for name in names:
        assert _summary(bundled / name) == _summary(modules / name), name
        stem = name.removesuffix(".txt")
        assert json.loads((bundled / f"{stem}.devices.json").read_text()) == json.loads((modules / f"{stem}.devices.json").read_text())


FROM_JAX = """
import json, sys
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
import netsim
from netsim.programs.hlo.examples import EXAMPLES, example_mesh
from netsim.analysis.hlo_stats import axis_bytes
mesh = example_mesh()
v5e = netsim.tpu_slice("tpu-v5e:2x4")
wrapped = netsim.torus((2, 4), bandwidth_Bps=45e9, latency_s=1e-6).with_device(v5e.device(0))
out = {}
for name, e in EXAMPLES.items():
    args = [jax.ShapeDtypeStruct(s, jnp.float32, sharding=NamedSharding(mesh, P(*spec))) for s, spec in zip(e.shapes, e.specs)]
    f = e.build(mesh)
    out_shardings = None if e.out_spec is None else NamedSharding(mesh, P(*e.out_spec))
    on_slice = netsim.from_jax(f, *args, mesh=mesh, topology=v5e, out_shardings=out_shardings, name=name)
    on_torus = netsim.from_jax(f, *args, mesh=mesh, topology=wrapped, out_shardings=out_shardings, name=name)
    out[name] = {"time_s": on_slice.time, "netsim": axis_bytes(on_torus), "roofline": on_torus.program.roofline_ici_bytes}
json.dump(out, sys.stdout)
"""


@pytest.fixture(scope="module")
def from_jax_runs():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", FROM_JAX], check=True, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    return json.loads(done.stdout)


def test_from_jax_simulates_what_the_bundled_modules_hold(from_jax_runs):
    import yaml

    for name, run in from_jax_runs.items():
        expected = yaml.safe_load((ROOT / "scenarios" / "programs" / "hlo" / f"{name}.yaml").read_text())["expected"]["time_s"]
        assert run["time_s"] == pytest.approx(expected, rel=1e-12), name


@pytest.mark.parametrize("name", ["all_gather", "psum_scatter", "ppermute"])
def test_bytes_per_mesh_axis_agree_with_jax_roofline_where_both_model_a_ring(from_jax_runs, name):
    # On a torus whose axes wrap (what the roofline assumes), every device receives (n - 1) blocks.
    run = from_jax_runs[name]
    assert run["netsim"] == run["roofline"] and run["netsim"]


def test_where_the_two_differ_it_is_said_what_each_counts(from_jax_runs):
    # all_to_all: the roofline counts half the data over a bisection, netsim what each device receives
    a2a = from_jax_runs["all_to_all"]
    assert a2a["netsim"] == {"y": 3 * 512 * 256 * 4 // 4} and a2a["roofline"] == {"y": 512 * 256 * 4}
    # a scan: the roofline reads the loop body once, netsim runs it 4 times
    scan = from_jax_runs["collective_matmul"]
    assert scan["netsim"] == {"y": 4 * scan["roofline"]["y"]}
    # collectives XLA inserts by itself (no shard_map) are not the roofline's to see
    assert from_jax_runs["mlp"]["roofline"] is None and from_jax_runs["mlp"]["netsim"] == {"y": 2 * 3 * (256 // 2 * 1024 * 4) // 4}  # a ring psum
