"""Compile MaxText's v5e-256 training steps with the TPU compiler, ahead of time, on this machine.

Needs ``jax[tpu]`` (jax 0.10.2 with libtpu 0.0.42.1 wrote the bundled modules); no TPU. As for
``scripts/make_tpu_hlo_modules.py``, keep libtpu in an environment of its own:

    python -m venv /tmp/venv-tpu && /tmp/venv-tpu/bin/pip install "jax[tpu]==0.10.2"
    /tmp/venv-tpu/bin/python scripts/make_step_modules.py          # writes scenarios/programs/hlo/steps/

For each row of ``netsim/programs/hlo/maxtext.py`` (MaxText's 16B, 32B, 64B and 128B rows on
a v5e 16x16 slice, and the held-out 22B and 52B rows on v4 4x4x4 and 4x4x12 slices and 32B and
64B rows on a v5p 4x4x4 slice), the
training step is compiled for the row's slice, on a mesh laid out as MaxText lays out its own
(``mesh_utils.create_device_mesh``: each mesh axis along the slice's rings, so the 128B's
tensor axis of 16 is a row of chips), and three files are written per model:

- ``NAME.txt.gz``: the optimised module's text (debugging tables and metadata stripped),
  gzipped;
- ``NAME.devices.json``: the executable's device assignment, mesh and compiler;
- ``NAME.xla.json``: what the compiler itself says of the module: ``cost_analysis()``
  (FLOPs, bytes accessed), ``memory_analysis()`` (argument, output, temporary, alias and
  generated-code bytes per device) and the HBM its buffer assignment lays out (its
  allocations in memory space 0, from the dump ``--xla_dump_to`` writes: the arguments and
  the temporaries' one allocation), which netsim's own counts are checked against.

The compile shares libtpu with other processes (``ALLOW_MULTIPLE_LIBTPU_LOAD``): another
process's ``/tmp/libtpu_lockfile`` is never touched.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.metadata
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "scenarios" / "programs" / "hlo" / "steps"
sys.path.insert(0, str(ROOT / "scripts"))

from make_tpu_hlo_modules import clean, device_map, load_by_path  # noqa: E402
from tpu_memory_figures import hbm_allocated  # noqa: E402


def compile_model(name: str, out: Path) -> None:
    os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
    import jax
    from jax.experimental import mesh_utils, topologies
    from jax.sharding import AxisType, Mesh

    maxtext = load_by_path("maxtext")
    config = {**maxtext.MODELS, **maxtext.HELD_OUT}[name]
    topology_name = config.topology
    chip_config = "megacore" if config.generation == "v4" else "default"
    topology = topologies.get_topology_desc(platform="tpu", topology_name=topology_name, chip_config_name=chip_config)
    if len(topology.devices) != config.devices:
        raise SystemExit(f"{name} runs on {config.devices} devices; {topology_name} has {len(topology.devices)}")
    shape = (1, config.fsdp, config.tensor)
    # as MaxText lays its mesh out (max_utils.create_device_mesh): each axis along the slice's own rings
    devices = mesh_utils.create_device_mesh(shape, devices=topology.devices)
    mesh = Mesh(devices, ("data", "fsdp", "tensor"), axis_types=(AxisType.Auto,) * 3)
    before = set(Path(os.environ.get("NETSIM_XLA_DUMP", ".")).glob("*"))
    start = time.perf_counter()
    step, args = maxtext.build_step(config, mesh)
    compiled = step.lower(*args).compile()
    seconds = time.perf_counter() - start
    compiler = {"platform": "tpu", "libtpu": importlib.metadata.version("libtpu"), "jax": jax.__version__}
    compiler.update(topology=topology_name, chip_config=chip_config)
    out.mkdir(parents=True, exist_ok=True)
    text = clean(compiled.as_text())
    with gzip.open(out / f"{name}.txt.gz", "wt", compresslevel=9) as f:
        f.write(text)
    assignment = jax.tree_util.tree_leaves(compiled.input_shardings[0])[0]._device_assignment
    (out / f"{name}.devices.json").write_text(device_map(assignment, dict(zip(("data", "fsdp", "tensor"), shape, strict=True)), compiler))
    cost = compiled.cost_analysis()
    cost = cost[0] if isinstance(cost, list) else cost
    memory = compiled.memory_analysis()
    xla = {
        "compiler": compiler,
        "cost_analysis": {k: float(v) for k, v in sorted(cost.items()) if k in ("flops", "bytes accessed", "transcendentals", "optimal_seconds")},
        "memory_analysis": {
            k: int(getattr(memory, k))
            for k in ("argument_size_in_bytes", "output_size_in_bytes", "temp_size_in_bytes", "alias_size_in_bytes", "generated_code_size_in_bytes")
        },
    }
    hbm = hbm_allocated(Path(os.environ["NETSIM_XLA_DUMP"]), before) if "NETSIM_XLA_DUMP" in os.environ else None
    if hbm is not None:
        xla["buffer_assignment"] = {"hbm_bytes": hbm, "source": "the compiler's buffer assignment (--xla_dump_to): its allocations in HBM"}
    (out / f"{name}.xla.json").write_text(json.dumps(xla, indent=1) + "\n")
    flops, temp = xla["cost_analysis"].get("flops", 0), xla["memory_analysis"]["temp_size_in_bytes"] / 2**30
    print(f"{name}: compiled in {seconds:.1f} s, {len(text) / 1e6:.2f} MB of text, flops {flops:.4g}, temp {temp:.2f} GiB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    rows = ["16b", "32b", "64b", "128b", "22b_v4", "52b_v4", "32b_v5p", "64b_v5p"]
    parser.add_argument("--models", nargs="*", default=rows, help="rows of MODELS or HELD_OUT (default: all)")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    if "NETSIM_XLA_DUMP" not in os.environ:  # the compiler's memory-usage report: read back after each compile
        import tempfile

        os.environ["NETSIM_XLA_DUMP"] = tempfile.mkdtemp(prefix="xla-dump-")
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_dump_to={os.environ['NETSIM_XLA_DUMP']} --xla_dump_hlo_as_text".strip()
    for name in args.models:
        compile_model(name, Path(args.out))


if __name__ == "__main__":
    main()
