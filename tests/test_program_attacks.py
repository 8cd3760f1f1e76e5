"""Program files and program calls under attack: numbers that are not, shapes beyond any machine, bad arguments.

The files are the small ones of ``tests/programs/``. Each mistake must be one line naming
the file, the field and the fix (exit 2), never a run that says verified.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT
from typer.testing import CliRunner

import netsim
from netsim.cli.main import app

PROGRAMS = ROOT / "tests" / "programs"
runner = CliRunner()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("compute_nan_flops.yaml", "ops.1.flops: expected a finite amount >= 0 (got nan)"),
        ("compute_inf_flops.yaml", "ops.1.flops: expected a finite amount >= 0 (got inf)"),
        (
            "shape_2_40.yaml",
            "arrays.A.shape: [1099511627776, 1099511627776, 1] of float32 is more than 2^50 bytes (1 PiB, beyond any slice); give the real shape",
        ),
    ],
)
def test_bad_numbers_in_a_program_file_are_one_line_naming_the_field(name, message):
    path = PROGRAMS / name
    result = runner.invoke(app, ["program", str(path)])
    assert result.exit_code == 2
    assert result.output == f"error: {path}: {message}\n"


@pytest.mark.parametrize("value", ["inf", "nan", "0", "-1e9"])
def test_a_clock_that_is_not_a_finite_positive_rate_is_refused(value):
    module = ROOT / "scenarios" / "programs" / "hlo" / "psum.txt"
    result = runner.invoke(app, ["program", "--hlo", str(module), "--topology", "tpu-v5e:2x4", "--clock-hz", value])
    assert result.exit_code == 2
    assert result.output == f"error: clock_hz must be a finite number of Hz > 0, e.g. 1.5e9; got {float(value)!r}\n"


def test_from_jax_with_a_mesh_that_is_not_one_says_so():
    with pytest.raises(ValueError, match=r"^mesh must be a jax.sharding.Mesh, e.g. jax.make_mesh\(\(2, 4\), \('x', 'y'\)\); got str 'x'$"):
        netsim.from_jax(lambda a: a, 1.0, mesh="x", topology="tpu-v5e:2x4")


FORI_LOOP = """
import json, sys, time
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
import netsim
mesh = jax.make_mesh((2, 4), ("x", "y"))
shift = [(j, (j + 1) % 4) for j in range(4)]
step = jax.shard_map(lambda a: jax.lax.fori_loop(0, 10**9, lambda i, b: jax.lax.ppermute(b, "y", shift) * 0.5, a),
                     mesh=mesh, in_specs=P("x", "y"), out_specs=P("x", "y"))
x = jax.ShapeDtypeStruct((256, 256), jnp.float32, sharding=NamedSharding(mesh, P("x", "y")))
started = time.perf_counter()
r = netsim.from_jax(step, x, mesh=mesh, topology="tpu-v5e:2x4")
e = r.program.extension
json.dump({"wall_s": time.perf_counter() - started, "time_s": r.time, "trips": e.loops[0].trips, "per_trip_s": e.per_trip_s[0]}, sys.stdout)
"""


def test_from_jax_of_a_fori_loop_of_10_to_the_9_trips_ends():
    pytest.importorskip("jax")
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", FORI_LOOP], check=True, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    run = json.loads(done.stdout)
    assert run["trips"] == 10**9 and run["wall_s"] < 30
    # a 64 KiB block moved one hop per trip (45 GB/s links): about 1.8 us a trip, 10^9 of them
    assert run["time_s"] == pytest.approx(10**9 * run["per_trip_s"], rel=1e-6) and 1e-6 < run["per_trip_s"] < 3e-6
