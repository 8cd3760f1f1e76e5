"""from_jax as a user runs it: libtpu's lock, the mesh placed where the TPU places it, the compiler said, the module kept.

The decision logic and the placement are tested without libtpu (netsim's own environment):
the lock by a compile function that fails as libtpu does, the placement against a device
map recorded from libtpu. Where libtpu is installed, the same is checked for real: the lock
held by a second process, and ``jax.make_mesh(..., devices=topology.devices)`` compiled.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from netsim.analysis.hlo_stats import collectives
from netsim.programs.hlo.devices import device_map_from_data
from netsim.programs.hlo.libtpu import ALLOW_VARIABLE, LIBTPU_LOCKFILE, LibtpuLockError, is_lock_error, lay_devices, tpu_compile
from netsim.programs.hlo.run import run_hlo

ROOT = Path(__file__).resolve().parent.parent
HAS_JAX = importlib.util.find_spec("jax") is not None
HAS_LIBTPU = importlib.util.find_spec("libtpu") is not None
LOCK_TEXT = 'ABORTED: Internal error when accessing libtpu multi-process lockfile. Run "$ sudo rm /tmp/libtpu_lockfile".'

# v5e 4x4 as libtpu 0.0.42.1 enumerates its devices (get_topology_desc("v5e:4x4").devices: hosts of 2x2 chips, x first) ...
ENUMERATED = [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (3, 0), (2, 1), (3, 1), (0, 2), (1, 2), (0, 3), (1, 3), (2, 2), (3, 2), (2, 3), (3, 3)]
# ... and where jax.make_mesh((4, 4), ("data", "model"), devices=topology.devices) puts them (recorded with libtpu 0.0.42.1, JAX 0.10.2):
# row r of the mesh is the chips (0, r) .. (3, r): the "model" axis runs along a row of 4 chips.
MAKE_MESH_V5E_4X4 = [[(x, y) for x in range(4)] for y in range(4)]


@dataclasses.dataclass(frozen=True)
class FakeTpu:
    """What JAX's mesh utilities read of a TPU device."""

    id: int
    coords: tuple[int, int, int]
    core_on_chip: int = 0
    platform: str = "tpu"
    device_kind: str = "TPU v5 lite"
    slice_index: int = 0


@pytest.fixture
def no_allow_variable(monkeypatch):
    monkeypatch.delenv(ALLOW_VARIABLE, raising=False)


def test_the_compile_runs_with_libtpu_shared_and_the_environment_is_restored(no_allow_variable):
    seen = []
    assert tpu_compile(lambda: seen.append(os.environ.get(ALLOW_VARIABLE)) or "compiled", "auto") == ("compiled", "")
    assert seen == ["1"] and ALLOW_VARIABLE not in os.environ


def test_a_held_lock_is_an_error_naming_the_lock_and_the_cause_never_a_cpu_fallback(no_allow_variable):
    def held():
        raise RuntimeError(LOCK_TEXT)

    for compiler in ("auto", "tpu"):
        with pytest.raises(LibtpuLockError) as raised:
            tpu_compile(held, compiler)
        message = str(raised.value)
        assert message.startswith(f"the TPU compiler did not run: another process holds libtpu's lock {LIBTPU_LOCKFILE}")
        assert f"with {ALLOW_VARIABLE}=1 (set by netsim for this compile)" in message and "compiler='cpu'" in message
        assert "sudo" not in message and "rm " not in message and "Do not delete the lock file" in message
    assert ALLOW_VARIABLE not in os.environ


def test_a_users_own_setting_is_kept_and_said(monkeypatch):
    monkeypatch.setenv(ALLOW_VARIABLE, "0")
    seen = []

    def held():
        seen.append(os.environ[ALLOW_VARIABLE])
        raise RuntimeError(LOCK_TEXT)

    with pytest.raises(LibtpuLockError, match=f"with {ALLOW_VARIABLE}='0'"):
        tpu_compile(held, "auto")
    assert seen == ["0"] and os.environ[ALLOW_VARIABLE] == "0"


