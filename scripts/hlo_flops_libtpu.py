"""XLA's own FLOP counts (``compiled.cost_analysis()["flops"]``) of TPU-compiled modules, for netsim's FLOP count to be checked against.

Needs ``jax[tpu]`` (JAX and its pinned ``libtpu``; no TPU: the compiles are ahead of time),
in an environment of its own, run from the repository's root:

    /tmp/venv-tpu/bin/python scripts/hlo_flops_libtpu.py

It compiles, for a v5e 2x2 slice, a few small JAX functions chosen for what they make the
TPU compiler write (dots as convolutions with batch dims in spatial dims, padded and
dilated windows, a real convolution with stride and padding, reductions and elementwise
work in fusions, a ``scan`` over layers), and the bundled examples of
``netsim/programs/hlo/examples.py`` for the slices of ``scenarios/programs/hlo/tpu/``.
Written:

- ``tests/hlo/flops/NAME.txt``: each small function's module (debug tables and metadata cut);
- ``tests/hlo/flops/libtpu_flops.json``: per module file, XLA's FLOPs, the libtpu and JAX
  versions. A bundled module is recorded only if this compile writes the same text as the
  bundled file (the same compiler), so the figure is that file's.

tests/test_hlo_flops.py reads them (no libtpu needed) and checks netsim's count.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "hlo" / "flops"
os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")  # an ahead-of-time compile beside another process holding libtpu's lock
sys.path.insert(0, str(ROOT / "scripts"))

import make_tpu_hlo_modules as tpu  # noqa: E402  (the bundled modules' own compile: same mesh, same cleaning)


def small_functions():
    """(name, function, argument shapes, partition specs) of the small cases."""
    import jax
    import jax.numpy as jnp

    def conv(x, k):  # NHWC, stride 2, 'SAME' padding, rhs dilation 2
        return jax.lax.conv_general_dilated(x, k, (2, 2), "SAME", rhs_dilation=(2, 2), dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def conv_transpose(x, k):  # lhs dilation 2: the input's holes are not counted
        return jax.lax.conv_general_dilated(x, k, (1, 1), ((1, 1), (1, 1)), lhs_dilation=(2, 2), dimension_numbers=("NHWC", "HWIO", "NHWC"))

    def attention(q, k, v):
        s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / 8.0
        return jnp.einsum("bhqk,bhkd->bhqd", jax.nn.softmax(s, axis=-1), v)

    def layers(x, w):
        def body(c, wi):
            return jnp.tanh(c @ wi), None

        return jax.lax.scan(body, x, w)[0]

    def norm_mlp(x, w1, w2):
        x = x / jnp.sqrt(jnp.mean(x * x, axis=-1, keepdims=True) + 1e-6)
        return jax.nn.relu(x @ w1) @ w2

    def grad_mlp(x, w1, w2):
        return jax.grad(lambda w1, w2: jnp.sum(jax.nn.gelu(x @ w1) @ w2))(w1, w2)

    return [
        ("conv_stride_pad_dilate", conv, [(8, 32, 32, 64), (3, 3, 64, 128)], [("x",), ()]),
        ("conv_transpose", conv_transpose, [(8, 16, 16, 64), (3, 3, 64, 32)], [("x",), ()]),
        ("attention", attention, [(8, 4, 128, 64)] * 3, [("x",), ("x",), ("x",)]),
        ("scan_layers", layers, [(256, 512), (6, 512, 512)], [("x",), ()]),
        ("norm_mlp", norm_mlp, [(512, 1024), (1024, 2048), (2048, 1024)], [("x",), (None, "x"), ("x",)]),
        ("grad_mlp", grad_mlp, [(256, 512), (512, 1024), (1024, 256)], [("x",), (None, "x"), ("x",)]),
    ]


def main() -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.experimental import topologies
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    versions = {"libtpu": importlib.metadata.version("libtpu"), "jax": jax.__version__}
    record: dict = {"compiler": versions, "modules": {}}
    topology = topologies.get_topology_desc(platform="tpu", topology_name="v5e:2x2", chip_config_name="default")
    mesh = jax.sharding.Mesh(np.array(topology.devices).reshape(4), ("x",))
    OUT.mkdir(parents=True, exist_ok=True)
    for name, fn, shapes, specs in small_functions():
        args = [jax.ShapeDtypeStruct(s, jnp.bfloat16, sharding=NamedSharding(mesh, P(*sp))) for s, sp in zip(shapes, specs, strict=True)]
        compiled = jax.jit(fn).lower(*args).compile()
        path = OUT / f"{name}.txt"
        path.write_text(tpu.clean(compiled.as_text()))
        record["modules"][str(path.relative_to(ROOT))] = {"flops": compiled.cost_analysis().get("flops", 0.0), "topology": "v5e:2x2"}
        print(f"{path.relative_to(ROOT)}: {compiled.cost_analysis().get('flops', 0.0):.6g} FLOPs")
    examples = tpu.examples_module().EXAMPLES
    from jax.sharding import AxisType, Mesh

    for folder, (topology_name, chip_config, shape, wanted) in tpu.SLICES.items():
        topology = topologies.get_topology_desc(platform="tpu", topology_name=topology_name, chip_config_name=chip_config)
        mesh = Mesh(np.array(topology.devices).reshape(shape), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
        for example_name in wanted:
            example = examples[example_name]
            args = [jax.ShapeDtypeStruct(s, jnp.bfloat16, sharding=NamedSharding(mesh, P(*sp))) for s, sp in zip(example.shapes, example.specs, strict=True)]
            out_sharding = None if example.out_spec is None else NamedSharding(mesh, P(*example.out_spec))
            compiled = jax.jit(example.build(mesh), out_shardings=out_sharding).lower(*args).compile()
            path = tpu.OUT / folder / f"{example_name}.txt"
            same = path.exists() and path.read_text() == tpu.clean(compiled.as_text())
            key = str(path.relative_to(ROOT))
            if same:
                record["modules"][key] = {"flops": compiled.cost_analysis().get("flops", 0.0), "topology": topology_name}
            print(f"{key}: {compiled.cost_analysis().get('flops', 0.0):.6g} FLOPs" + ("" if same else " (not recorded: this compile writes another text)"))
    (OUT / "libtpu_flops.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
