"""netsim.from_jax on a bf16 MLP: compiled by the TPU compiler when libtpu is installed, else by the CPU compiler, and said so.

Each case runs in a subprocess (JAX must be told how many CPU devices to make before it starts).
Without libtpu (netsim's own test environment) the TPU case is skipped: the modules the TPU
compiler wrote are tested in tests/test_hlo_tpu.py all the same.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs the jax extra")

RUN = """
import json, sys
import jax, jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
import netsim
from netsim.analysis.hlo_stats import collectives, hlo_summary
mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2, devices=jax.devices("cpu")[:8])
a = lambda s, sp: jax.ShapeDtypeStruct(s, jnp.bfloat16, sharding=NamedSharding(mesh, P(*sp)))
def mlp(x, w1, w2):
    return jax.nn.relu(x @ w1) @ w2
args = (a((2048, 2048), ("x", None)), a((2048, 8192), (None, "y")), a((8192, 2048), ("y", None)))
out = {}
for case in json.loads(sys.argv[1]):
    r = netsim.from_jax(mlp, *args, topology="tpu-v5e:2x4", out_shardings=NamedSharding(mesh, P("x", None)), **case)
    (reduce,) = collectives(r)
    summary = hlo_summary(r)["hlo"]
    out[json.dumps(case, sort_keys=True)] = {"compiler": summary["compiler"], "dtypes": summary["dtypes"], "reduce": reduce,
        "coords": [list(c) if c else None for c in r.program.device_map.coords], "time_s": r.time}
json.dump(out, sys.stdout)
"""


def _run(cases: list[dict]) -> dict:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "PYTHONPATH": path, "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", RUN, json.dumps(cases)], check=True, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    return json.loads(done.stdout)


@pytest.mark.skipif(importlib.util.find_spec("libtpu") is not None, reason="libtpu is installed: the TPU compiler is used")
def test_without_libtpu_the_cpu_module_is_used_and_said_so():
    runs = _run([{}, {"compiler": "cpu", "dtypes": "source"}])
    auto, source = runs["{}"], runs['{"compiler": "cpu", "dtypes": "source"}']
    assert auto["compiler"].startswith("XLA's CPU compiler (CPU-compiled: dtypes as it left them, no async overlap, no compiler algorithms)")
    assert "libtpu is not installed" in auto["compiler"] and auto["dtypes"] == "as compiled"
    # the CPU compiler upcasts the bf16 MLP's all-reduce to f32: [2048 / 2, 2048] partial sums per device
    assert (auto["reduce"]["dtype"], auto["reduce"]["bytes"]) == ("f32", 1024 * 2048 * 4)
    assert source["dtypes"] == "source: f32 collectives and dots timed at the arguments' bf16"
    assert (source["reduce"]["dtype"], source["reduce"]["bytes"]) == ("bf16", 1024 * 2048 * 2)
    assert source["reduce"]["time_s"] < auto["reduce"]["time_s"] and source["time_s"] < auto["time_s"]


def test_with_libtpu_the_tpu_compiler_keeps_bf16_and_places_devices_by_its_assignment():
    if importlib.util.find_spec("libtpu") is None:
        pytest.skip("needs libtpu (the tpu extra)")
    (tpu,) = _run([{"compiler": "tpu"}]).values()
    assert tpu["compiler"].startswith("the TPU compiler (libtpu ")
    assert (tpu["reduce"]["dtype"], tpu["reduce"]["bytes"]) == ("bf16", 1024 * 2048 * 2)
    # the executable's device assignment: the 2x4 mesh of CPU devices laid as jax.make_mesh lays it on a v5e 2x4
    # (libtpu 0.0.42.1, JAX 0.10.2): each row of the mesh a ring of 4 chips, (0,0) (1,0) (0,1) (1,1) then back down the other half
    assert [c[:2] for c in tpu["coords"]] == [[0, 0], [1, 0], [0, 1], [1, 1], [1, 3], [0, 3], [1, 2], [0, 2]]


SHARD_MAPPED = """
import json
import jax, jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding, PartitionSpec as P
import netsim
from netsim.analysis.hlo_stats import collectives
mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2, devices=jax.devices("cpu")[:8])
step = jax.shard_map(lambda a: jax.lax.psum(a, "y"), in_specs=P("x", "y"), out_specs=P("x"))  # no mesh=: it takes the TPU mesh
x = jax.ShapeDtypeStruct((1024, 1024), jnp.bfloat16, sharding=NamedSharding(mesh, P("x", "y")))
r = netsim.from_jax(step, x, topology="tpu7x:2x2x1", compiler="tpu")
(reduce,) = collectives(r)
print(json.dumps({"compiler": r.program.compiler, "dtype": reduce["dtype"], "bytes": reduce["bytes"], "cores": list(r.program.device_map.cores)}))
"""


def test_with_libtpu_a_shard_map_without_a_mesh_compiles_for_tpu7x_with_its_cores():
    if importlib.util.find_spec("libtpu") is None:
        pytest.skip("needs libtpu (the tpu extra)")
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "PYTHONPATH": path, "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", SHARD_MAPPED], check=True, env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    run = json.loads(done.stdout.strip().splitlines()[-1])
    assert run["compiler"].startswith("the TPU compiler (libtpu ") and "tpu7x:2x2x1" in run["compiler"]
    assert (run["dtype"], run["bytes"]) == ("bf16", 512 * 256 * 2) and run["cores"] == [0, 1] * 4