def test_other_failures_warn_and_fall_back_under_auto_and_raise_under_tpu():
    def fails():
        raise ValueError("the mesh does not fit\nmore lines")

    with pytest.warns(RuntimeWarning, match="the TPU compiler failed: the mesh does not fit; compiling with XLA's CPU compiler instead"):
        assert tpu_compile(fails, "auto") == (None, "the TPU compiler failed: the mesh does not fit")
    with pytest.raises(ValueError, match=r"^compiler='tpu': the TPU compiler failed: the mesh does not fit$"):
        tpu_compile(fails, "tpu")
    assert is_lock_error(RuntimeError(LOCK_TEXT)) and not is_lock_error(ValueError("the mesh does not fit"))


@pytest.mark.skipif(not HAS_JAX, reason="needs the jax extra")
def test_from_jax_raises_on_a_held_lock_instead_of_compiling_for_the_cpu(monkeypatch):
    import jax

    from netsim.programs.hlo import from_jax as module

    monkeypatch.setattr(module, "libtpu_version", lambda: "0.0.42.1")

    def compile_for_tpu(*args, **kwargs):
        raise RuntimeError(LOCK_TEXT)

    monkeypatch.setattr(module, "compile_for_tpu", compile_for_tpu)
    monkeypatch.setattr(module, "compile_for", lambda *a, **k: pytest.fail("the CPU compiler ran"))
    mesh = jax.make_mesh((1,), ("x",), devices=jax.devices("cpu")[:1])
    x = jax.ShapeDtypeStruct((8,), np.float32, sharding=jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("x")))
    with pytest.raises(LibtpuLockError, match="another process holds libtpu's lock /tmp/libtpu_lockfile"):
        module.from_jax(lambda a: a * 2, x, topology="tpu-v5e:1x1", mesh=mesh)


@pytest.mark.skipif(not HAS_JAX, reason="needs the jax extra")
def test_a_mesh_of_cpu_devices_is_laid_as_jax_make_mesh_lays_it_on_the_tpu():
    devices = [FakeTpu(i, (x, y, 0)) for i, (x, y) in enumerate(ENUMERATED)]
    cpu = np.array([object() for _ in range(16)], dtype=object).reshape(4, 4)
    laid, how = lay_devices(cpu, devices)
    assert [[d.coords[:2] for d in row] for row in laid] == MAKE_MESH_V5E_4X4
    assert how == "as jax.make_mesh lays the mesh's shape on the TPU (mesh_utils.create_device_mesh)"


def test_a_mesh_of_tpu_devices_keeps_its_order_and_foreign_devices_are_refused():
    devices = [FakeTpu(i, (x, y, 0)) for i, (x, y) in enumerate(ENUMERATED)]
    users = np.array([FakeTpu(100 + i, (x, y, 0)) for i, (x, y) in enumerate(ENUMERATED)], dtype=object)[::-1].reshape(2, 8)
    laid, how = lay_devices(users, devices)
    assert [d.coords for d in laid.flat] == [d.coords for d in users.flat] and all(d in devices for d in laid.flat)
    assert how == "the mesh's own TPU devices, in the order it gives them"
    foreign = users.copy()
    foreign[0, 0] = FakeTpu(99, (7, 7, 0))
    with pytest.raises(ValueError, match=r"^the mesh's TPU devices are not the slice's \(e.g. a device at \[7, 7, 0\]\)"):
        lay_devices(foreign, devices)


