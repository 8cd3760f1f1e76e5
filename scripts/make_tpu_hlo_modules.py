"""Compile the bundled JAX examples with the TPU compiler, ahead of time, for several TPU slices.

Needs ``jax[tpu]`` (JAX and the ``libtpu`` wheel its release pins: jax 0.10.2 with libtpu
0.0.42.1 wrote the bundled modules); no TPU. libtpu is a proprietary binary, so keep it out
of netsim's own environment: install it into a separate one and run this script there,
from the repository's root:

    python -m venv /tmp/venv-tpu && /tmp/venv-tpu/bin/pip install "jax[tpu]==0.10.2"
    /tmp/venv-tpu/bin/python scripts/make_tpu_hlo_modules.py     # writes scenarios/programs/hlo/tpu/

For each slice of :data:`SLICES`, ``jax.experimental.topologies.get_topology_desc`` gives
the slice's abstract devices in the TPU's own order (``topology.devices``), a ``Mesh`` is laid
over them in that order, and each example of ``netsim/programs/hlo/examples.py`` is compiled
with bf16 arguments. Written per module, in ``scenarios/programs/hlo/tpu/SLICE/``:

- ``NAME.txt``: the optimised module's text, without the debugging tables (they name this
  machine's files) and without ``metadata={...}`` (source locations; nothing netsim reads);
- ``NAME.devices.json``: the compiled executable's device assignment (per device id, the
  chip's ``coords`` and ``core_on_chip``), the mesh, and ``compiler``: the libtpu and JAX
  versions and the libtpu topology name it was compiled for.

Beside them, :data:`MULTISLICE`: a module compiled for several slices (``num_slices=2``), whose
cross-slice all-reduce the compiler writes as megascale ``send``/``recv``; it is one slice's
program (``num_partitions`` = one slice's devices), and its device map lists that slice's
devices (``compiler`` says ``num_slices``).

It imports nothing of netsim but the examples' file, so that the separate environment needs
only ``jax[tpu]``. ``python scripts/make_hlo_modules.py`` writes the CPU-compiled modules.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "scenarios" / "programs" / "hlo" / "tpu"
SHARD_MAPPED = ("all_gather", "psum_scatter", "psum", "all_to_all", "ppermute", "collective_matmul")

SLICES = {
    # folder: (libtpu topology name, chip config, mesh {x, y}, examples)
    "v5e_4x4": ("v5e:4x4", "default", (4, 4), ("mlp", "fsdp_matmul", *SHARD_MAPPED)),
    "v4_4x4x4": ("v4:4x4x4", "megacore", (16, 4), ("mlp", "all_gather", "psum", "psum_scatter")),
    "v6e_8x16": ("v6e:8x16", "default", (32, 4), ("mlp", "fsdp_matmul", "all_gather", "psum")),
    "tpu7x_2x2x1": ("tpu7x:2x2x1", "default", (2, 4), ("mlp", "fsdp_matmul", *SHARD_MAPPED)),
    "v5p_16x16x16": ("v5:16x16x16", "default", (256, 16), ("mlp",)),
}
"""The slices compiled for, and which examples each gets (smaller sets on the bigger slices keep the bundle small)."""

MULTISLICE = {
    # folder: (libtpu topology name, slices, per-device shard (rows, columns) of the bf16 gradient)
    "v5e_4x4x2slices": ("v5e:4x4", 2, (1024, 256)),
}
"""Modules compiled for several slices: ``dcn_psum``, a gradient reduce-scattered over the slice's 16 chips (ICI)
and its shard all-reduced across the slices (DCN), on a hybrid mesh ``(dcn, ici)`` as MaxText lays data parallelism across slices."""


def load_by_path(name: str):
    """``netsim/programs/hlo/NAME.py``, loaded by its path (it imports nothing of netsim: this environment has only JAX)."""
    spec = importlib.util.spec_from_file_location(f"netsim_hlo_{name}", ROOT / "netsim" / "programs" / "hlo" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def examples_module():
    """``netsim/programs/hlo/examples.py``, loaded by its path (it needs only JAX)."""
    return load_by_path("examples")


def _shown(path: Path) -> str:
    """``path`` relative to the repository when it is inside it (``--out`` may be anywhere)."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def clean(text: str) -> str:
    """The module's text without debugging tables (``netsim/programs/hlo/debug_tables.py``) and ``metadata={...}`` attributes."""
    return re.sub(r", metadata=\{[^{}]*\}", "", load_by_path("debug_tables").strip_debug_tables(text))


