"""Compile a two-layer MLP for a whole TPU v5p 16x16x16 pod with the TPU compiler, ahead of time, on a CPU-only machine.

Needs ``jax[tpu]`` (JAX and the ``libtpu`` wheel its release pins, e.g. jax 0.10.2 with
libtpu 0.0.42.x); no TPU. libtpu is a proprietary binary, so keep it out of netsim's own
environment: install it into a separate one and run this script there, from the
repository's root:

    python -m venv /tmp/venv-tpu && /tmp/venv-tpu/bin/pip install "jax[tpu]==0.10.2"
    /tmp/venv-tpu/bin/python scripts/make_tpu_module.py            # writes bench/data/mlp_v5p_16x16x16*.txt

``jax.experimental.topologies.get_topology_desc(platform="tpu", topology_name="v5:16x16x16")``
gives the pod's 4096 abstract devices with their chip coordinates;
``jax.experimental.mesh_utils.create_device_mesh`` lays an ``{x, y}`` mesh over them, and
``jax.nn.relu(x @ w1) @ w2`` (bf16 [65536, 4096] @ [4096, 16384] @ [16384, 4096]) is compiled
with the batch over ``x`` and the hidden dimension over ``y``, so XLA puts one all-reduce
over ``y`` after the second matmul. Two meshes are written:

- ``mlp_v5p_16x16x16``: ``{x: 256, y: 16}``, the all-reduce over lines of 16 chips (one
  physical axis; the compiler picks ``StrategyRing``);
- ``mlp_v5p_16x16x16_plane``: ``{x: 16, y: 256}``, the all-reduce over planes of 16x16
  chips (the compiler picks ``StrategyND`` over two axes).

For each, the script writes the optimised module's text (``NAME.txt``, without the
debugging tables that name this machine's files) and its device map
(``NAME.devices.json``: per device id, its position in ``mesh.devices.flat``, the chip's
coordinates, the format ``netsim program --hlo`` reads beside a module). It imports
nothing of netsim, so that the separate environment needs only ``jax[tpu]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def strip_debug_tables(text: str) -> str:
    """The module's text without the tables of source files and stack frames (they name this machine's paths).

    The rule is ``netsim/programs/hlo/debug_tables.py``'s, loaded by its path: this environment has only JAX.
    """
    spec = importlib.util.spec_from_file_location("netsim_hlo_debug_tables", ROOT / "netsim" / "programs" / "hlo" / "debug_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.strip_debug_tables(text)


def device_map(mesh) -> str:
    """The mesh's device map as ``netsim program --hlo`` reads it: device id = position in ``mesh.devices.flat``."""
    rows = []
    for index, device in enumerate(mesh.devices.flat):
        coords = [int(c) for c in device.coords]
        rows.append("  " + json.dumps({"id": index, "coords": coords, "core_on_chip": int(device.core_on_chip), "platform": str(device.platform)}))
    mesh_axes = {str(name): int(size) for name, size in mesh.shape.items()}
    return '{"devices": [\n' + ",\n".join(rows) + f'\n ],\n "mesh": {json.dumps(mesh_axes)}}}\n'


def compile_mlp(topology: str, mesh_shape: tuple[int, int], batch: int, model: int, hidden: int) -> tuple[str, str]:
    """The compiled module's text and its device map."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import mesh_utils, topologies
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    devices = topologies.get_topology_desc(platform="tpu", topology_name=topology).devices
    mesh = Mesh(mesh_utils.create_device_mesh(mesh_shape, devices=devices), ("x", "y"))

    def mlp(x, w1, w2):
        return jax.nn.relu(x @ w1) @ w2

    def arg(shape, spec):
        return jax.ShapeDtypeStruct(shape, jnp.bfloat16, sharding=NamedSharding(mesh, P(*spec)))

    args = (arg((batch, model), ("x", None)), arg((model, hidden), (None, "y")), arg((hidden, model), ("y", None)))
    compiled = jax.jit(mlp, out_shardings=NamedSharding(mesh, P("x", None))).lower(*args).compile()
    return strip_debug_tables(compiled.as_text()), device_map(mesh)


MODULES = {"mlp_v5p_16x16x16": (256, 16), "mlp_v5p_16x16x16_plane": (16, 256)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topology", default="v5:16x16x16", help="libtpu's topology name (v5: is v5p)")
    parser.add_argument("--mesh", help="the mesh's x and y sizes, e.g. 256,16 (default: both modules above)")
    parser.add_argument("--shape", default="65536,4096,16384", help="batch, model and hidden sizes (bf16)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "data"), help="a folder (both modules) or, with --mesh, the module's text file")
    args = parser.parse_args()
    batch, model, hidden = (int(s) for s in args.shape.split(","))
    if args.mesh:
        jobs = {Path(args.out): tuple(int(s) for s in args.mesh.split(","))}
    else:
        jobs = {Path(args.out) / f"{name}.txt": mesh for name, mesh in MODULES.items()}
    for out, mesh_shape in jobs.items():
        start = time.perf_counter()
        text, devices = compile_mlp(args.topology, mesh_shape, batch, model, hidden)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        out.with_name(out.stem + ".devices.json").write_text(devices)
        found = re.findall(r"= \S+ (all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)(?:-start)?\(", text)
        print(f"wrote {out} ({len(text):,} characters; collectives: {', '.join(found) or 'none'}) and its device map, in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