def test_the_recorded_make_mesh_placement_puts_the_model_axis_on_a_row_of_chips():
    """The bundled v5e 4x4 psum over the mesh's second axis, placed as jax.make_mesh places it: each group is a line of 4 chips."""
    path = ROOT / "scenarios/programs/hlo/tpu/v5e_4x4/psum.txt"
    data = json.loads(path.with_name("psum.devices.json").read_text())
    enumerated = run_hlo(path, "tpu-v5e:4x4", algorithm="netsim")
    data["devices"] = [{"id": y * 4 + x, "coords": [x, y, 0], "core_on_chip": 0} for y, row in enumerate(MAKE_MESH_V5E_4X4) for x, _ in enumerate(row)]
    placed = run_hlo(path, "tpu-v5e:4x4", algorithm="netsim", device_map=device_map_from_data(data, 16, "make_mesh v5e 4x4"))
    assert "replica_groups={{0,4,8,12},{1,5,9,13},{2,6,10,14},{3,7,11,15}}" in placed.program.module_text
    assert [c["group_size"] for c in collectives(placed)] == [4]
    coords = placed.program.device_map.coords
    assert [coords[d][:2] for d in (0, 4, 8, 12)] == [(0, 0), (0, 1), (0, 2), (0, 3)]  # one column of chips: a line, hop by hop
    assert [enumerated.program.device_map.coords[d][:2] for d in (0, 4, 8, 12)] == [(0, 0), (2, 0), (0, 2), (2, 2)]  # the old reading: two hops apart
    assert placed.time < 0.5 * enumerated.time


def test_the_repr_says_the_compiler_and_the_module_text_is_kept():
    path = ROOT / "scenarios/programs/hlo/tpu/v5e_4x4/mlp.txt"
    r = run_hlo(path, "tpu-v5e:4x4")
    lines = repr(r).splitlines()
    assert lines[1] == "  compiled by: the TPU compiler (libtpu 0.0.42.1, JAX 0.10.2, for v5e:4x4)"
    assert lines[2] == f"  placement: {path.with_name('mlp.devices.json')}"
    assert r.program.module_text == path.read_text() and f"({len(path.read_text().splitlines())} lines)" in lines[3]


@pytest.mark.skipif(not HAS_JAX, reason="needs the jax extra")
def test_export_writes_the_compiler_into_the_device_map(tmp_path):
    code = """
import jax, jax.numpy as jnp, sys
from jax.sharding import NamedSharding, PartitionSpec as P
from netsim.programs.hlo.export import export
from netsim.programs.hlo.run import run_hlo
mesh = jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices("cpu")[:8])
x = jax.ShapeDtypeStruct((64, 64), jnp.float32, sharding=NamedSharding(mesh, P("x", "y")))
export(jax.jit(lambda a: a.sum(0)).lower(x).compile(), mesh, sys.argv[1])
print(run_hlo(sys.argv[1], "tpu-v5e:2x4").program.compiler)
"""
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "m.txt")], env=env, check=True, capture_output=True, text=True, timeout=300)
    written = json.loads((tmp_path / "m.devices.json").read_text())
    import jax

    assert written["compiler"] == {"platform": "cpu", "jax": jax.__version__}
    assert out.stdout.strip().splitlines()[-1].startswith("XLA's CPU compiler (CPU-compiled")


HOLD = """
import sys, time
from jax.experimental import topologies
topologies.get_topology_desc(platform="tpu", topology_name="v5e:2x2", chip_config_name="default")
print("holding", flush=True)
time.sleep(float(sys.argv[1]))
"""

PLACED = """
import json, sys
import jax, jax.numpy as jnp
from jax.experimental import topologies
from jax.sharding import NamedSharding, PartitionSpec as P
import netsim
from netsim.analysis.hlo_stats import collectives
if sys.argv[2] == "tpu":  # the user's own call loads libtpu: beside another process's lock it needs ALLOW_MULTIPLE_LIBTPU_LOAD=1 itself
    devices = topologies.get_topology_desc(platform="tpu", topology_name="v5e:4x4", chip_config_name="default").devices
else:
    devices = jax.devices("cpu")[:16]
mesh = jax.make_mesh((4, 4), ("data", "model"), devices=devices)
step = jax.shard_map(lambda a: jax.lax.psum(a, "model"), in_specs=P("data", "model"), out_specs=P("data"))
x = jax.ShapeDtypeStruct((1024, 1024), jnp.bfloat16, sharding=NamedSharding(mesh, P("data", "model")))
r = netsim.from_jax(step, x, topology="tpu-v5e:4x4", mesh=mesh, calibration=sys.argv[1])
print(json.dumps({"compiler": r.program.compiler,
    "coords": [list(c[:2]) for c in r.program.device_map.coords], "time": r.time, "repr": repr(r), "text": len(r.program.module_text)}))
"""


