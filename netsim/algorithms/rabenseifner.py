"""``rabenseifner`` all-reduce: recursive-halving reduce-scatter, then recursive-doubling all_gather.

The reduce-scatter leaves member i with block i summed over the group
(:mod:`netsim.algorithms.recursive_halving`); the all_gather then spreads the
summed blocks in the reverse order of partners (:mod:`netsim.algorithms.recursive_doubling`).

Cost, with n the bytes of one member's input, p = 2^m members, one-way link
bandwidth B = 1/beta and per-hop latency alpha, when every partner is one hop away
on a link of its own (a ring of 2, a 2x2 or 2x2x2 torus):

    2 lg p * alpha + 2 ((p-1)/p) n/B,

Thakur-Rabenseifner-Gropp's 2 lg p alpha + 2((p-1)/p) n beta + ((p-1)/p) n gamma
with the reduction free (gamma = 0). Only psum (the all_reduce pattern) runs it;
its halves alone are ``recursive_halving`` and ``recursive_doubling``. Group sizes
that are not powers of two are refused.
"""

from __future__ import annotations

from netsim.algorithms.recursive_doubling import doubling_gather
from netsim.algorithms.recursive_halving import halving_reduce_scatter
from netsim.algorithms.registry import Algorithm, register

register(
    "rabenseifner",
    Algorithm(
        1,
        doubling_gather,
        halving_reduce_scatter,
        "recursive-halving reduce-scatter, then recursive-doubling all_gather",
        patterns=("all_reduce",),
        power_of_two=True,
        one_message_per_step=True,
    ),
)
