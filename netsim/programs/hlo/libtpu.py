"""libtpu as :func:`~netsim.programs.hlo.from_jax.from_jax` uses it: its lock, and where a mesh's devices sit on the TPU.

**The lock.** libtpu takes ``/tmp/libtpu_lockfile`` when it loads; a second process that
loads it while another holds the lock fails ("Internal error when accessing libtpu
multi-process lockfile"). An ahead-of-time compile touches no TPU, so netsim sets
``ALLOW_MULTIPLE_LIBTPU_LOAD=1`` for it (:func:`shared_libtpu`) and libtpu loads beside
the other process. When it still refuses, :func:`tpu_compile` raises
:class:`LibtpuLockError` naming the lock and the cause: it never falls back to XLA's CPU
compiler on its own, and never suggests deleting a lock another process holds.

**The mesh.** A mesh built with ``jax.make_mesh(shape, names, devices=topology.devices)``
lays its axes over the slice as JAX's ``mesh_utils.create_device_mesh`` does on a TPU (on
a v5e 4x4, the last axis along a row of 4 chips, not the 2x2 block of a host), and the
TPU compiler compiles for that order. :func:`tpu_mesh` keeps it: a mesh of TPU devices is
taken device for device; a mesh of CPU devices is laid as ``jax.make_mesh`` lays it on
the TPU.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import os
import warnings
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["ALLOW_VARIABLE", "LIBTPU_LOCKFILE", "LibtpuLockError", "is_lock_error", "lay_devices", "libtpu_version", "shared_libtpu", "tpu_compile", "tpu_mesh"]

LIBTPU_LOCKFILE = "/tmp/libtpu_lockfile"
"""The file libtpu locks while a process has it loaded."""

ALLOW_VARIABLE = "ALLOW_MULTIPLE_LIBTPU_LOAD"
"""The environment variable that lets libtpu load while another process holds its lock."""


class LibtpuLockError(RuntimeError):
    """libtpu would not load because another process holds its lock: the TPU compile did not happen."""


def libtpu_version() -> str | None:
    """The installed libtpu's version, or None when it is not installed."""
    if importlib.util.find_spec("libtpu") is None:
        return None
    try:
        return importlib.metadata.version("libtpu")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def is_lock_error(error: BaseException) -> bool:
    """Whether ``error`` is libtpu refusing to load because of its multi-process lock.

    Examples
    --------
    >>> is_lock_error(RuntimeError('ABORTED: Internal error when accessing libtpu multi-process lockfile. Run "$ sudo rm /tmp/libtpu_lockfile".'))
    True
    >>> is_lock_error(ValueError("the mesh does not fit"))
    False
    """
    text = str(error).lower()
    return "lockfile" in text and "libtpu" in text


@contextlib.contextmanager
def shared_libtpu() -> Iterator[bool]:
    """Within it, ``ALLOW_MULTIPLE_LIBTPU_LOAD=1`` unless the environment says otherwise; yields whether netsim set it.

    Examples
    --------
    >>> import os
    >>> saved = os.environ.pop("ALLOW_MULTIPLE_LIBTPU_LOAD", None)
    >>> with shared_libtpu() as set_here:
    ...     set_here, os.environ["ALLOW_MULTIPLE_LIBTPU_LOAD"]
    (True, '1')
    >>> "ALLOW_MULTIPLE_LIBTPU_LOAD" in os.environ
    False
    >>> _ = saved is not None and os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", saved)
    """
    set_here = ALLOW_VARIABLE not in os.environ
    if set_here:
        os.environ[ALLOW_VARIABLE] = "1"
    try:
        yield set_here
    finally:
        if set_here:
            os.environ.pop(ALLOW_VARIABLE, None)


def _lock_message(error: BaseException, set_here: bool) -> str:
    said = next((line.strip() for line in str(error).splitlines() if "lockfile" in line.lower()), str(error).strip())
    said = said.split(" Run ", 1)[0].rstrip()  # libtpu's own advice (remove the lock) is not passed on
    allowed = f"with {ALLOW_VARIABLE}=1 (set by netsim for this compile)" if set_here else f"with {ALLOW_VARIABLE}={os.environ.get(ALLOW_VARIABLE)!r}"
    return (
        f"the TPU compiler did not run: another process holds libtpu's lock {LIBTPU_LOCKFILE} and libtpu refused to load beside it "
        f"{allowed} ({said}); wait until that process ends, or pass compiler='cpu' to compile with XLA's CPU compiler instead. "
        "Do not delete the lock file: the process holding it is still using libtpu"
    )


