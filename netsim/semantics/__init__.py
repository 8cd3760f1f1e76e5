"""JAX's collective semantics: argument checks, output layouts and NumPy references.

This package is the only place that knows how ``jax.lax`` lays out the result of a
collective. Inputs are stacked ``[n_devices, ...]`` as :func:`jax.pmap` takes them,
and so are outputs. Two things live here, one module per collective:

* **Layouts** (:class:`AllGatherLayout`, :class:`ReduceScatterLayout`,
  :class:`AllReduceLayout`, :class:`AllToAllLayout`, :class:`PermuteLayout`) check
  a collective's arguments against the input (``check``), turn each device's input
  into the *blocks* an algorithm moves (``blocks``, or ``block_sizes`` for runs that
  carry sizes only), say which blocks a device must hold at the end (``wanted``)
  and where each goes in JAX's output (``output_shape`` and ``slot``). They are
  what the simulation uses.
* **References** (each layout's ``reference_rows`` and ``reference_parts``, and
  :func:`all_gather_reference`, :func:`psum_scatter_reference`,
  :func:`psum_reference`, :func:`all_to_all_reference`, :func:`ppermute_reference`)
  compute JAX's answer straight from the definition, with no blocks, pieces or
  schedules, so that a simulated output is checked against something that did not
  come from the same code. ``reference_parts`` gives a device's answer a region of
  its output at a time (views of the input for gathers, sums of bounded slices for
  reductions), so that checking a big output needs no memory for a whole row.

Modules
-------
============== =====================================================================
``ops``        the op registry: every collective and compute op declared once
               (:data:`~netsim.semantics.ops.COLLECTIVES`, ``COMPUTE_OPS``); the
               rest of netsim derives its op lists, file fields, HLO mapping, bus
               bandwidth and dispatch from it
``groups``     ``axis_index_groups`` (:func:`normalize_groups`) and what every layout
               shares (the ``_Layout`` interface, axis and input checks)
``sharding``   what every collective's rule on arrays sharded over mesh axes
               shares (:class:`~netsim.semantics.sharding.ShardingError`)
``gather``     all_gather: :class:`AllGatherLayout`, :func:`all_gather_reference`,
               its sharding rules
``reduce``     psum_scatter and psum: :class:`ReduceScatterLayout`,
               :class:`AllReduceLayout`, their references, sharding rules and the
               group sums
``all_to_all`` all_to_all: :class:`AllToAllLayout`, :func:`all_to_all_reference`,
               its sharding rules
``permute``    ppermute: :func:`normalize_perm`, :class:`PermuteLayout`,
               :func:`ppermute_reference`, its sharding rules
``chunks``     what travels and what comes out when data is too big or not wanted:
               :class:`SizeOnly`, :func:`shape_only`, :class:`LazyOutput`,
               :func:`bounded_slices`
``patterns``   what each pattern of blocks does, as data (its phases, whether it
               reduces, whose block is whose): :data:`~netsim.semantics.patterns.PATTERNS`
============== =====================================================================

Where a change goes
-------------------
A fix to how JAX lays out one collective goes in that collective's module, with a
doctest beside it. A new collective is a new module: a frozen dataclass deriving
from ``groups._Layout`` with ``check``, ``output_shape``, ``blocks``,
``block_sizes``, ``slot``, ``reference_rows`` (and ``wanted`` or
``reference_parts`` when the defaults do not fit), a ``*_reference`` function and
its ``*_sharded`` and ``*_grouped`` rules; its pattern's entry in
:data:`netsim.semantics.patterns.PATTERNS` if it plays a new one; and one entry in
:data:`netsim.semantics.ops.COLLECTIVES` that names them and says the rest (its
arguments, program-file fields, HLO opcodes, bus bandwidth factor, default
algorithm, closed-form key). Code inside netsim imports from the defining module,
not from this package.

Examples
--------
>>> import numpy as np
>>> from netsim.semantics import AllGatherLayout, psum_reference
>>> psum_reference(np.arange(4), axis_index_groups=[[0, 1], [2, 3]])
array([1, 1, 5, 5])
>>> AllGatherLayout.check(np.zeros((4, 3)), axis=0, tiled=True, axis_index_groups=None).output_shape
(12,)
"""

from netsim.semantics.all_to_all import AllToAllLayout, all_to_all_reference
from netsim.semantics.chunks import SLICE_ELEMENTS, LazyOutput, SizeOnly, bounded_slices, shape_only
from netsim.semantics.gather import AllGatherLayout, all_gather_reference
from netsim.semantics.groups import Groups, normalize_groups
from netsim.semantics.permute import PermuteLayout, normalize_perm, ppermute_reference
from netsim.semantics.reduce import AllReduceLayout, ReduceScatterLayout, psum_reference, psum_scatter_reference

__all__ = [
    "SLICE_ELEMENTS",
    "AllGatherLayout",
    "AllReduceLayout",
    "AllToAllLayout",
    "Groups",
    "LazyOutput",
    "PermuteLayout",
    "ReduceScatterLayout",
    "SizeOnly",
    "all_gather_reference",
    "all_to_all_reference",
    "bounded_slices",
    "normalize_groups",
    "normalize_perm",
    "ppermute_reference",
    "psum_reference",
    "psum_scatter_reference",
    "shape_only",
]
