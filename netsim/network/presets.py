"""TPU slices by name: ``tpu-v5e:8x16``, ``tpu-v4:4x4x4``, ``tpu-v4:16x16x16``.

A name is a generation and the slice's shape. The generation fixes how many axes
the torus has, the link bandwidth, the hop latency and which axes close into rings
(wraparound); the shape fixes the size of each axis. The numbers, and where they
come from:

============  ====  ==============================  ============================  ==========
generation    axes  one-way bandwidth per link      wraparound                    largest
                    direction (scaling book)                                      pod
============  ====  ==============================  ============================  ==========
``tpu-v4``    3     45 GB/s                         every axis, when every axis   16x16x16
                                                    is a multiple of 4 (whole
                                                    4x4x4 cubes); none otherwise
``tpu-v5p``   3     90 GB/s                         as v4                         16x20x28
``tpu-v5e``   2     45 GB/s                         only on an axis of size 16    16x16
``tpu-v6e``   2     90 GB/s                         only on an axis of size 16    16x16
``tpu-v3``    2     100 GB/s                        only on an axis of size 32    32x32
``tpu-v2``    2     60 GB/s (the book's profiling   only on an axis of size 16    16x16
                    example: 1.2e11 B/s bidi)
``tpu7x``     3     90 GB/s per chip-to-chip link,  as v4                         9216 chips
                    45 GB/s per core's lane
                    (assumed even split, below)
============  ====  ==============================  ============================  ==========

The book states the wraparound rule for v4/v5p and v5e/v6e only; for v2 and v3 netsim
assumes v5e's (an axis wraps when it spans the pod's whole axis).

TPU7x (Ironwood): each chip holds two TensorCores and the compiler sees each as a
device, so a ``tpu7x:4x4x4`` slice is 64 chips and 128 devices, laid out as
:mod:`netsim.network.chiplets` describes (device ``d`` is core ``d % 2`` of chip
``d // 2``; coordinates ``(x, y, z, core)``). Cited: 3D torus of 4x4x4 cubes joined by
optical links, wrapping as v4/v5p (the Cloud TPU7x page: "shares many similarities
with TPU v5p"); 90 GB/s one way per chip-to-chip link (the scaling book's live
interconnect table); 1.2 TB/s bidirectional ICI per chip (Google's Ironwood
announcement, April 2025), which six links of 2 x 90 GB/s match; 9216 chips per pod
(the Cloud TPU7x page). Assumed, and said so wherever they are used:

- *the lanes*: a chip-to-chip link is shared evenly by the chip's two devices, one
  lane of 45 GB/s each way per core, so a chip still has six links of 90 GB/s and its
  cited per-chip total. How the two cores share the chip's links is not published.
- *the on-chip link* between the two devices: 90 GB/s one way and 1 us, the figures
  of one chip-to-chip link (:data:`TPU7X_CHIP_LINK_BANDWIDTH_BPS`,
  :data:`TPU7X_CHIP_LINK_LATENCY_S`). No public figure was found for this
  die-to-die link; a topology file sets its own with ``chip_link``.

Every generation: about 1 us per hop. Sources: the scaling book's TPU chapter
(jax-ml.github.io/scaling-book/tpus) for the bandwidths, hop latency and
wraparound rules, and the Google Cloud TPU pages of each generation for the pod
sizes. Where the Cloud docs
quote a higher per-port figure (v5e: 400 GB/s per chip over 4 ports, i.e. 50 GB/s
one way per port; v5p: 100 GB/s per port) we take the book's number.

On v4 and v5p the wraparound links come from the optical switches that join
whole 4x4x4 cubes; a slice smaller than a cube (2x2x4, 2x4x4) has no wraparound
on any axis, even on an axis of 4 (the book's TPU chapter). So "an axis that is
a multiple of 4 wraps" holds for the slices made of whole cubes, and only those.

Every chip of a slice also carries its compute facts (:meth:`Topology.device
<netsim.network.topology.Topology.device>`), per chip, from the scaling book's TPU
chapter, table "TPU specs" (jax-ml.github.io/scaling-book/tpus):

============  ===============  ==============  ============
generation    bf16 peak        HBM bandwidth   HBM capacity
============  ===============  ==============  ============
``tpu-v4``    2.75e14 FLOP/s   1.2e12 B/s      32 GiB
``tpu-v5p``   4.59e14 FLOP/s   2.8e12 B/s      96 GiB
``tpu-v5e``   1.97e14 FLOP/s   8.1e11 B/s      16 GiB
``tpu-v6e``   9.20e14 FLOP/s   1.6e12 B/s      32 GiB
``tpu7x``     2.307e15 FLOP/s  7.37e12 B/s     192 GiB
============  ===============  ==============  ============

The book and the Cloud TPU pages write the capacities in "GB"; they are GiB (2**30
bytes), as HBM stacks come: the TPU compiler (libtpu 0.0.42.1, compiling ahead of
time a program too big for one chip) reports the HBM it can allocate as 30.75 GiB on
v4, 95.74 GiB on v5p, 15.75 GiB on v5e and 31.25 GiB on v6e (its "available HBM
(15.75G)", with 32 GiB of temporaries written "32.00G"): each more than 32, 96, 16
and 32 x 10**9 bytes (:data:`HBM_OFFERED_GIB`; ``scripts/tpu_hbm_available.py`` asks it again). The Cloud TPU
pages ("TPU v5e", "TPU v6e") agree with the book on v5e's peak and capacity
(197 TFLOPs, 16 GB) but give 819 GBps for its HBM; for v6e they give 918 TFLOPs,
32 GB and 1600 to 1640 GBps (depending on the page's version). We take the
book's figures throughout, except for TPU7x, which is not in the book's table: its
bf16 peak (2307 TFLOP/s per chip; 4614 TFLOP/s in fp8) and HBM capacity (192 GiB,
the table's unit; the announcement writes 192 GB) are the Cloud TPU7x page's, its HBM
bandwidth (7.37 TB/s) Google's Ironwood announcement. A TPU7x *device* is half a chip:
it carries half of each figure (1.1535e15 FLOP/s, 3.685e12 B/s, 96 GiB), taking the two
TensorCores, with their own HBM stacks, as equal halves (an assumption).
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from netsim.network.calibration import CALIBRATIONS, NOMINAL
from netsim.network.chiplets import chip_torus
from netsim.network.dcn import DCN
from netsim.network.slices import multislice, split_slices_name
from netsim.network.topology import Topology, torus

__all__ = [
    "GENERATIONS",
    "HBM_OFFERED_GIB",
    "TPU7X_CHIP_LINK_BANDWIDTH_BPS",
    "TPU7X_CHIP_LINK_LATENCY_S",
    "Generation",
    "SliceShapeWarning",
    "is_slice_name",
    "meant_slice",
    "mxu_tile",
    "offered_shapes",
    "parse_slice",
    "slice_hint",
    "tpu_slice",
]

TPU7X_CHIP_LINK_BANDWIDTH_BPS = 90e9
"""ASSUMED, not cited: one-way bandwidth of the link between a TPU7x chip's two devices.

