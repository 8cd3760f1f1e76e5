"""Simulate a JAX function's communication on a slice, straight from the function.

:func:`from_jax` compiles the function for the mesh it is given (CPU devices made with
``XLA_FLAGS=--xla_force_host_platform_device_count=N``, or abstract TPU devices from
``jax.experimental.topologies`` when libtpu is installed, compiled ahead of time), reads the
compiled module and its device map, and simulates it (:func:`netsim.programs.hlo.run.run_hlo`).
Where ``jax.experimental.roofline`` can read the function (collectives inside a
``shard_map``), its ICI bytes per mesh axis are kept beside netsim's.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from netsim.network.topology import Topology
from netsim.programs.hlo import hlo_from_text
from netsim.programs.hlo.devices import device_map_from_data
from netsim.programs.hlo.export import device_map
from netsim.programs.hlo.run import run_hlo
from netsim.result import Result

__all__ = ["compile_for", "from_jax", "mesh_of", "roofline_ici_bytes"]


def compile_for(f: Callable[..., Any], *args: Any, in_shardings: Any = None, out_shardings: Any = None) -> Any:
    """``jax.jit(f, ...).lower(*args).compile()`` (``f`` may be jitted already)."""
    import jax

    if hasattr(f, "lower") and in_shardings is None and out_shardings is None:
        return f.lower(*args).compile()
    kwargs = {k: v for k, v in (("in_shardings", in_shardings), ("out_shardings", out_shardings)) if v is not None}
    return jax.jit(f, **kwargs).lower(*args).compile()


def roofline_ici_bytes(f: Callable[..., Any], mesh: Any, *args: Any) -> dict[str, int] | None:
    """``jax.experimental.roofline``'s ICI bytes per mesh axis for ``f``, or None where it cannot tell.

    It reads the collectives a ``shard_map`` holds (not those XLA inserts by itself), runs a
    loop's body once, and counts an axis as a ring; it has no rule for ``psum`` in every
    JAX version.
    """
    try:
        from jax.experimental import roofline
    except ImportError:
        return None
    quiet = logging.getLogger("absl")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # it logs a warning, with the whole equation, for every primitive without a rule
    try:
        _, result = roofline.roofline(f, mesh=mesh)(*args)
    except Exception:  # a function it cannot read: there is nothing to compare with
        return None
    finally:
        quiet.setLevel(level)
    found = {str(axis): int(nbytes) for axis, nbytes in result.ici_bytes.items()}
    return found or None


def mesh_of(args: tuple[Any, ...], in_shardings: Any = None) -> Any:
    """The mesh of the ``NamedSharding`` s that place ``args`` (or ``in_shardings``), as ``jax.jit`` would read it.

    Raises
    ------
    ValueError
        When no argument is placed on a mesh, or they are placed on different meshes.
    """
    import jax

    leaves = [*jax.tree_util.tree_leaves(in_shardings), *(getattr(a, "sharding", None) for a in jax.tree_util.tree_leaves(args))]
    meshes = []
    for sharding in leaves:
        mesh = getattr(sharding, "mesh", None)
        if mesh is not None and getattr(mesh, "devices", None) is not None and not any(mesh is m or mesh == m for m in meshes):
            meshes.append(mesh)
    if not meshes:
        raise ValueError("from_jax needs the mesh: pass mesh=..., or arguments placed with a NamedSharding (jax.device_put(x, NamedSharding(mesh, P(...))))")
    if len(meshes) > 1:
        raise ValueError(f"the arguments are placed on {len(meshes)} different meshes; pass the one to compile for as mesh=...")
    return meshes[0]


def from_jax(
    f: Callable[..., Any],
    *args: Any,
    mesh: Any = None,
    topology: Topology | str,
    in_shardings: Any = None,
    out_shardings: Any = None,
    clock_hz: float | None = None,
    engine: str = "auto",
    name: str | None = None,
) -> Result:
    """Compile ``f`` for ``mesh`` with JAX and simulate its communication and compute on ``topology``.

    Parameters
    ----------
    f : callable
        The function (jitted or not); ``args`` are its arguments or ``jax.ShapeDtypeStruct`` s
        (with ``NamedSharding`` s on ``mesh``).
    mesh : jax.sharding.Mesh, optional
        The mesh it runs on: as many devices as ``topology`` has chips. Default: the mesh
        of the ``NamedSharding`` s that place ``args`` (or of ``in_shardings``).
    topology : Topology or str
        The slice, e.g. ``"tpu-v5e:4x4"``.
    in_shardings, out_shardings : optional
        Passed to ``jax.jit``.
    clock_hz : float, optional
        Turns the TPU compiler's ``estimated_cycles`` into time (see :func:`~netsim.programs.hlo.run.run_hlo`).
    engine : {"auto", "processes", "fast"}
    name : str, optional
        The run's name (default: the function's).

    Returns
    -------
    Result
        As :func:`~netsim.programs.hlo.run.run_hlo`; ``result.program.roofline_ici_bytes`` holds
        ``jax.experimental.roofline``'s per-axis ICI bytes where it applies.

    Examples
    --------
    >>> import os; os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"  # doctest: +SKIP
    >>> import jax, netsim  # doctest: +SKIP
    >>> mesh = jax.make_mesh((2, 4), ("x", "y"))  # doctest: +SKIP
    >>> step = jax.shard_map(lambda a: jax.lax.psum(a, "y"), mesh=mesh, in_specs=P("x", "y"), out_specs=P("x"))  # doctest: +SKIP
    >>> netsim.from_jax(step, x, mesh=mesh, topology="tpu-v5e:2x4").time  # doctest: +SKIP
    """
    label = name or getattr(f, "__name__", "jax_function")
    if mesh is None:
        mesh = mesh_of(args, in_shardings)
    compiled = compile_for(f, *args, in_shardings=in_shardings, out_shardings=out_shardings)
    module = hlo_from_text(compiled.as_text(), f"<compiled {label}>")
    devices = device_map_from_data(device_map(mesh), module.devices, f"the mesh of {label}")
    result = run_hlo(module, topology, device_map=devices, clock_hz=clock_hz, engine=engine, name=label)
    program = dataclasses.replace(result.program, source=f"compiled from {label}", roofline_ici_bytes=roofline_ici_bytes(f, mesh, *args))
    return dataclasses.replace(result, program=program)