def device_map(devices, mesh_shape: dict[str, int], compiler: dict[str, str]) -> str:
    """The device map: one device per line (id = position in the executable's device assignment)."""
    rows = ",\n".join(
        "  " + json.dumps({"id": i, "coords": [int(c) for c in d.coords], "core_on_chip": int(d.core_on_chip)}, separators=(",", ":"))
        for i, d in enumerate(devices)
    )
    return f'{{"devices": [\n{rows}\n ],\n "mesh": {json.dumps(mesh_shape)},\n "compiler": {json.dumps(compiler)}}}\n'


def compile_slice(folder: str, only: set[str] | None, out: Path) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.experimental import topologies
    from jax.sharding import AxisType, Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    examples = examples_module().EXAMPLES
    name, chip_config, shape, wanted = SLICES[folder]
    topology = topologies.get_topology_desc(platform="tpu", topology_name=name, chip_config_name=chip_config)
    mesh = Mesh(np.array(topology.devices).reshape(shape), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    compiler = {"platform": "tpu", "libtpu": importlib.metadata.version("libtpu"), "jax": jax.__version__, "topology": name, "chip_config": chip_config}
    (out / folder).mkdir(parents=True, exist_ok=True)
    for example_name in wanted:
        if only and example_name not in only:
            continue
        example = examples[example_name]
        start = time.perf_counter()
        args = [jax.ShapeDtypeStruct(s, jnp.bfloat16, sharding=NamedSharding(mesh, P(*spec))) for s, spec in zip(example.shapes, example.specs, strict=True)]
        out_sharding = None if example.out_spec is None else NamedSharding(mesh, P(*example.out_spec))
        compiled = jax.jit(example.build(mesh), out_shardings=out_sharding).lower(*args).compile()
        assignment = compiled.input_shardings[0][0]._device_assignment  # the executable's device order: module id i runs on assignment[i]
        path = out / folder / f"{example_name}.txt"
        path.write_text(clean(compiled.as_text()))
        path.with_name(f"{example_name}.devices.json").write_text(device_map(assignment, dict(zip(("x", "y"), shape, strict=True)), compiler))
        print(f"wrote {_shown(path)} in {time.perf_counter() - start:.1f} s")


def compile_multislice(folder: str, out: Path) -> None:
    """``dcn_psum`` compiled for ``num_slices`` slices: module ids are one slice's devices (the first of the executable's assignment)."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import mesh_utils, topologies
    from jax.sharding import AxisType, Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    name, slices, (rows, columns) = MULTISLICE[folder]
    topology = topologies.get_topology_desc(platform="tpu", topology_name=name, chip_config_name="default", num_slices=slices)
    per_slice = len(topology.devices) // slices
    mesh = Mesh(mesh_utils.create_hybrid_device_mesh((1, per_slice), (slices, 1), topology.devices), ("dcn", "ici"), axis_types=(AxisType.Auto,) * 2)

    def body(a):
        return jax.lax.psum(jax.lax.psum_scatter(a, "ici", scatter_dimension=0, tiled=True), "dcn")

    step = jax.shard_map(body, mesh=mesh, in_specs=P("dcn", "ici"), out_specs=P("ici", None), check_vma=False)
    gradient = jax.ShapeDtypeStruct((slices * rows, per_slice * columns), jnp.bfloat16, sharding=NamedSharding(mesh, P("dcn", "ici")))
    start = time.perf_counter()
    compiled = jax.jit(step).lower(gradient).compile()
    assignment = compiled.input_shardings[0][0]._device_assignment[:per_slice]  # slice 0's devices: the module's ids
    compiler = {"platform": "tpu", "libtpu": importlib.metadata.version("libtpu"), "jax": jax.__version__, "topology": name, "chip_config": "default"}
    compiler["num_slices"] = str(slices)
    (out / folder).mkdir(parents=True, exist_ok=True)
    path = out / folder / "dcn_psum.txt"
    path.write_text(clean(compiled.as_text()))
    path.with_name("dcn_psum.devices.json").write_text(device_map(assignment, {"ici": per_slice}, compiler))
    print(f"wrote {_shown(path)} in {time.perf_counter() - start:.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slice", action="append", choices=sorted({*SLICES, *MULTISLICE}), help="only this slice (repeatable; default: all)")
    parser.add_argument("--example", action="append", help="only this example (repeatable)")
    parser.add_argument("--out", default=str(OUT), help="the folder to write the slices' folders into")
    args = parser.parse_args()
    for folder in args.slice or [*SLICES, *MULTISLICE]:
        if folder in MULTISLICE:
            compile_multislice(folder, Path(args.out))
        else:
            compile_slice(folder, set(args.example) if args.example else None, Path(args.out))


if __name__ == "__main__":
    main()
