"""The data-center network (DCN) between TPU slices: each generation's hosts, NICs and rates, with their sources.

Chips of different slices do not share ICI links: "TPU chips in different slices
communicate by transferring data to CPUs (hosts) which in turn transmit the data over
the data-center network (DCN)" (Cloud TPU, *Multislice introduction*,
docs.cloud.google.com/tpu/docs/multislice-introduction). netsim models that path as what
it is (:mod:`netsim.network.slices`): a chip's link to its host over PCIe, the host's
NICs, each a pair of directed links (up to and down from the switch), and one
non-blocking switch.

Figures, one way (per direction, full duplex), per generation:

==========  =============  ===============  ====================  ===============  ===========
generation  chips a host   NICs a host      one NIC's rate        DCN per chip     PCIe a chip
==========  =============  ===============  ====================  ===============  ===========
``tpu-v4``  4 (2x2x1)      1 (not publ.)    25 GB/s (see below)   6.25 GB/s        16 GB/s
``tpu-v5p`` 4 (2x2x1)      1 (not publ.)    25 GB/s (200 Gbps)    6.25 GB/s        16 GB/s
``tpu-v5e`` 8 (4x2)        2 x 100 Gbps     12.5 GB/s             3.125 GB/s       16 GB/s
``tpu-v6e`` 8 (4x2)        4 x 200 Gbps     25 GB/s               12.5 GB/s        32 GB/s
``tpu7x``   4 (2x2x1)      2 x 200 Gbps     25 GB/s               12.5 GB/s        16 GB/s
==========  =============  ===============  ====================  ===============  ===========

Sources:

- per chip: the scaling book's TPU chapter (jax-ml.github.io/scaling-book/tpus, "TPU
  specs"): "DCN bandwidth is typically around 6.25e9 bytes / second per TPU (12.5e9 for
  TPU v6e and TPU7x, and 3.125e9 for TPU v5e)"; the same sentence gives PCIe "around
  1.6e10 bytes / second per TPU (3.2e10 for TPU v6e)". The Cloud TPU7x page
  (docs.cloud.google.com/tpu/docs/tpu7x) gives 50 / 100 / 100 Gbps per chip for
  v5p / v6e / TPU7x.
- v5e: Cloud TPU v5e page (docs.cloud.google.com/tpu/docs/v5e): 2 x 100 Gbps NICs per
  host of 8 chips, 6.4 Tbps per 256-chip pod (25 Gbps a chip).
- v6e: Cloud TPU v6e page (cloud.google.com/tpu/docs/v6e): 4 x 200 Gbps NICs per host
  of 8 chips, 25.6 Tbps per 256-chip pod.
- v5p: the scaling book's training chapter (jax-ml.github.io/scaling-book/training,
  "Scaling Across Pods"): "each host has about 200Gbps (25GB/s) of full-duplex DCN
  bandwidth, which is about 6.25GB/s full-duplex (egress) bandwidth per TPU"; 4-chip
  hosts (Cloud TPU v5p page). How many NICs carry it is not published: one link of
  the host's rate.
- v4: no DCN figure on the Cloud TPU v4 page; netsim takes the book's default per chip
  (6.25e9 B/s, not stated for v4) on 4-chip hosts. xprof's DCN analysis assumes half
  of it per host (12.5 GB/s, ``kMaxHostDcnBw``).
- TPU7x: 4 chips (8 devices) and 2 NICs per VM (GKE's *TPU Ironwood* page,
  docs.cloud.google.com/kubernetes-engine/docs/concepts/tpu-ironwood); the NIC's rate is
  derived from 100 Gbps per chip. Its PCIe rate is not published: the book's typical
  1.6e10 B/s per chip, shared evenly by the chip's two devices (an assumption).

Which chips a host holds: the slice cut into tiles of the host's shape (the book's
"Host size" column), row-major; a host's chips are dealt to its NICs in equal runs.

Latency: **no published DCN latency was found** (Cloud docs, the book, MaxText, XLA,
xprof). The Multislice docs call DCN a high-latency network next to ICI (about 1 us a
hop). netsim ASSUMES 10 us on each NIC link and 1 us on each PCIe link, so a message
from a chip to a chip of another slice pays 2 x 1 + 2 x 10 = 22 us: tens of
microseconds, said wherever it is used. Both are options of
:func:`netsim.network.slices.multislice`.

This module knows nothing of SimPy or collectives.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DCN", "DCN_NIC_LATENCY_S", "DCN_PCIE_LATENCY_S", "DcnFigures"]

DCN_NIC_LATENCY_S = 10e-6
"""ASSUMED, not cited: latency of one NIC link (host to switch, or switch to host)."""
DCN_PCIE_LATENCY_S = 1e-6
"""ASSUMED, not cited: latency of a chip's PCIe link to its host."""


