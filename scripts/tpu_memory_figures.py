"""Record the TPU compiler's own memory figures for the bundled TPU modules, to check netsim's HBM peak against.

Needs ``jax[tpu]`` (as ``scripts/make_tpu_hlo_modules.py``; no TPU). For every bundled module
of ``scenarios/programs/hlo/tpu/`` it compiles the same example again, ahead of time for the
same slice, and writes ``compiled.memory_analysis()``'s bytes per device into
``scenarios/programs/hlo/tpu/memory_analysis.json``: ``argument``, ``output``, ``temp``,
``alias`` and ``hbm`` (``argument + output + temp - alias``: what the program holds in HBM;
netsim's liveness pass, :mod:`netsim.programs.hlo.memory`, estimates it), beside the libtpu
and JAX versions. It also compiles a few small programs with temporaries, loops, in-place
updates and donated arguments (:func:`programs`) for v5e 2x2 and writes their module text
into ``tests/hlo/memory/`` (their figures under ``v5e_2x2/NAME``). The tests compare
netsim's peak with ``hbm`` without libtpu.

    /tmp/venv-tpu/bin/python scripts/tpu_memory_figures.py
"""

from __future__ import annotations

import importlib.metadata
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import make_tpu_hlo_modules as modules  # noqa: E402  (the slices and examples the bundled modules were compiled from)

OUT = modules.OUT / "memory_analysis.json"
PROGRAMS = ROOT / "tests" / "hlo" / "memory"
"""Where the small programs of :func:`programs` are written (module text), beside the bundled modules' figures."""


def programs():
    """Small JAX programs whose HBM has temporaries, loops, in-place updates and donations: name -> (f, args, jit options)."""
    import jax
    import jax.numpy as jnp

    def mlp(x, w1, w2):
        return jax.nn.gelu(x @ w1) @ w2

    def scan_layers(x, ws):
        return jax.lax.scan(lambda h, w: (jnp.tanh(h @ w), None), x, ws)[0]

    def fori_accumulator(x):
        return jax.lax.fori_loop(0, 8, lambda i, a: a + jnp.sin(x * i), jnp.zeros_like(x, dtype=jnp.float32))

    def sort_chain(x):
        y = jnp.exp(x)
        z = jnp.sort(y, axis=0)
        return z * y, z

    def dus_donated(buffer, update):
        return jax.lax.dynamic_update_slice(buffer, update, (0, 0))

    def train_step(w, x):
        return w - 0.1 * jax.grad(lambda w: jnp.mean(jnp.tanh(x @ w) ** 2))(w)

    bf16, f32 = jnp.bfloat16, jnp.float32
    return {
        "mlp": (mlp, [((4096, 2048), ("x", None), bf16), ((2048, 8192), (None, "y"), bf16), ((8192, 2048), ("y", None), bf16)], {}),
        "scan_layers": (scan_layers, [((2048, 1024), ("x", None), bf16), ((8, 1024, 1024), (None, None, "y"), bf16)], {}),
        "fori_accumulator": (fori_accumulator, [((4096, 4096), ("x", None), bf16)], {}),
        "sort_chain": (sort_chain, [((4096, 2048), (None, "y"), f32)], {}),
        "dus_donated": (dus_donated, [((8192, 4096), ("x", None), bf16), ((256, 4096), (None, None), bf16)], {"donate_argnums": 0}),
        "train_step": (train_step, [((4096, 4096), (None, "y"), f32), ((2048, 4096), ("x", None), f32)], {"donate_argnums": 0}),
    }


def figures(compiled) -> dict[str, int]:
    """``compiled.memory_analysis()``'s bytes per device, and the HBM they add up to."""
    analysis = compiled.memory_analysis()
    found = {key: int(getattr(analysis, f"{key}_size_in_bytes")) for key in ("argument", "output", "temp", "alias")}
    return {**found, "hbm": found["argument"] + found["output"] + found["temp"] - found["alias"]}


def main() -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.experimental import topologies
    from jax.sharding import AxisType, Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    examples = modules.examples_module().EXAMPLES
    recorded: dict[str, dict[str, int]] = {}
    for folder, (name, chip_config, shape, wanted) in modules.SLICES.items():
        topology = topologies.get_topology_desc(platform="tpu", topology_name=name, chip_config_name=chip_config)
        mesh = Mesh(np.array(topology.devices).reshape(shape), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
        for example_name in wanted:
            example = examples[example_name]
            specs = zip(example.shapes, example.specs, strict=True)
            args = [jax.ShapeDtypeStruct(s, jnp.bfloat16, sharding=NamedSharding(mesh, P(*spec))) for s, spec in specs]
            out = None if example.out_spec is None else NamedSharding(mesh, P(*example.out_spec))
            recorded[f"{folder}/{example_name}"] = figures(jax.jit(example.build(mesh), out_shardings=out).lower(*args).compile())
            print(folder, example_name, recorded[f"{folder}/{example_name}"])
    topology = topologies.get_topology_desc(platform="tpu", topology_name="v5e:2x2", chip_config_name="default")
    mesh = Mesh(np.array(topology.devices).reshape(2, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    PROGRAMS.mkdir(parents=True, exist_ok=True)
    for program_name, (f, shapes, options) in programs().items():
        args = [jax.ShapeDtypeStruct(s, dtype, sharding=NamedSharding(mesh, P(*spec))) for s, spec, dtype in shapes]
        compiled = jax.jit(f, **options).lower(*args).compile()
        (PROGRAMS / f"{program_name}.txt").write_text(modules.clean(compiled.as_text()))
        recorded[f"v5e_2x2/{program_name}"] = figures(compiled)
        print("v5e_2x2", program_name, recorded[f"v5e_2x2/{program_name}"])
    versions = {"libtpu": importlib.metadata.version("libtpu"), "jax": jax.__version__}
    OUT.write_text(json.dumps({"compiler": versions, "modules": recorded}, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
