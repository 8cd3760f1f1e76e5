"""Closed-form costs of collectives, in the α–β form, and the scaling book's estimates.

Every closed form splits a collective's time into a **latency term** (the per-hop
latencies α it pays one after another) and a **bandwidth term** (bytes over link
bandwidth). Which term is larger is the *regime* (latency-bound or bandwidth-bound);
the per-device payload at which they are equal is the *crossover*. Both terms are
linear in what they count, so the crossover is the payload times latency/bandwidth.

Notation (as in docs/cost_models.md): a group of ``n`` devices, ``s`` bytes per
block, ``α`` the per-hop latency, ``B`` the one-way bandwidth of one link direction,
``W_ici = 2B`` the scaling book's bidirectional bandwidth of one axis, ``V`` the bytes of
the whole collective (the gathered array for all_gather, one device's full input for a
reduction, the bytes over all devices for all_to_all).

Sources
    * J. Austin et al., *How to Scale Your Model* ("the scaling book"),
      jax-ml.github.io/scaling-book, chapters on TPUs and sharded matmuls: W_ici, the
      one- and multi-axis all_gather, reduce-scatter, all-reduce and all-to-all estimates.
    * R. Thakur, R. Rabenseifner, W. Gropp, "Optimization of Collective Communication
      Operations in MPICH", IJHPCA 19(1), 2005: the α–β costs of ring, recursive
      doubling / halving and Rabenseifner's algorithm (with γ = 0: reductions are free).
    * NVIDIA nccl-tests, doc/PERFORMANCE.md: algbw, busbw and the (n−1)/n factors.

Each family's modules hold pure functions, one closed form each, returning an
:class:`AlphaBeta`. :data:`COST_MODELS` (built in ``catalogue``) lists them keyed by
(collective, algorithm, topology), each with the layouts on which it is *exact* (equal to
the simulated time) and a *lower bound* for the others; a run looks up its own with
:func:`lookup`, and :func:`estimate_collective` applies it to a group layout on a grid
without building any graph, so it is instant even for a 4096-chip pod. Every estimate
carries its ``kind`` (``exact``, ``lower_bound``, ``upper_bound``, ``none``). This one
registry serves ``netsim run``, ``estimate``, ``explain`` and sweeps. Nothing here
simulates; docs/cost_models.md says which form is exact where, and why.

Modules
-------
==================  ===================================================================
``terms``           :class:`AlphaBeta` (the two terms), :class:`Estimate` (a closed
                    form applied to a run, with its kind), the collectives' names
``rings``           unidirectional, bidirectional and half-way rings; rings and the
                    line algorithm on a line
``doubling``        recursive doubling and halving, Rabenseifner's all-reduce
``direct``          direct all_gather and all_to_all, all_to_all one axis at a time
``torus``           several torus axes: all at once, bundled, one after the other
``point_to_point``  one message over several links (ppermute)
``book``            the scaling book's estimates, labelled with its worked examples
``multislice``      across slices: over the DCN alone, hierarchical, the flat ring
``bounds``          lower bounds for any schedule: chains of transfers, bytes in
``geometry``        where a group lies on the grid (:class:`Geometry`)
``model``           :class:`CostModel`: a form, where it is exact, its lower bound
``catalogue``       :data:`COST_MODELS`: every form netsim knows
``registry``        :func:`lookup`, :func:`estimate`, :func:`estimate_collective`
==================  ===================================================================

Where a change goes
-------------------
A new closed form: a function ``(n or dims, s, alpha, B) -> AlphaBeta`` in the module of
its family (a new module for a new family), with its source and a doctest; then one
:class:`CostModel` line in ``catalogue`` saying on which layouts it is exact (derived from
the algorithm's schedule, never fitted) and which chain bounds it elsewhere. The
generated layouts of tests/test_estimate_kinds.py then check the promise. Modules import
their siblings directly, never this package.

Examples
--------
>>> from netsim.analysis.closed_forms import Geometry, estimate
>>> e = estimate("all_gather", "ring", Geometry((8,), (True,)), 262144, 1e-6, 45e9)
>>> round(e.latency_s * 1e6, 9), round(e.bandwidth_s * 1e6, 6), e.regime
(7.0, 40.777956, 'bandwidth-bound')
"""

from netsim.analysis.closed_forms.book import book_all_gather, book_all_reduce, book_all_to_all, book_estimate
from netsim.analysis.closed_forms.direct import dimension_ordered_all_to_all, direct_all_gather, direct_all_to_all
from netsim.analysis.closed_forms.doubling import (
    rabenseifner_all_reduce,
    recursive_doubling_all_gather,
    recursive_doubling_all_reduce,
    recursive_halving_reduce_scatter,
)
from netsim.analysis.closed_forms.geometry import Geometry, group_geometry, hops_between
from netsim.analysis.closed_forms.point_to_point import point_to_point
from netsim.analysis.closed_forms.registry import COST_MODELS, CollectiveEstimate, CostModel, estimate, estimate_collective, lookup
from netsim.analysis.closed_forms.rings import bidirectional_halfway, bidirectional_ring, ring
from netsim.analysis.closed_forms.terms import AlphaBeta, Estimate, canonical_collective
from netsim.analysis.closed_forms.torus import dimension_ordered, multiaxis, multiaxis_bundled

__all__ = [
    "COST_MODELS",
    "AlphaBeta",
    "CollectiveEstimate",
    "CostModel",
    "Estimate",
    "Geometry",
    "bidirectional_halfway",
    "bidirectional_ring",
    "book_all_gather",
    "book_all_reduce",
    "book_all_to_all",
    "book_estimate",
    "canonical_collective",
    "dimension_ordered",
    "dimension_ordered_all_to_all",
    "direct_all_gather",
    "direct_all_to_all",
    "estimate",
    "estimate_collective",
    "group_geometry",
    "hops_between",
    "lookup",
    "multiaxis",
    "multiaxis_bundled",
    "point_to_point",
    "rabenseifner_all_reduce",
    "recursive_doubling_all_gather",
    "recursive_doubling_all_reduce",
    "recursive_halving_reduce_scatter",
    "ring",
]