No public figure was found; netsim takes one chip-to-chip link's (the scaling book's
90 GB/s). Set ``chip_link: {bandwidth: ...}`` in a topology file to use another."""
TPU7X_CHIP_LINK_LATENCY_S = 1e-6
"""ASSUMED, not cited: per-hop latency of that on-chip link (one chip-to-chip hop's, ~1 us)."""


def _whole_cubes(dims: tuple[int, ...]) -> tuple[bool, ...]:
    return (all(d % 4 == 0 for d in dims),) * len(dims)


def _sixteen(dims: tuple[int, ...]) -> tuple[bool, ...]:
    return tuple(d == 16 for d in dims)


def _thirty_two(dims: tuple[int, ...]) -> tuple[bool, ...]:
    return tuple(d == 32 for d in dims)


@dataclass(frozen=True)
class Generation:
    """One TPU generation's interconnect.

    Attributes
    ----------
    name : str
        E.g. ``"tpu-v5e"``.
    n_axes : int
        2 (a 2D torus) or 3 (a 3D torus).
    bandwidth_Bps : float
        One-way bandwidth of one link direction, bytes per second.
    latency_s : float
        Per-hop latency, seconds.
    max_chips : int
        Chips in the largest pod; no slice is bigger.
    max_axis : int or None
        Largest size of one axis, if the generation limits it.
    rule : str
        The wraparound rule in words.
    wraps : callable
        ``f(dims)`` -> one wraparound flag per axis.
    peak_flops : float or None
        One chip's peak bf16 compute, FLOP/s (None: unknown).
    hbm_bandwidth_Bps : float or None
        One chip's HBM bandwidth, bytes per second (None: unknown).
    hbm_capacity_bytes : int or None
        One chip's HBM capacity, bytes (None: unknown).
    devices_per_chip : int
        1, or 2 where the compiler sees each of a chip's two TensorCores as a device
        (TPU7x); then the compute facts are one device's (half a chip's), and
        ``bandwidth_Bps`` is one core's lane (:mod:`netsim.network.chiplets`).
    chip_link_bandwidth_Bps, chip_link_latency_s : float or None
        The link between the two devices of a chip, when there are two.
    mxu_tile : int or None
        The side of the chip's matrix units (MXU), in elements: a matmul's contracting and
        output-feature dims are padded to it (None: unknown, no padding).
    """

    name: str
    n_axes: int
    bandwidth_Bps: float
    latency_s: float
    max_chips: int
    max_axis: int | None
    rule: str
    wraps: Callable[[tuple[int, ...]], tuple[bool, ...]]
    peak_flops: float | None
    hbm_bandwidth_Bps: float | None
    hbm_capacity_bytes: int | None
    devices_per_chip: int = 1
    chip_link_bandwidth_Bps: float | None = None
    chip_link_latency_s: float | None = None
    mxu_tile: int | None = None

    @property
    def device(self) -> dict[str, float | int]:
        """One chip's compute facts, keyed as :data:`~netsim.network.chips.DEVICE_FIELDS`.

        Examples
        --------
        >>> GENERATIONS["tpu-v5e"].device
        {'peak_flops': 197000000000000.0, 'hbm_bandwidth_Bps': 810000000000.0, 'hbm_capacity_bytes': 17179869184}
        """
        return {"peak_flops": self.peak_flops, "hbm_bandwidth_Bps": self.hbm_bandwidth_Bps, "hbm_capacity_bytes": self.hbm_capacity_bytes}


_CUBES = "every axis wraps when all axes are multiples of 4 (whole 4x4x4 cubes); otherwise none does"
_SIXTEEN = "an axis wraps only when it has 16 chips"
_THIRTY_TWO = "an axis wraps only when it has 32 chips (the whole pod's axis)"

# MXU side (mxu_tile): the Cloud TPU system architecture page (docs.cloud.google.com/tpu/docs/
# system-architecture-tpu-vm, "TensorCores"): "An MXU is composed of either 256 x 256 (TPU v6e)
# or 128 x 128 (TPU versions prior to v6e) multiply-accumulators in a systolic array".
# TPU7x: ASSUMED as v6e's, 256 (no public figure found).
MXU_128, MXU_256 = 128, 256

HBM_OFFERED_GIB = {"tpu-v4": 30.75, "tpu-v5p": 95.74, "tpu-v5e": 15.75, "tpu-v6e": 31.25}
"""The HBM (GiB) the TPU compiler, libtpu 0.0.42.1, can allocate on one chip of each generation: its "available
HBM" when a program does not fit (``scripts/tpu_hbm_available.py`` asks it). Each is more than the spec tables'
figure read as 10**9 bytes: the capacities below are GiB."""

# Chip figures (the last three numbers of each generation): the scaling book's TPU chapter
# (jax-ml.github.io/scaling-book/tpus), table "TPU specs", per chip: bf16 FLOP/s, HBM bandwidth
# in bytes/s, HBM capacity in GiB (the book's "GB": libtpu's own figures are GiB, see the module's docstring).
GENERATIONS: dict[str, Generation] = {
    # scaling book, TPU chapter: v4 ICI 4.5e10 B/s one way per link direction; 3D torus;
    # pod 16x16x16 = 4096 chips (Cloud TPU v4 docs); ~1 us per hop (the book).
    # Chip (book, "TPU specs", v4p): 2.75e14 bf16 FLOP/s, 1.2e12 B/s HBM, 32 GB HBM.
    "tpu-v4": Generation("tpu-v4", 3, 45e9, 1e-6, 4096, None, _CUBES, _whole_cubes, 2.75e14, 1.2e12, 32 * 2**30, mxu_tile=MXU_128),
    # scaling book: v5p 9e10 B/s one way (the Cloud docs' 1200 GB/s per chip suggests 100 GB/s
    # per port; we take the book's); 3D torus; pod 16x20x28 = 8960 chips (Cloud TPU v5p docs).
    # Chip (book, "TPU specs"): 4.59e14 bf16 FLOP/s, 2.8e12 B/s HBM, 96 GB HBM.
    "tpu-v5p": Generation("tpu-v5p", 3, 90e9, 1e-6, 8960, None, _CUBES, _whole_cubes, 4.59e14, 2.8e12, 96 * 2**30, mxu_tile=MXU_128),
    # scaling book: v5e 4.5e10 B/s one way (Cloud docs: 400 GB/s per chip over 4 ports = 50 GB/s
    # one way per port; we take the book's); 2D torus, wraparound only on an axis of 16; pod 16x16.
    # Chip (book, "TPU specs"): 1.97e14 bf16 FLOP/s, 8.1e11 B/s HBM, 16 GB HBM (the Cloud TPU v5e
    # page: 197 TFLOPs bf16, "16 GB, 819 GBps"; we take the book's 8.1e11).
    "tpu-v5e": Generation("tpu-v5e", 2, 45e9, 1e-6, 256, 16, _SIXTEEN, _sixteen, 1.97e14, 8.1e11, 16 * 2**30, mxu_tile=MXU_128),
    # scaling book: v6e (Trillium) 9e10 B/s one way (Cloud docs: 800 GB/s per chip, 4 ports);
    # 2D torus, wraparound only on an axis of 16; pod 16x16.
    # Chip (book, "TPU specs"): 9.20e14 bf16 FLOP/s, 1.6e12 B/s HBM, 32 GB HBM (the Cloud TPU v6e
    # page: 918 TFLOPs bf16, 32 GB, 1600-1640 GBps; we take the book's).
    "tpu-v6e": Generation("tpu-v6e", 2, 90e9, 1e-6, 256, 16, _SIXTEEN, _sixteen, 9.20e14, 1.6e12, 32 * 2**30, mxu_tile=MXU_256),
    # scaling book, TPU chapter, interconnect table: v3 1e11 B/s one way per link (2e11 bidi);
    # 2D torus; pod 32x32 = 1024 chips (the book's "TPU specs" table). The book gives the
    # wraparound rule only for v4/v5p and v5e/v6e; we take v5e's: an axis wraps only when it
    # spans the pod's whole axis (32). Chip ("TPU specs", v3): 1.4e14 bf16 FLOP/s, 9.0e11 B/s
    # HBM, 32 GB HBM.
    "tpu-v3": Generation("tpu-v3", 2, 100e9, 1e-6, 1024, 32, _THIRTY_TWO, _thirty_two, 1.4e14, 9.0e11, 32 * 2**30, mxu_tile=MXU_128),
    # v2: the scaling book's profiling chapter times its example on one v2 link at 1.2e11 B/s
    # bidirectional, 6e10 one way; 2D torus, pod 16x16 = 256 chips (Cloud TPU v2 docs); wraparound
    # as v5e's (an axis of 16), by the same assumption as v3. The book gives no v2 chip figures,
    # so compute, HBM bandwidth and capacity are unknown (None): runs that need them say so.
    "tpu-v2": Generation("tpu-v2", 2, 60e9, 1e-6, 256, 16, _SIXTEEN, _sixteen, None, None, None, mxu_tile=MXU_128),
    # TPU7x (Ironwood), two devices per chip. Cited: 3D torus of 4x4x4 cubes with optical links,
    # wrapping as v4/v5p; 90 GB/s one way per chip-to-chip link (the scaling book's live
    # interconnect table); 9216 chips per pod, 2307 TFLOP/s bf16 and 192 GiB HBM per chip (Cloud
    # TPU7x page, docs.cloud.google.com/tpu/docs/tpu7x); 7.37 TB/s HBM per chip (Google's Ironwood
    # announcement, April 2025). Derived: a device is half a chip (1.1535e15 FLOP/s, 3.685e12 B/s,
    # 96 GiB). ASSUMED: each core has its own lane of half a link (45 GB/s); the on-chip link
    # between the two devices is as fast as one chip-to-chip link (90 GB/s, 1 us).
    "tpu7x": Generation(
        "tpu7x",
        3,
        45e9,
        1e-6,
        9216,
        None,
        _CUBES,
        _whole_cubes,
        2307e12 / 2,
        7.37e12 / 2,
        192 * 2**30 // 2,
        devices_per_chip=2,
        chip_link_bandwidth_Bps=TPU7X_CHIP_LINK_BANDWIDTH_BPS,
        chip_link_latency_s=TPU7X_CHIP_LINK_LATENCY_S,
        mxu_tile=MXU_256,
    ),
}
"""The known TPU generations, by the name used before the colon."""

_SHAPE = re.compile(r"[1-9][0-9]*(x[1-9][0-9]*)*")

# The slice shapes each generation offers. v5e and v6e: the Cloud TPU pages "TPU v5e" and "TPU v6e",
# tables of supported 2D slice shapes (1x1 to 16x16). v4, v5p, TPU7x: slices of whole 4x4x4 cubes
# (every axis a multiple of 4) and the small ones the Cloud TPU v4/v5p/TPU7x pages list (2x2x1,
# 2x2x2, 2x2x4, 2x4x4). Either way round (a 4x8 is an 8x4 turned). v2 and v3: no list is read.
_SMALL_CUBES = ((1, 2, 2), (2, 2, 2), (2, 2, 4), (2, 4, 4))
_OFFERED_2D = ((1, 1), (2, 2), (2, 4), (4, 4), (4, 8), (8, 8), (8, 16), (16, 16))
_OFFERED = {"tpu-v5e": _OFFERED_2D, "tpu-v6e": _OFFERED_2D, "tpu-v4": _SMALL_CUBES, "tpu-v5p": _SMALL_CUBES, "tpu7x": _SMALL_CUBES}


class SliceShapeWarning(UserWarning):
    """A slice shape no TPU of its generation comes in (:func:`offered_shapes`): simulated as written."""


def offered_shapes(generation: str, dims: tuple[int, ...]) -> str | None:
    """The shapes a generation offers, in words, when ``dims`` is not one of them; None when it is (or no list is known).

    Examples
    --------
    >>> offered_shapes("tpu-v5e", (3, 5))
    'tpu-v5e comes in 1x1, 2x2, 2x4, 4x4, 4x8, 8x8, 8x16, 16x16 (either way round)'
    >>> offered_shapes("tpu-v4", (4, 4, 5))
    'tpu-v4 comes in 2x2x1, 2x2x2, 2x2x4, 2x4x4 and shapes whose axes are all multiples of 4 (in any order)'
    >>> offered_shapes("tpu-v5e", (8, 4)), offered_shapes("tpu-v4", (4, 8, 4)), offered_shapes("tpu-v3", (3, 5))
    (None, None, None)
    """
    listed = _OFFERED.get(generation)
    if listed is None or tuple(sorted(dims)) in listed:
        return None
    if len(dims) == 2:
        return f"{generation} comes in {', '.join('x'.join(map(str, s)) for s in listed)} (either way round)"
    if all(d % 4 == 0 for d in dims):
        return None
    small = ", ".join("x".join(map(str, sorted(s, reverse=s[0] == 1))) for s in listed)
    return f"{generation} comes in {small} and shapes whose axes are all multiples of 4 (in any order)"


def is_slice_name(name: str) -> bool:
    """Whether a topology name is meant as a slice (``GENERATION:SHAPE``) rather than a file.

    Examples
    --------
    >>> is_slice_name("tpu-v5e:8x16"), is_slice_name("torus4x4"), is_slice_name("tpu-v9:2x2")
    (True, False, True)
    """
    head, colon, _ = name.partition(":")
    return bool(colon) and "/" not in head and "\\" not in head


def _generation_key(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower()).removeprefix("tpu")


def meant_slice(name: str) -> str | None:
    """The TPU slice a misspelt name most likely means, or None.

    libtpu's ``v5e:4x4``, ``tpuv5e``, ``TPU-v5e``, a dash for the colon (``tpu-v5e-2x4``)
    and ``x2slice`` for ``x2slices`` are read; the shape itself is left to be checked.

    Examples
    --------
    >>> [meant_slice(n) for n in ("v5e:4x4", "TPU-v5e:4x4", "tpuv5e:4x4", "tpu-v5e-2x4", "tpu-v5e:4x4x2slice", "torus4x4", "tpu-v5e:4x4")]
    ['tpu-v5e:4x4', 'tpu-v5e:4x4', 'tpu-v5e:4x4', 'tpu-v5e:2x4', 'tpu-v5e:4x4x2slices', None, None]
    """
    if not isinstance(name, str):
        return None
    found = re.fullmatch(r"\s*([A-Za-z][A-Za-z0-9_ -]*?)[:\-_ ]?([1-9][0-9]*(?:x[1-9][0-9]*)*)(x[1-9][0-9]*[ _-]?slices?)?\s*", name)
    if found is None:
        return None
    by_key = {_generation_key(g): g for g in GENERATIONS}
    generation = by_key.get(_generation_key(found.group(1)))
    if generation is None:
        return None
    several = re.sub(r"[ _-]", "", found.group(3) or "")
    meant = f"{generation}:{found.group(2)}{several + 's' if several and not several.endswith('s') else several}"
    return None if meant == name else meant


def slice_hint(name: str) -> str:
    """``"; did you mean tpu-v5e:2x4?"`` for a misspelt slice name (:func:`meant_slice`), else ``""``."""
    meant = meant_slice(name)
    return f"; did you mean {meant}?" if meant else ""


def parse_slice(name: str) -> tuple[Generation, tuple[int, ...]]:
    """Split a slice name into its generation and its shape, checking both.

    Raises
    ------
    ValueError
        If the generation is unknown, the shape is malformed, has the wrong
        number of axes, or is larger than the generation's pod.

    Examples
    --------
    >>> generation, dims = parse_slice("tpu-v5e:8x16")
    >>> generation.bandwidth_Bps, dims
    (45000000000.0, (8, 16))
    >>> parse_slice("tpu-v5e:4x4x4")
    Traceback (most recent call last):
    ...
    ValueError: tpu-v5e is a 2D torus: 'tpu-v5e:4x4x4' gives 3 axes; write e.g. tpu-v5e:4x4
    """
    gen_name, _, shape = name.partition(":")
    generation = GENERATIONS.get(gen_name)
    if generation is None:
        raise ValueError(f"unknown TPU generation {gen_name!r} in {name!r}{slice_hint(name)}; known: {', '.join(GENERATIONS)} (write e.g. tpu-v5e:8x16)")
    example = "x".join(["4"] * generation.n_axes)
    if not _SHAPE.fullmatch(shape):
        raise ValueError(f"cannot read the slice shape {shape!r} in {name!r}{slice_hint(name)}; write the axis sizes joined by 'x', e.g. {gen_name}:{example}")
    dims = tuple(int(d) for d in shape.split("x"))
    if len(dims) != generation.n_axes:
        raise ValueError(f"{gen_name} is a {generation.n_axes}D torus: {name!r} gives {len(dims)} axes; write e.g. {gen_name}:{example}")
    if generation.max_axis is not None and max(dims) > generation.max_axis:
        raise ValueError(f"{name!r}: a {gen_name} axis has at most {generation.max_axis} chips, got {max(dims)}")
    if math.prod(dims) > generation.max_chips:
        raise ValueError(f"{name!r} has {math.prod(dims)} chips; the largest {gen_name} pod has {generation.max_chips}")
    offered = offered_shapes(gen_name, dims)
    if offered is not None:
        warnings.warn(f"{name!r} is a shape no TPU comes in, simulated as written: {offered}", SliceShapeWarning, stacklevel=1)  # one place: once per name
    return generation, dims


def mxu_tile(topology: Topology) -> int | None:
    """The side of the matrix units of a TPU slice's chips (:attr:`Generation.mxu_tile`), None for other topologies.

    Examples
    --------
    >>> mxu_tile(tpu_slice("tpu-v5e:2x2")), mxu_tile(tpu_slice("tpu-v6e:2x2"))
    (128, 256)
    """
    return topology.graph.graph.get("mxu_tile")


def tpu_slice(name: str) -> Topology:
    """The torus of a named TPU slice, e.g. ``tpu-v5e:8x16``.

    Parameters
    ----------
    name : str
        ``GENERATION:SHAPE``, the generation one of :data:`GENERATIONS` and the
        shape the axis sizes joined by ``x``.

    Returns
    -------
    Topology
        Named as given, with the generation's links and wraparound, and its
        chip's compute facts on every device. On a generation with two devices per
        chip (``tpu7x``) the shape counts chips and the topology has one more axis,
        the device's place on its chip (:func:`~netsim.network.chiplets.chip_torus`).

    Raises
    ------
    ValueError
        As :func:`parse_slice`.

    Examples
    --------
    >>> t = tpu_slice("tpu-v5e:8x16")
    >>> t.dims, t.wraparound, t.name
    ((8, 16), (False, True), 'tpu-v5e:8x16')
    >>> tpu_slice("tpu-v4:4x4x8").wraparound, tpu_slice("tpu-v4:2x2x4").wraparound
    ((True, True, True), (False, False, False))
    >>> tpu_slice("tpu-v5e:4x4").device(0)["peak_flops"]
    197000000000000.0
    >>> ironwood = tpu_slice("tpu7x:4x4x4")
    >>> ironwood.n_devices, ironwood.dims, ironwood.wraparound
    (128, (4, 4, 4, 2), (True, True, True, False))
    >>> tpu_slice("tpu-v5e:4x4x2slices").n_slices  # two slices joined by the DCN (netsim.network.slices)
    2
    >>> tpu_slice("tpu-v9:4x4")
    Traceback (most recent call last):
    ...
    ValueError: unknown TPU generation 'tpu-v9' in 'tpu-v9:4x4'; known: tpu-v4, tpu-v5p, tpu-v5e, tpu-v6e, tpu-v3, tpu-v2, tpu7x (write e.g. tpu-v5e:8x16)
    """
    several = split_slices_name(name)
    if several is not None:  # several slices joined by the DCN (netsim.network.slices)
        one, n_slices = several
        figures = DCN.get(one.partition(":")[0])
        if figures is None:
            raise ValueError(f"{name!r}: slices join over the DCN from tpu-v4 on ({', '.join(DCN)}); write e.g. tpu-v5e:4x4x2slices")
        return multislice(tpu_slice(one), n_slices, figures=figures, name=name)
    generation, dims = parse_slice(name)
    topology = _links(generation, dims, name)
    topology.graph.graph["calibration_offered"] = CALIBRATIONS.get(generation.name, NOMINAL)  # applied only when a run asks
    topology.graph.graph["mxu_tile"] = generation.mxu_tile
    return topology


def _links(generation: Generation, dims: tuple[int, ...], name: str) -> Topology:
    if generation.devices_per_chip == 2:
        return chip_torus(
            dims,
            generation.wraps(dims),
            generation.bandwidth_Bps,
            generation.chip_link_bandwidth_Bps,
            generation.latency_s,
            generation.chip_link_latency_s,
            name=name,
            device=generation.device,
        )
    return torus(dims, generation.wraps(dims), generation.bandwidth_Bps, generation.latency_s, name=name, device=generation.device)