def _libtpu_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != ALLOW_VARIABLE}
    return {**env, "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--xla_force_host_platform_device_count=16"}


@pytest.mark.skipif(not HAS_LIBTPU, reason="needs libtpu (the tpu extra)")
def test_with_libtpu_the_tpu_compile_happens_while_another_process_holds_the_lock():
    holder = subprocess.Popen([sys.executable, "-c", HOLD, "120"], env={**_libtpu_env(), ALLOW_VARIABLE: "1"}, stdout=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        assert holder.stdout.readline().strip() == "holding" and time.monotonic() < deadline
        done = subprocess.run([sys.executable, "-c", PLACED, "nominal", "cpu"], env=_libtpu_env(), capture_output=True, text=True, timeout=300)
    finally:
        holder.kill()
        holder.wait()
    assert done.returncode == 0, done.stderr[-2000:]
    run = json.loads(done.stdout.strip().splitlines()[-1])
    assert run["compiler"].startswith("the TPU compiler (libtpu ") and "v5e:4x4" in run["compiler"]
    # a mesh of CPU devices, laid as jax.make_mesh lays it on the TPU: the compiled assignment puts "model" along a row of chips
    assert run["coords"] == [list(c) for row in MAKE_MESH_V5E_4X4 for c in row]
    assert "\n  compiled by: the TPU compiler (libtpu " in run["repr"] and run["text"] > 0


@pytest.mark.skipif(not HAS_LIBTPU, reason="needs libtpu (the tpu extra)")
def test_with_libtpu_make_mesh_on_the_topologys_devices_is_compiled_and_placed_as_built():
    runs = {}
    for mode in ("nominal", "calibrated"):
        env = {**_libtpu_env(), ALLOW_VARIABLE: "1"}
        done = subprocess.run([sys.executable, "-c", PLACED, mode, "tpu"], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        runs[mode] = json.loads(done.stdout.strip().splitlines()[-1])
    # the compiled device assignment is the mesh as jax.make_mesh built it: the "model" axis along a row of 4 chips
    assert runs["nominal"]["coords"] == [list(c) for row in MAKE_MESH_V5E_4X4 for c in row]
    assert runs["calibrated"]["time"] > runs["nominal"]["time"] + 3e-6  # calibration= accepted: v5e's fixed cost per collective, 3.47 us


CALIBRATED = """
import json
import jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
import netsim
from netsim.network.calibration import calibrate, mode_of
mesh = jax.make_mesh((2, 4), ("x", "y"), devices=jax.devices("cpu")[:8])
step = jax.shard_map(lambda a: jax.lax.psum(a, "y"), mesh=mesh, in_specs=P("x", "y"), out_specs=P("x"))
x = jax.ShapeDtypeStruct((256, 1024), jnp.bfloat16, sharding=NamedSharding(mesh, P("x", "y")))
runs = {str(c): netsim.from_jax(step, x, topology="tpu-v5e:2x4", compiler="cpu", calibration=c) for c in ("nominal", "calibrated")}
kept = netsim.from_jax(step, x, topology=calibrate(netsim.tpu_slice("tpu-v5e:2x4")), compiler="cpu")
print(json.dumps({**{k: r.time for k, r in runs.items()}, "kept": kept.time, "mode": mode_of(kept.topology_obj)}))
"""


@pytest.mark.skipif(not HAS_JAX, reason="needs the jax extra")
def test_from_jax_takes_calibration_and_keeps_a_calibrated_topologys():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "PYTHONPATH": str(ROOT), "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", CALIBRATED], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    run = json.loads(done.stdout.strip().splitlines()[-1])
    assert run["calibrated"] > run["nominal"] + 3.47e-6  # v5e's fixed cost per collective, and its links at 95 %
    assert run["kept"] == run["calibrated"] and run["mode"] == "calibrated"
