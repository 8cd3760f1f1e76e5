"""Record the TPU compiler's own memory figures for the bundled TPU modules, to check netsim's HBM peak against.

Needs ``jax[tpu]`` (as ``scripts/make_tpu_hlo_modules.py``; no TPU). For every bundled module
of ``scenarios/programs/hlo/tpu/`` it compiles the same example again, ahead of time for the
same slice, and writes ``compiled.memory_analysis()``'s bytes per device into
``scenarios/programs/hlo/tpu/memory_analysis.json``: ``argument``, ``output``, ``temp``,
``alias``, their sum ``memory_analysis`` (``argument + output + temp - alias``) and ``hbm``:
the HBM the compiler allocated, read from the buffer assignment it dumps
(``--xla_dump_to``: the allocations of memory space 0). The two differ where the compiler
preallocates on-chip scratch (VMEM, memory space 1), which ``temp`` counts too. netsim's
pass (:mod:`netsim.programs.hlo.memory`) estimates ``hbm``. Beside: the libtpu and JAX
versions. It also compiles a few small programs with temporaries, loops, in-place updates,
donated arguments and a remat'd decoder's training step (:func:`programs`) for v5e 2x2 and
writes their module text into ``tests/hlo/memory/`` (their figures under ``v5e_2x2/NAME``).
The tests compare netsim's peak with ``hbm`` without libtpu.

    /tmp/venv-tpu/bin/python scripts/tpu_memory_figures.py
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import re
import shutil
import sys
import tempfile
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

    def layer(h, w):  # a decoder layer: attention and an MLP, remat'd in the scan below
        wq, wk, wv, wo, w1, w2 = w
        b, s, d = h.shape
        q, k, v = ((h @ m).reshape(b, s, 8, d // 8) for m in (wq, wk, wv))
        attention = jax.nn.softmax(jnp.einsum("bshd,bthd->bhst", q, k) / 8.0, axis=-1)
        h = h + jnp.einsum("bhst,bthd->bshd", attention, v).reshape(b, s, d) @ wo
        return h + jax.nn.gelu(h @ w1) @ w2, None

    def transformer_step(params, x):  # fwd + bwd + update of 4 layers, FSDP over all 4 devices
        def loss(params):
            return jnp.mean(jax.lax.scan(jax.checkpoint(layer), x, params)[0].astype(jnp.float32) ** 2)

        return jax.tree.map(lambda p, g: p - 1e-3 * g.astype(p.dtype), params, jax.grad(loss)(params))

    bf16, f32 = jnp.bfloat16, jnp.float32
    return {
        "mlp": (mlp, [((4096, 2048), ("x", None), bf16), ((2048, 8192), (None, "y"), bf16), ((8192, 2048), ("y", None), bf16)], {}),
        "scan_layers": (scan_layers, [((2048, 1024), ("x", None), bf16), ((8, 1024, 1024), (None, None, "y"), bf16)], {}),
        "fori_accumulator": (fori_accumulator, [((4096, 4096), ("x", None), bf16)], {}),
        "sort_chain": (sort_chain, [((4096, 2048), (None, "y"), f32)], {}),
        "dus_donated": (dus_donated, [((8192, 4096), ("x", None), bf16), ((256, 4096), (None, None), bf16)], {"donate_argnums": 0}),
        "train_step": (train_step, [((4096, 4096), (None, "y"), f32), ((2048, 4096), ("x", None), f32)], {"donate_argnums": 0}),
        "transformer_step": (
            transformer_step,
            [[((4, *s), (None, ("x", "y")), bf16) for s in ((1024,) * 2,) * 4 + ((1024, 4096), (4096, 1024))], ((8, 1024, 1024), (("x", "y"),), bf16)],
            {"donate_argnums": 0},
        ),
    }


def arguments(shapes: list, mesh) -> list:
    """The ``jax.ShapeDtypeStruct`` arguments ``(shape, spec, dtype)`` describe on ``mesh`` (a list of them: one tuple argument)."""
    import jax
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    def struct(entry):
        shape, spec, dtype = entry
        return jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, P(*spec)))

    return [tuple(struct(e) for e in entry) if isinstance(entry, list) else struct(entry) for entry in shapes]


def hbm_allocated(dump: Path, before: set[Path]) -> int | None:
    """The bytes of HBM (memory space 0) the compiler allocated, from the buffer assignment it just dumped into ``dump``.

    ``compiled.memory_analysis()``'s temporary bytes add the on-chip scratch the compiler
    preallocates (memory space 1, VMEM) to the HBM heap; the dump's allocations say which is which.
    """
    new = [p for p in dump.glob("*after_optimizations-buffer-assignment.txt") if p not in before]
    if len(new) != 1:
        return None
    total = 0
    for size, rest in re.findall(r"^allocation \d+: size (\d+)(.*?):\s*$", new[0].read_text(), re.M):
        if re.search(r"color (\d+)", rest) is None:  # color 0: HBM
            total += int(size)
    return total


def figures(compiled, hbm: int | None) -> dict[str, int]:
    """``compiled.memory_analysis()``'s bytes per device, what they add up to, and the HBM the compiler allocated."""
    analysis = compiled.memory_analysis()
    found = {key: int(getattr(analysis, f"{key}_size_in_bytes")) for key in ("argument", "output", "temp", "alias")}
    total = found["argument"] + found["output"] + found["temp"] - found["alias"]
    return {**found, "memory_analysis": total, "hbm": total if hbm is None else hbm}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs-only", action="store_true", help="only the small programs, not the bundled modules")
    parser.add_argument("--program", action="append", help="only this small program (repeatable; with --programs-only)")
    parser.add_argument("--out", default=None, help="a folder for the figures and the programs' text (default: where the tests read them)")
    options = parser.parse_args()
    out = Path(options.out) if options.out else None
    figures_path, programs_dir = (out / "memory_analysis.json", out) if out else (OUT, PROGRAMS)
    dump = Path(tempfile.mkdtemp(prefix="netsim-buffers-"))
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} --xla_dump_to={dump}".strip()
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.experimental import topologies
    from jax.sharding import AxisType, Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    examples = modules.examples_module().EXAMPLES
    recorded: dict[str, dict[str, int]] = {}
    for folder, (name, chip_config, shape, wanted) in ({} if options.programs_only else modules.SLICES).items():
        topology = topologies.get_topology_desc(platform="tpu", topology_name=name, chip_config_name=chip_config)
        mesh = Mesh(np.array(topology.devices).reshape(shape), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
        for example_name in wanted:
            example = examples[example_name]
            specs = zip(example.shapes, example.specs, strict=True)
            args = [jax.ShapeDtypeStruct(s, jnp.bfloat16, sharding=NamedSharding(mesh, P(*spec))) for s, spec in specs]
            out = None if example.out_spec is None else NamedSharding(mesh, P(*example.out_spec))
            before = set(dump.glob("*"))
            compiled = jax.jit(example.build(mesh), out_shardings=out).lower(*args).compile()
            recorded[f"{folder}/{example_name}"] = figures(compiled, hbm_allocated(dump, before))
            print(folder, example_name, recorded[f"{folder}/{example_name}"])
    topology = topologies.get_topology_desc(platform="tpu", topology_name="v5e:2x2", chip_config_name="default")
    mesh = Mesh(np.array(topology.devices).reshape(2, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
    programs_dir.mkdir(parents=True, exist_ok=True)
    for program_name, (f, shapes, jit_options) in programs().items():
        if options.program and program_name not in options.program:
            continue
        before = set(dump.glob("*"))
        compiled = jax.jit(f, **jit_options).lower(*arguments(shapes, mesh)).compile()
        (programs_dir / f"{program_name}.txt").write_text(modules.clean(compiled.as_text()))
        recorded[f"v5e_2x2/{program_name}"] = figures(compiled, hbm_allocated(dump, before))
        print("v5e_2x2", program_name, recorded[f"v5e_2x2/{program_name}"])
    versions = {"libtpu": importlib.metadata.version("libtpu"), "jax": jax.__version__}
    figures_path.write_text(json.dumps({"compiler": versions, "modules": recorded}, indent=1) + "\n")
    shutil.rmtree(dump, ignore_errors=True)
    print(f"wrote {figures_path}")


if __name__ == "__main__":
    main()
