"""JAX's habits in files and calls: short PartitionSpecs, all_reduce, bf16, meshes read from NamedShardings, a program's Result."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import yaml
from conftest import ROOT
from conftest import TWO_LAYER_PROGRAM as PROGRAM
from typer.testing import CliRunner

import netsim
from netsim.analysis.program_stats import program_stats
from netsim.cli.main import app
from netsim.programs.files import program_from_data
from netsim.programs.hlo.devices import CPU_CAVEAT
from netsim.programs.hlo.run import run_hlo_program
from netsim.scenario import scenario_from_data

runner = CliRunner()


def _program(**changes):
    data = yaml.safe_load(PROGRAM)
    for path, value in changes.items():
        array, field = path.split(".")
        data["arrays"][array][field] = value
    return data


def test_a_short_sharding_leaves_the_trailing_dimensions_replicated_as_partition_spec_does():
    short = program_from_data(_program(**{"w.sharding": ["model"]}))
    assert short.program.arrays["w"].sharding == (("model",), ())
    assert short.program == program_from_data(_program()).program
    run = netsim.run_program(_program(**{"w.sharding": ["model"]}))
    assert run.time == netsim.run_program(_program()).time and run.verified


def test_a_sharding_longer_than_the_shape_is_still_refused(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(_program(**{"w.sharding": ["model", None, None]})))
    out = runner.invoke(app, ["program", str(path)])
    assert out.exit_code == 2 and "arrays.w.sharding: gives 3 entries for 2 dimensions" in out.output


@pytest.mark.parametrize(("short", "name"), [("bf16", "bfloat16"), ("f32", "float32"), ("f16", "float16"), ("s32", "int32"), ("f64", "float64")])
def test_xla_dtype_names_are_numpy_s(short, name):
    spelled = program_from_data(_program(**{"x.dtype": short, "w.dtype": short}))
    assert spelled.program == program_from_data(_program(**{"x.dtype": name, "w.dtype": name})).program
    scenario = {"name": "t", "topology": "ring4", "collective": {"op": "psum"}, "input": {"shape": [8], "dtype": short}}
    assert scenario_from_data(scenario, "s").input.dtype == name
    assert netsim.simulate(scenario_from_data(scenario, "s")).output.dtype == np.dtype(netsim.semantics.program_values.dtype_of(name))


@pytest.mark.parametrize("command", ["run", "program"])
def test_all_reduce_is_pointed_to_psum(tmp_path, command):
    path = tmp_path / "f.yaml"
    if command == "run":
        path.write_text("name: t\ntopology: ring4\ncollective: {op: all_reduce}\ninput: {shape: [4]}\n")
    else:
        path.write_text(PROGRAM.replace("op: psum", "op: all_reduce"))
    out = runner.invoke(app, [command, str(path)])
    assert out.exit_code == 2
    assert out.output.rstrip().endswith("did you mean psum? (JAX's all-reduce is jax.lax.psum)")


def test_a_program_result_says_where_its_time_went():
    result = netsim.run_program(_program())
    stats = program_stats(result)
    assert (result.compute_s, result.communication_s, result.exposed_communication_s) == (
        stats.compute_s,
        stats.communication_s,
        stats.exposed_communication_s,
    )
    assert result.communication_s > 0 and result.exposed_communication_s == result.communication_s  # a psum after the matmul hides behind nothing
    text = repr(result)
    assert text.startswith("Result(p: program of 2 ops, tpu-v5e:2x2, 4 devices, time=") and "NoneType" not in text
    assert "compute=" in text and "exposed)" in text and "output 2 arrays (h, y), verified=True)" in text


def test_an_hlo_result_prints_its_times_not_its_missing_output():
    result = run_hlo_program(ROOT / "scenarios/programs/hlo/mlp.yaml")
    head, *lines = repr(result).splitlines()
    assert head.startswith("Result(hlo_mlp: program of 4 ops, tpu-v5e:2x4, 8 devices, time=32.2598 us, compute=")
    assert head.endswith(", timing only, verified=False)")
    assert lines[0] == "  compiled by: XLA's CPU compiler (CPU-compiled: dtypes as it left them, no async overlap, no compiler algorithms)"
    assert result.compute_s + result.exposed_communication_s == pytest.approx(result.time, rel=1e-9)  # nothing overlaps in this module


def test_a_collective_is_all_communication():
    result = netsim.psum(np.ones((4, 2)))
    assert (result.compute_s, result.communication_s, result.exposed_communication_s) == (0.0, result.time, result.time)


FROM_JAX = """
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P
import netsim
mesh = jax.make_mesh((2, 4), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
x = jax.device_put(jnp.ones((256, 1024), jnp.float32), NamedSharding(mesh, P(("x", "y"), None)))
w = jax.ShapeDtypeStruct((1024, 4096), jnp.float32, sharding=NamedSharding(mesh, P(("x", "y"), None)))
read = netsim.from_jax(lambda x, w: x @ w, x, w, topology="tpu-v5e:2x4")
given = netsim.from_jax(lambda x, w: x @ w, x, w, mesh=mesh, topology="tpu-v5e:2x4")
assert read.time == given.time, (read.time, given.time)
print(repr(read))
try:
    netsim.from_jax(lambda a: a * 2, np.ones(8), topology="tpu-v5e:2x4")
except ValueError as error:
    print(error)
"""


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs the jax extra")
def test_from_jax_reads_the_mesh_from_the_arguments_named_shardings():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(FROM_JAX)], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    printed = done.stdout.splitlines()
    assert printed[0].startswith("Result(<lambda>: program of ") and "time=232.2" in printed[0]  # the README's 232.2 us
    assert printed[1] == "  compiled by: " + CPU_CAVEAT + "; libtpu is not installed (pip install 'netsim[tpu]')" or importlib.util.find_spec("libtpu")
    assert printed[-1] == "from_jax needs the mesh: pass mesh=..., or arguments placed with a NamedSharding (jax.device_put(x, NamedSharding(mesh, P(...))))"
