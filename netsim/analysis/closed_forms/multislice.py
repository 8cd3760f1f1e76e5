"""Closed forms of collectives across slices: over the DCN alone, hierarchical, and the flat ring.

The DCN path between two chips of different slices (:mod:`netsim.network.slices`) is
four links: PCIe up (α_p, B_p), the NIC's uplink and the peer NIC's downlink (α_n, B_n
each), PCIe down. One message of m bytes takes ``L + m/B_n`` when the NIC is the slowest
link (B_n ≤ B_p), ``L = 2α_p + 2α_n`` the path's latency. ``c`` devices share a NIC; when
they all send at once their messages queue on its uplink, one after the other.

Notation: ``D`` bytes per device, ``S`` slices in a group, ``M`` members of a group per
slice, ``s = D/(S·M)`` a block, ``h = s/(2B)`` half a block over an ICI link, ``h_n =
s/(2B_n)`` over a NIC (every ring algorithm here cuts blocks in halves, one per direction).

Exact forms (derived from the schedules, checked against the simulation in
tests/test_multislice.py), where B_n ≤ B_p:

* over the DCN alone (one member per slice), two slices, bidirectional ring: a
  reduce-scatter or all_gather is one step, ``L + 2c·h_n`` (all_gather: h_n of the input);
  a psum ``L + max(L + (2c+1)·h_n, 4c·h_n)``: the peer's gather message leaves when its
  reduction arrived, and queues behind the reductions when the NIC is the bottleneck;
* hierarchical psum over two slices and one inner ring of M, when an ICI step is
  latency-bound (h ≤ α): ``2(M−1)·α + (2M−1)·h + 2L + (2c+1)·h_n``: the inner
  reduce-scatter's last chunk (M−1 hops of α + h, its first link sending two halves), the
  NIC's 2c messages of the DCN reduce-scatter one after the other, the peer's one message
  back, and the inner all-gather.

Elsewhere, lower bounds, labelled so: a chain of dependent steps, and the bytes a
slice must take in through its NICs. For a psum every slice must receive 2(S−1)/S of
the data (the bandwidth-optimal all-reduce of Patarasuk & Yuan, 2009), through M/c NICs:
``L + 2(S−1)/S · c·D/M / B_n``, which the hierarchical algorithm's DCN phase meets. A flat
ring through every device in mesh order crosses the DCN at S points, each carrying all
the ring's steps: ``L + 2(N−1)·(D/N)/B_n`` (one way round).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from netsim.analysis.closed_forms.terms import AlphaBeta, Estimate, _evaluate, canonical_collective

__all__ = ["DcnPath", "MultisliceEstimate", "book_across_slices", "dcn_bound", "estimate_across_slices"]

SOURCE = "docs/multislice.md (derived from the schedules of netsim.algorithms.hierarchical and the rings)"
RINGS = ("bidirectional_ring", "multiaxis", "hierarchical", "multiaxis_bundled", "dimension_ordered")
"""Algorithms that run a bidirectional ring over a group of one axis."""


@dataclass(frozen=True)
class DcnPath:
    """The links between chips of two slices, as closed forms see them.

    Attributes
    ----------
    nic_bandwidth_Bps, nic_latency_s : float
        One NIC link (uplink or downlink).
    pcie_bandwidth_Bps, pcie_latency_s : float
        One device's link to its host.
    devices_per_nic : int
        Devices that share a NIC.
    """

    nic_bandwidth_Bps: float
    nic_latency_s: float
    pcie_bandwidth_Bps: float
    pcie_latency_s: float
    devices_per_nic: int

    @property
    def latency_s(self) -> float:
        """L = 2α_p + 2α_n: the four links' latencies.

        Examples
        --------
        >>> round(DcnPath(12.5e9, 10e-6, 16e9, 1e-6, 4).latency_s * 1e6, 9)
        22.0
        """
        return 2 * self.pcie_latency_s + 2 * self.nic_latency_s

    @property
    def nic_bound(self) -> bool:
        """Whether the NIC is the path's slowest link (the exact forms' condition)."""
        return self.nic_bandwidth_Bps <= self.pcie_bandwidth_Bps


@dataclass(frozen=True)
class MultisliceEstimate:
    """A collective across slices: the closed form (or a bound), split into its ICI and DCN terms.

    Attributes
    ----------
    estimate : Estimate
        The whole, with its kind (``exact`` or ``lower_bound``) and formula.
    ici, dcn : AlphaBeta
        The terms paid on ICI links and on the DCN.
    slices, members_per_slice, devices_per_nic : int
        S, M and c of the form.
    """

    estimate: Estimate
    ici: AlphaBeta
    dcn: AlphaBeta
    slices: int
    members_per_slice: int
    devices_per_nic: int

    def terms_text(self) -> str:
        """``ICI 41.3 us | DCN 55.8 us``: the two parts side by side."""
        return f"ICI {_us(self.ici.time_s)} | DCN {_us(self.dcn.time_s)}"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.6g} us"


def dcn_bound(collective: str, D: float, S: int, M: int, path: DcnPath) -> AlphaBeta:
    """The bytes a slice must take in through its NICs, as a lower bound for any algorithm.

    Examples
    --------
    >>> ab = dcn_bound("psum", 2**20, 2, 16, DcnPath(12.5e9, 10e-6, 16e9, 1e-6, 4))
    >>> round(ab.latency_s * 1e6, 6), round(ab.bandwidth_s * 1e6, 6)   # 2·(1/2)·4·2**20/16 / 12.5e9
    (22.0, 20.97152)
    """
    c, Bn = path.devices_per_nic, min(path.nic_bandwidth_Bps, path.pcie_bandwidth_Bps * path.devices_per_nic)
    share = {"psum": 2 * (S - 1) / S * D / M, "all_gather": (S - 1) * D, "psum_scatter": (S - 1) / S * D / M}.get(canonical_collective(collective))
    if share is None:  # all_to_all: (S−1)/S of every member's input leaves its slice
        share = (S - 1) / S * D
    return AlphaBeta(path.latency_s, c * share / Bn)


def estimate_across_slices(
    collective: str,
    algorithm: str,
    D: float,
    S: int,
    inner: Sequence[int],
    inner_ring: Sequence[bool],
    alpha: float,
    B: float,
    path: DcnPath,
    flat_order: bool = False,
    pieces: int = 2,
    exact: bool = True,
) -> MultisliceEstimate:
    """The closed form of one collective whose groups span ``S`` slices, ``inner`` axes in each.

    Parameters
    ----------
    collective, algorithm : str
    D : float
        Bytes per device (the input).
    S : int
        Slices a group spans (one member each on the outer axis).
    inner, inner_ring : sequence
        The group's axes inside a slice (empty over the DCN alone) and whether each is a ring.
    alpha, B : float
        An ICI link's latency and one-way bandwidth.
    path : DcnPath
    flat_order : bool
        The group's members run as one flat ring (any algorithm that ignores the axes).
    pieces : int
        What the algorithm cuts a block into (the lower bounds' messages are a piece).
    exact : bool
        False: give the lower bound even where an exact form applies (the DCN axis is not
        the group's first, so the plan is not the one the forms were derived from).

    Examples
    --------
    >>> path = DcnPath(12.5e9, 10e-6, 16e9, 1e-6, 4)
    >>> e = estimate_across_slices("psum", "hierarchical", 2**20, 2, (16,), (True,), 1e-6, 45e9, path)
    >>> e.estimate.kind, round(e.estimate.time_s * 1e6, 4), e.terms_text()
    ('exact', 97.0832, 'ICI 41.2868 us | DCN 55.7965 us')
    """
    collective = canonical_collective(collective)
    M = 1
    for d in inner:
        M *= d
    c, L, Bn = path.devices_per_nic, path.latency_s, path.nic_bandwidth_Bps
    s = D / (S * M)
    h, hn = s / (2 * B), s / (2 * Bn)
    bound = dcn_bound(collective, D, S, M, path)
    exact_dcn = exact and S == 2 and path.nic_bound and algorithm in RINGS and not flat_order
    if not inner and exact_dcn:
        if collective == "psum":
            dcn = AlphaBeta(2 * L, max(L + (2 * c + 1) * hn, 4 * c * hn) - L)
            text = "L + max(L + (2c+1)·h_n, 4c·h_n), h_n = s/(2B_n), s = D/2, L = 2α_p + 2α_n"
        else:
            unit = D / (2 * Bn) if collective == "all_gather" else hn
            dcn = AlphaBeta(L, 2 * c * unit)
            text = "L + 2c·h_n, h_n = (all_gather: D, else D/2)/(2B_n), L = 2α_p + 2α_n"
        return _made(collective, D, AlphaBeta(0.0, 0.0), dcn, text, "exact", S, M, c)
    if collective == "psum" and algorithm == "hierarchical" and exact_dcn and len(inner) == 1 and inner_ring[0] and h <= alpha:
        ici = AlphaBeta(2 * (M - 1) * alpha, (2 * M - 1) * h)
        dcn = AlphaBeta(2 * L, (2 * c + 1) * hn)
        text = "2(M−1)·α + (2M−1)·h + 2L + (2c+1)·h_n, h = s/(2B), h_n = s/(2B_n), s = D/(2M)"
        return _made(collective, D, ici, dcn, text, "exact", S, M, c)
    # A lower bound: the larger of a chain of dependent steps and the DCN bytes bound.
    rounds = 2 if collective == "psum" else 1
    hops = sum(d - 1 for d in inner)
    if flat_order:
        N = S * M
        chain_ici = AlphaBeta(rounds * (N - 1) * alpha, 0.0)  # a chunk's steps round the ring, α each at least
        ways = 1 if algorithm == "ring" else 2
        crossing = AlphaBeta(L, rounds * (N - 1) * (D / N) / ways / Bn) if collective != "all_gather" else AlphaBeta(L, (N - 1) * D / ways / Bn)
        dcn = max(crossing, bound, key=lambda ab: ab.time_s)
        text = "≥ max(the ring's steps (n−1)·α per phase, L + what a DCN crossing of the flat ring carries: every step's block, L + the bytes a slice takes in)"
        return _made(collective, D, chain_ici, dcn, text, "lower_bound", S, M, c, max(chain_ici, dcn, key=lambda ab: ab.time_s))
    ici = AlphaBeta(rounds * hops * alpha, 0.0)
    chain = AlphaBeta(rounds * (S - 1) * L, rounds * (S - 1) * s / (pieces * Bn))
    whole = max(AlphaBeta(ici.latency_s + chain.latency_s, chain.bandwidth_s), bound, key=lambda ab: ab.time_s)
    text = "≥ max(a chain: ICI hops 2·Σ(d_i−1)·α + DCN steps 2(S−1)·(L + s/(P·B_n)), the bytes a slice takes in: L + 2(S−1)/S·c·D/M/B_n) (psum)"
    return _made(collective, D, ici, max(chain, bound, key=lambda ab: ab.time_s), text, "lower_bound", S, M, c, whole)


def _made(
    collective: str, D: float, ici: AlphaBeta, dcn: AlphaBeta, text: str, kind: str, S: int, M: int, c: int, whole: AlphaBeta | None = None
) -> MultisliceEstimate:
    """The estimate of ``whole`` (default: the ICI and DCN terms one after the other)."""
    scale = (lambda x: x / D) if D else (lambda x: 0.0)
    parts = whole or AlphaBeta(ici.latency_s + dcn.latency_s, ici.bandwidth_s + dcn.bandwidth_s)
    estimate = _evaluate(
        lambda x: AlphaBeta(parts.latency_s, parts.bandwidth_s * scale(x)), D, f"{text} [ICI {_us(ici.time_s)} | DCN {_us(dcn.time_s)}]", SOURCE, kind
    )
    return MultisliceEstimate(estimate, ici, dcn, S, M, c)


def book_across_slices(collective: str, D: float, S: int, M: int, per_chip_Bps: float) -> Estimate | None:
    """The scaling book's all-reduce across pods: 2·(S−1)/S·D / (M·W_dcn), W_dcn one chip's DCN egress (psum only, else None).

    The training chapter ("Scaling Across Pods") runs the gradient all-reduce as a ring over
    the pods, each pod's M chips sending at once: the bandwidth grows with M "since ... we
    acquire more NICs". It counts neither latency nor the ICI's phases.

    Examples
    --------
    >>> round(book_across_slices("psum", 2**20, 2, 16, 3.125e9).time_s * 1e6, 5)
    20.97152
    """
    if canonical_collective(collective) != "psum" or S < 2:
        return None
    text = "2·(S−1)/S·D/(M·W_dcn), W_dcn a chip's DCN egress (the scaling book's training chapter, Scaling Across Pods)"
    return _evaluate(lambda x: AlphaBeta(0.0, 2 * (S - 1) / S * x / (M * per_chip_Bps)), D, text, "jax-ml.github.io/scaling-book/training", "none")