@dataclass(frozen=True)
class DcnFigures:
    """One generation's way out of a slice: hosts, NICs and their rates.

    Attributes
    ----------
    host_shape : tuple of int
        The chips of one host, as a tile of the slice's axes (clipped to the slice).
    nics_per_host : int
        NICs per host; each is a pair of directed links to the switch.
    nic_bandwidth_Bps : float
        One NIC's rate, one way, bytes per second.
    pcie_bandwidth_Bps : float
        One chip's link to its host, one way, bytes per second.
    per_chip_Bps : float
        The published DCN rate per chip, one way (for reports and closed forms).
    source : str
        Where the figures come from, in one line.
    """

    host_shape: tuple[int, ...]
    nics_per_host: int
    nic_bandwidth_Bps: float
    pcie_bandwidth_Bps: float
    per_chip_Bps: float
    source: str

    @property
    def chips_per_host(self) -> int:
        """Chips of one host (before clipping to a slice smaller than a host).

        Examples
        --------
        >>> DCN["tpu-v5e"].chips_per_host, DCN["tpu-v5e"].nics_per_host
        (8, 2)
        """
        count = 1
        for d in self.host_shape:
            count *= d
        return count


_BOOK = "jax-ml.github.io/scaling-book/tpus ('TPU specs': DCN and PCIe per TPU)"

DCN: dict[str, DcnFigures] = {
    # No v4 DCN figure on the Cloud TPU v4 page: the book's default 6.25e9 B/s per chip (not v4-specific),
    # 4-chip hosts (book, "Host size" 2x2x1): one link of 25e9 B/s per host. PCIe: the book's 1.6e10 per chip.
    "tpu-v4": DcnFigures((2, 2, 1), 1, 4 * 6.25e9, 1.6e10, 6.25e9, f"{_BOOK}: 6.25e9 B/s per chip, the book's default (no v4 figure published)"),
    # v5p: 200 Gbps = 25 GB/s full duplex per 4-chip host (book, training chapter); 50 Gbps per chip (Cloud TPU7x page's table).
    "tpu-v5p": DcnFigures(
        (2, 2, 1),
        1,
        25e9,
        1.6e10,
        6.25e9,
        "jax-ml.github.io/scaling-book/training: 200 Gbps (25 GB/s) per 4-chip host; docs.cloud.google.com/tpu/docs/tpu7x: 50 Gbps per chip",
    ),
    # v5e: 2 x 100 Gbps NICs per 8-chip host (Cloud TPU v5e page); 3.125e9 B/s per chip (book).
    "tpu-v5e": DcnFigures(
        (4, 2), 2, 100e9 / 8, 1.6e10, 3.125e9, "docs.cloud.google.com/tpu/docs/v5e: 2 x 100 Gbps NICs per 8-chip host; book: 3.125e9 B/s per chip"
    ),
    # v6e: 4 x 200 Gbps NICs per 8-chip host (Cloud TPU v6e page); 12.5e9 per chip, PCIe 3.2e10 per chip (book).
    "tpu-v6e": DcnFigures((4, 2), 4, 200e9 / 8, 3.2e10, 12.5e9, "cloud.google.com/tpu/docs/v6e: 4 x 200 Gbps NICs per 8-chip host; book: 12.5e9 B/s per chip"),
    # TPU7x: 2 NICs per 4-chip VM (GKE TPU Ironwood page); 100 Gbps per chip (Cloud TPU7x page) -> 200 Gbps a NIC.
    "tpu7x": DcnFigures(
        (2, 2, 1), 2, 200e9 / 8, 1.6e10, 12.5e9, "docs.cloud.google.com/tpu/docs/tpu7x: 100 Gbps per chip; GKE tpu-ironwood: 2 NICs per 4-chip VM"
    ),
}
"""DCN figures by generation name (as :data:`netsim.network.presets.GENERATIONS`); Multislice needs v4 or later."""