def tpu_compile(compile_fn: Callable[[], Any], compiler: str) -> tuple[Any, str]:
    """Run the ahead-of-time TPU compile ``compile_fn`` with libtpu shared; returns its result (None if it failed) and why not.

    Parameters
    ----------
    compile_fn : callable
        Does the compile (loading libtpu on its first call in the process).
    compiler : {"auto", "tpu"}
        ``tpu``: any failure raises; ``auto``: a failure other than the lock returns
        ``(None, reason)`` and warns, so that the caller compiles with XLA's CPU compiler
        and says why.

    Raises
    ------
    LibtpuLockError
        When libtpu refuses to load because another process holds its lock (whatever ``compiler``).
    ValueError
        When ``compiler="tpu"`` and the compile fails otherwise.

    Examples
    --------
    >>> tpu_compile(lambda: "compiled", "auto")
    ('compiled', '')
    >>> def held():
    ...     raise RuntimeError('Internal error when accessing libtpu multi-process lockfile. Run "$ sudo rm /tmp/libtpu_lockfile".')
    >>> tpu_compile(held, "auto")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    netsim.programs.hlo.libtpu.LibtpuLockError: the TPU compiler did not run: another process holds libtpu's lock /tmp/libtpu_lockfile ...
    """
    with shared_libtpu() as set_here:
        try:
            return compile_fn(), ""
        except Exception as error:  # libtpu's and JAX's own errors
            if is_lock_error(error):
                raise LibtpuLockError(_lock_message(error, set_here)) from None
            first = str(error).splitlines()[0][:200] if str(error) else type(error).__name__
            reason = f"the TPU compiler failed: {first}"
            if compiler == "tpu":
                raise ValueError(f"compiler='tpu': {reason}") from error
            warnings.warn(f"from_jax: {reason}; compiling with XLA's CPU compiler instead", RuntimeWarning, stacklevel=3)
            return None, reason


def _place(device: Any) -> tuple[tuple[int, ...], int, int]:
    return tuple(int(c) for c in device.coords), int(getattr(device, "core_on_chip", 0) or 0), int(getattr(device, "slice_index", 0) or 0)


def lay_devices(given: Any, devices: list[Any]) -> tuple[Any, str]:
    """The slice's TPU ``devices`` laid in the shape of the array of devices ``given`` (a mesh's ``devices``), and how.

    ``given`` of TPU devices keeps each where it is (matched by chip, core and slice); of
    other devices (CPU) it is laid as ``jax.make_mesh`` lays its shape on the TPU
    (``mesh_utils.create_device_mesh``), or in the TPU's enumeration order where that
    cannot lay it.

    Raises
    ------
    ValueError
        If ``given`` has another number of devices, or TPU devices that are not the slice's.
    """
    import numpy as np

    if given.size != len(devices):
        raise ValueError(f"the mesh has {given.size} devices; the slice has {len(devices)}")
    flat = list(given.flat)
    if all(getattr(d, "platform", "") == "tpu" and getattr(d, "coords", None) is not None for d in flat):
        by_place = {_place(d): d for d in devices}
        missing = [list(_place(d)[0]) for d in flat if _place(d) not in by_place]
        if missing or len({_place(d) for d in flat}) != len(flat):
            example = f"a device at {missing[0]}" if missing else "one place twice"
            raise ValueError(f"the mesh's TPU devices are not the slice's (e.g. {example}); build it from this topology's devices")
        laid = np.empty(len(flat), dtype=object)
        laid[:] = [by_place[_place(d)] for d in flat]
        return laid.reshape(given.shape), "the mesh's own TPU devices, in the order it gives them"
    from jax.experimental import mesh_utils

    try:
        return mesh_utils.create_device_mesh(given.shape, devices), "as jax.make_mesh lays the mesh's shape on the TPU (mesh_utils.create_device_mesh)"
    except (ValueError, NotImplementedError, AssertionError) as error:
        laid = np.empty(len(devices), dtype=object)
        laid[:] = list(devices)
        why = str(error).splitlines()[0][:120] if str(error) else type(error).__name__
        return laid.reshape(given.shape), f"in the TPU's enumeration order (jax.make_mesh cannot lay the shape: {why})"


def tpu_mesh(source: Any, devices: list[Any]) -> tuple[Any, str]:
    """The mesh ``source``'s axes make over the slice's TPU ``devices`` (:func:`lay_devices`), and how it was laid.

    Raises
    ------
    ValueError
        If the mesh's size is not the slice's, or its TPU devices are not the slice's.
    """
    from jax.sharding import Mesh

    axis_types = getattr(source, "axis_types", None)
    kwargs = {"axis_types": axis_types} if axis_types is not None else {}
    laid, how = lay_devices(source.devices, devices)
    return Mesh(laid, source.axis_names, **kwargs), how
