"""Simulate a JAX function's communication on a slice, straight from the function.

:func:`from_jax` compiles the function and simulates the module it compiles to
(:func:`netsim.programs.hlo.run.run_hlo`). Which compiler:

- **the TPU compiler**, ahead of time, when ``libtpu`` is importable (the ``tpu`` extra)
  and the topology is a TPU slice: ``jax.experimental.topologies.get_topology_desc`` gives
  the slice's abstract devices in the TPU's own order, the function's mesh is laid over
  them (same axis names and sizes), its arguments are given the same ``PartitionSpec`` s
  on that mesh, and the compiled executable's device assignment (each device's chip
  coordinates and core) places the module's ids on the slice. The module is what the TPU
  runs: bf16 kept, fusions, async pairs, the compiler's own collective algorithms.
- **the CPU compiler** otherwise (or when ``compiler="cpu"``), on the mesh given: the
  module is what XLA's CPU pipeline makes of the function, and the result says so:
  dtypes as the CPU compiler left them (bf16 dots and collectives computed in f32), no
  async overlap, no compiler algorithms. ``dtypes="source"`` times its collectives and
  dots at the dtype of the function's arguments instead
  (:func:`netsim.programs.hlo.dtypes.at_source_dtype`).

A ``shard_map`` that names its mesh (``jax.shard_map(f, mesh=mesh, ...)``) is bound to
that mesh's devices; to compile it for the TPU, leave ``mesh=`` out (JAX then takes the
mesh :func:`from_jax` sets). Where ``jax.experimental.roofline`` can read the function
(collectives inside a ``shard_map``), its ICI bytes per mesh axis are kept beside netsim's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from collections.abc import Callable
from typing import Any

from netsim.network.calibration import calibrate, check_calibration
from netsim.network.presets import GENERATIONS, is_slice_name
from netsim.network.topology import Topology
from netsim.programs.hlo import hlo_from_text
from netsim.programs.hlo.devices import CPU_CAVEAT, device_map_from_data
from netsim.programs.hlo.dtypes import at_source_dtype, source_dtype
from netsim.programs.hlo.export import device_map
from netsim.programs.hlo.libtpu import LibtpuLockError, libtpu_version, tpu_compile
from netsim.programs.hlo.libtpu import tpu_mesh as lay_on_tpu
from netsim.programs.hlo.run import run_hlo
from netsim.result import Result
from netsim.run import resolve_topology

__all__ = [
    "CPU_CAVEAT",
    "LIBTPU_TOPOLOGIES",
    "LibtpuLockError",
    "compile_for",
    "compile_for_tpu",
    "from_jax",
    "libtpu_version",
    "mesh_of",
    "roofline_ici_bytes",
]

LIBTPU_TOPOLOGIES = {
    "tpu-v4": ("v4", "megacore"),
    "tpu-v5p": ("v5", "default"),
    "tpu-v5e": ("v5e", "default"),
    "tpu-v6e": ("v6e", "default"),
    "tpu7x": ("tpu7x", "default"),
}
"""netsim's generation -> libtpu's topology prefix and chip configuration (v4 runs one device per chip: ``megacore``)."""


def compile_for(f: Callable[..., Any], *args: Any, in_shardings: Any = None, out_shardings: Any = None) -> Any:
    """``jax.jit(f, ...).lower(*args).compile()`` (``f`` may be jitted already)."""
    import jax

    if hasattr(f, "lower") and in_shardings is None and out_shardings is None:
        return f.lower(*args).compile()
    kwargs = {k: v for k, v in (("in_shardings", in_shardings), ("out_shardings", out_shardings)) if v is not None}
    return jax.jit(f, **kwargs).lower(*args).compile()


def _on(mesh: Any, sharding: Any) -> Any:
    from jax.sharding import NamedSharding, PartitionSpec

    if sharding is None:
        return None
    spec = getattr(sharding, "spec", None)
    return NamedSharding(mesh, spec if spec is not None else PartitionSpec())


def compile_for_tpu(
    f: Callable[..., Any], *args: Any, topology: str, mesh: Any = None, in_shardings: Any = None, out_shardings: Any = None
) -> tuple[Any, Any, dict[str, str]]:
    """Compile ``f`` for the TPU slice ``topology`` (``"tpu-v5e:4x4"``) ahead of time with libtpu.

    Returns the compiled executable, the TPU mesh (the function's mesh's axes over the slice's
    devices in the TPU's own order) and what compiled it (``platform``, ``libtpu``, ``jax``,
    ``topology``, ``chip_config``).

    Raises
    ------
    ValueError
        If the topology is not a slice libtpu compiles for, or the mesh does not fit it.
    """
    import jax
    from jax.experimental import topologies

    generation, _, shape = topology.partition(":")
    if generation not in LIBTPU_TOPOLOGIES:
        raise ValueError(f"libtpu compiles for {', '.join(LIBTPU_TOPOLOGIES)} slices, not {topology!r}")
    prefix, chip_config = LIBTPU_TOPOLOGIES[generation]
    name = f"{prefix}:{shape}"
    devices = topologies.get_topology_desc(platform="tpu", topology_name=name, chip_config_name=chip_config).devices
    source = mesh if mesh is not None else mesh_of(args, in_shardings)
    if source.devices.size != len(devices):
        raise ValueError(f"the mesh {dict(source.shape)} has {source.devices.size} devices; {topology} has {len(devices)}")
    tpu_mesh, placement = lay_on_tpu(source, list(devices))

    def retarget(leaf: Any) -> Any:
        if hasattr(leaf, "shape") and hasattr(leaf, "dtype"):
            return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=_on(tpu_mesh, getattr(leaf, "sharding", None)))
        return leaf

    tpu_args = jax.tree_util.tree_map(retarget, args)
    retargeted = [jax.tree_util.tree_map(lambda s: _on(tpu_mesh, s), given) if given is not None else None for given in (in_shardings, out_shardings)]
    set_mesh = getattr(jax, "set_mesh", None) or getattr(jax.sharding, "use_mesh", None)  # the mesh a shard_map without mesh= takes
    with set_mesh(tpu_mesh) if set_mesh is not None else contextlib.nullcontext():
        compiled = compile_for(f, *tpu_args, in_shardings=retargeted[0], out_shardings=retargeted[1])
    compiler = {"platform": "tpu", "libtpu": libtpu_version() or "unknown", "jax": jax.__version__, "topology": name, "chip_config": chip_config}
    compiler["placement"] = placement
    return compiled, tpu_mesh, compiler


def _assignment_map(compiled: Any, mesh: Any, compiler: dict[str, str]) -> dict[str, Any]:
    """The device map of the compiled executable: its device assignment (module id i runs on assignment[i])."""
    data = device_map(mesh)
    shardings = getattr(compiled, "input_shardings", None)
    try:
        assignment = shardings[0][0]._device_assignment  # the executable's own device order
    except (TypeError, IndexError, AttributeError):
        assignment = None
    if assignment is not None and len(assignment) == len(data["devices"]):
        data["devices"] = [
            {"id": i, "coords": [int(c) for c in d.coords], "core_on_chip": int(getattr(d, "core_on_chip", 0) or 0), "platform": "tpu"}
            for i, d in enumerate(assignment)
        ]
    return {**data, "compiler": compiler}


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


def _argument_dtypes(args: Any) -> list[str]:
    import jax

    return [str(leaf.dtype) for leaf in jax.tree_util.tree_leaves(args) if hasattr(leaf, "dtype")]


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
    topology: Topology | str,
    mesh: Any = None,
    in_shardings: Any = None,
    out_shardings: Any = None,
    clock_hz: float | None = None,
    engine: str = "auto",
    name: str | None = None,
    compiler: str = "auto",
    dtypes: str = "compiled",
    calibration: str | None = None,
) -> Result:
    """Compile ``f`` with JAX and simulate its communication and compute on ``topology``.

    Parameters
    ----------
    f : callable
        The function (jitted or not); ``args`` are its arguments or ``jax.ShapeDtypeStruct`` s
        (with ``NamedSharding`` s on ``mesh``).
    topology : Topology or str
        The slice, e.g. ``"tpu-v5e:4x4"``.
    mesh : jax.sharding.Mesh, optional
        The mesh it runs on (default: the mesh of the arguments' shardings): as many
        devices as ``topology`` has.
    in_shardings, out_shardings : optional
        Passed to ``jax.jit`` (re-laid on the TPU mesh when the TPU compiler is used).
    clock_hz : float, optional
        Turns the TPU compiler's ``estimated_cycles`` into time (see :func:`~netsim.programs.hlo.run.run_hlo`).
    engine : {"auto", "processes", "fast"}
    name : str, optional
        The run's name (default: the function's).
    compiler : {"auto", "tpu", "cpu"}
        ``auto``: the TPU compiler when libtpu is installed and ``topology`` is a TPU slice
        it compiles for, else the CPU compiler; ``tpu`` fails when it cannot be used.
    dtypes : {"compiled", "source"}
        ``source`` (CPU-compiled modules only): time f32 collectives and dots at the
        narrowest floating dtype of the arguments, as a TPU would run a bf16 program.
    calibration : {"nominal", "calibrated"}, optional
        ``calibrated``: the generation's measured terms (fixed cost per collective, link
        and compute efficiency; docs/validation.md), ``nominal`` the ideal model. Default:
        as ``topology`` runs (``nominal`` for a name).

    Returns
    -------
    Result
        As :func:`~netsim.programs.hlo.run.run_hlo`; ``result.program.compiler`` says which
        compiler made the module (and, for the CPU, what that module lacks),
        ``result.program.dtypes`` which dtypes were timed, and
        ``result.program.roofline_ici_bytes`` holds ``jax.experimental.roofline``'s per-axis
        ICI bytes where it applies; ``result.program.module_text`` the compiled module's text.

    Raises
    ------
    ValueError
        For an unknown ``compiler``, ``dtypes`` or ``calibration``, or ``compiler="tpu"``
        without libtpu or when the TPU compile fails.
    LibtpuLockError
        When another process holds libtpu's lock (``/tmp/libtpu_lockfile``) and libtpu will
        not load beside it even with ``ALLOW_MULTIPLE_LIBTPU_LOAD=1``: never a silent
        CPU-compiled module (see :mod:`netsim.programs.hlo.libtpu`).

    Examples
    --------
    >>> import os; os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"  # doctest: +SKIP
    >>> import jax, netsim  # doctest: +SKIP
    >>> mesh = jax.make_mesh((2, 4), ("x", "y"))  # doctest: +SKIP
    >>> step = jax.shard_map(lambda a: jax.lax.psum(a, "y"), in_specs=P("x", "y"), out_specs=P("x"))  # doctest: +SKIP
    >>> netsim.from_jax(step, x, mesh=mesh, topology="tpu-v5e:2x4").program.compiler  # doctest: +SKIP
    """
    if mesh is not None and not (hasattr(mesh, "devices") and hasattr(mesh, "axis_names")):
        shown = repr(mesh) if len(repr(mesh)) <= 60 else repr(mesh)[:60] + "..."
        raise ValueError(f"mesh must be a jax.sharding.Mesh, e.g. jax.make_mesh((2, 4), ('x', 'y')); got {type(mesh).__name__} {shown}")
    if compiler not in ("auto", "tpu", "cpu"):
        raise ValueError(f"compiler must be 'auto', 'tpu' or 'cpu', got {compiler!r}")
    if dtypes not in ("compiled", "source"):
        raise ValueError(f"dtypes must be 'compiled' or 'source', got {dtypes!r}")
    mesh = mesh if mesh is not None else mesh_of(args, in_shardings)  # found once: the compilers and the roofline share it
    topo = resolve_topology(topology, None)
    topo = calibrate(topo, check_calibration(calibration)) if calibration is not None else topo
    label = name or getattr(f, "__name__", "jax_function")
    slice_name = topo.name
    tpu_slice = is_slice_name(slice_name) and slice_name.partition(":")[0] in GENERATIONS
    fallback = ""
    compiled = None
    if compiler == "tpu" or (compiler == "auto" and tpu_slice):
        if libtpu_version() is None:
            fallback = "libtpu is not installed (pip install 'netsim[tpu]')"
            if compiler == "tpu":
                raise ValueError(f"compiler='tpu': {fallback}")
        else:
            done, fallback = tpu_compile(
                lambda: compile_for_tpu(f, *args, topology=slice_name, mesh=mesh, in_shardings=in_shardings, out_shardings=out_shardings), compiler
            )
            if done is not None:
                compiled, tpu_mesh, facts = done
    if compiled is not None:
        text = compiled.as_text()
        module = hlo_from_text(text, f"<compiled {label}>")
        devices = device_map_from_data(_assignment_map(compiled, tpu_mesh, facts), module.devices, f"the TPU mesh of {label} ({facts['placement']})")
        said = f"the TPU compiler (libtpu {facts['libtpu']}, JAX {facts['jax']}, ahead of time for {facts['topology']})"
        timed = "as compiled"
    else:
        compiled = compile_for(f, *args, in_shardings=in_shardings, out_shardings=out_shardings)
        text = compiled.as_text()
        module = hlo_from_text(text, f"<compiled {label}>")
        devices = device_map_from_data(device_map(mesh), module.devices, f"the mesh of {label}")
        said = CPU_CAVEAT + (f"; {fallback}" if fallback else "")
        timed = "as compiled"
        wanted = source_dtype(_argument_dtypes(args))
        if dtypes == "source" and wanted is not None:
            module = at_source_dtype(module, wanted)
            timed = f"source: f32 collectives and dots timed at the arguments' {wanted}"
    result = run_hlo(module, topo, device_map=devices, clock_hz=clock_hz, engine=engine, name=label)
    program = dataclasses.replace(
        result.program,
        source=f"compiled from {label}",
        compiler=said,
        dtypes=timed,
        roofline_ici_bytes=roofline_ici_bytes(f, mesh, *args),
    )
    return dataclasses.replace(result, program=program)
