"""Small JAX programs whose compiled modules ship with netsim (``scenarios/programs/hlo/``).

Each example is a function and the arguments it is compiled for, on a 2x4 mesh with
axes ``x`` (2) and ``y`` (4): the five ``shard_map``'d collectives, an MLP that XLA
shards by itself, an FSDP matmul (weights gathered before they are used) and a
scan-based collective matmul (a ``while`` loop around a ``ppermute``).
``scripts/make_hlo_modules.py`` compiles them (on CPU with 8 fake devices) and writes
each module's text with its device map; the tests compile them again and check what
the modules hold. Needs the ``jax`` extra.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["EXAMPLES", "MESH_SHAPE", "Example", "compile_example", "example_mesh"]

MESH_SHAPE = {"x": 2, "y": 4}
"""The examples' mesh: axis name -> size (8 devices, row-major)."""


@dataclass(frozen=True)
class Example:
    """A JAX function to compile, the global shapes of its float32 arguments and their PartitionSpecs."""

    name: str
    description: str
    shapes: tuple[tuple[int, ...], ...]
    specs: tuple[tuple[Any, ...], ...]
    build: Callable[[Any], Callable[..., Any]]
    """mesh -> the function to ``jax.jit``."""
    out_spec: tuple[Any, ...] | None = None


def _shard_map(body: Callable[..., Any], in_specs: tuple, out_spec: tuple) -> Callable[[Any], Callable[..., Any]]:
    def build(mesh: Any) -> Callable[..., Any]:
        import jax
        from jax.sharding import PartitionSpec as P

        return jax.shard_map(body, mesh=mesh, in_specs=tuple(P(*s) for s in in_specs), out_specs=P(*out_spec), check_vma=False)

    return build


def _plain(body: Callable[..., Any]) -> Callable[[Any], Callable[..., Any]]:
    return lambda mesh: body


def _all_gather(a: Any) -> Any:
    import jax

    return jax.lax.all_gather(a, "y", axis=1, tiled=True)


def _psum_scatter(a: Any) -> Any:
    import jax

    return jax.lax.psum_scatter(a, "y", scatter_dimension=0, tiled=True)


def _psum(a: Any) -> Any:
    import jax

    return jax.lax.psum(a, "x")


def _all_to_all(a: Any) -> Any:
    import jax

    return jax.lax.all_to_all(a, "y", split_axis=0, concat_axis=1, tiled=True)


def _ppermute(a: Any) -> Any:
    import jax

    return jax.lax.ppermute(a, "y", [(i, (i + 1) % 4) for i in range(4)])


def _mlp(x: Any, w1: Any, w2: Any) -> Any:
    import jax

    return jax.nn.relu(x @ w1) @ w2


def _fsdp(x: Any, w: Any) -> Any:
    return x @ w


def _collective_matmul(a: Any, b: Any) -> Any:
    """``A[I, J_y] @ B[J, K]``: each device multiplies the block of A it holds while the next travels round ``y``."""
    import jax
    import jax.numpy as jnp

    n = 4
    rows = b.shape[0] // n
    index = jax.lax.axis_index("y")

    def step(carry: Any, i: Any) -> Any:
        block, acc = carry
        source = (index - i) % n
        acc = acc + block @ jax.lax.dynamic_slice_in_dim(b, source * rows, rows)
        block = jax.lax.ppermute(block, "y", [(j, (j + 1) % n) for j in range(n)])
        return (block, acc), None

    (_, acc), _ = jax.lax.scan(step, (a, jnp.zeros((a.shape[0], b.shape[1]), a.dtype)), jnp.arange(n))
    return acc


EXAMPLES: dict[str, Example] = {
    e.name: e
    for e in (
        Example(
            "all_gather",
            "shard_map'd all_gather over y (tiled) of a [1024, 1024] float32 array split over x and y",
            ((1024, 1024),),
            (("x", "y"),),
            _shard_map(_all_gather, (("x", "y"),), ("x", None)),
            None,
        ),
        Example("psum_scatter", "shard_map'd psum_scatter over y", ((2048, 1024),), (("x", None),), _shard_map(_psum_scatter, (("x", None),), ("x",))),
        Example("psum", "shard_map'd psum over x", ((1024, 1024),), (("x", "y"),), _shard_map(_psum, (("x", "y"),), (None, "y"))),
        Example("all_to_all", "shard_map'd all_to_all over y", ((1024, 1024),), (("x", "y"),), _shard_map(_all_to_all, (("x", "y"),), ("x", "y"))),
        Example("ppermute", "shard_map'd ppermute round y", ((1024, 1024),), (("x", "y"),), _shard_map(_ppermute, (("x", "y"),), ("x", "y"))),
        Example(
            "mlp",
            "a two-layer MLP, batch over x and hidden over y, sharded by XLA (an all-reduce over y)",
            ((256, 1024), (1024, 4096), (4096, 1024)),
            (("x", None), (None, "y"), ("y", None)),
            _plain(_mlp),
            ("x", None),
        ),
        Example(
            "fsdp_matmul",
            "FSDP: weights sharded over all 8 devices, gathered before the matmul",
            ((256, 1024), (1024, 4096)),
            ((("x", "y"), None), (("x", "y"), None)),
            _plain(_fsdp),
            ((("x", "y")), None),
        ),
        Example(
            "collective_matmul",
            "a scan-based collective matmul: a while loop of 4 steps around a ppermute over y",
            ((512, 1024), (1024, 512)),
            ((None, "y"), (None, None)),
            _shard_map(_collective_matmul, ((None, "y"), (None, None)), (None, None)),
            (None, None),
        ),
    )
}
"""The bundled examples by name."""


def example_mesh(devices: Any = None) -> Any:
    """The examples' 2x4 ``jax.sharding.Mesh`` (axes x, y) over ``devices`` (default: the first 8)."""
    import jax
    import numpy as np
    from jax.sharding import AxisType, Mesh

    devices = list(jax.devices()[:8]) if devices is None else list(devices)
    if len(devices) < 8:
        raise ValueError(f"the examples need 8 devices, found {len(devices)}; set XLA_FLAGS=--xla_force_host_platform_device_count=8 before importing jax")
    return Mesh(np.array(devices).reshape(2, 4), tuple(MESH_SHAPE), axis_types=(AxisType.Auto,) * 2)


def compile_example(name: str, mesh: Any) -> Any:
    """``jax.jit(...).lower(...).compile()`` of the example ``name`` on ``mesh``."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    example = EXAMPLES[name]
    args = [jax.ShapeDtypeStruct(shape, jnp.float32, sharding=NamedSharding(mesh, P(*spec))) for shape, spec in zip(example.shapes, example.specs, strict=True)]
    out = None if example.out_spec is None else NamedSharding(mesh, P(*example.out_spec))
    return jax.jit(example.build(mesh), out_shardings=out).lower(*args).compile()
