"""The network: topologies of devices and links, TPU slices by name, chips, logical meshes, units.

This is the bottom layer: it knows nothing of collectives, schedules or timing
models, only devices, directed links with their bandwidth and latency, and the
routes between devices.

Modules
-------
=============== ====================================================================
``topology``    :class:`~netsim.network.topology.Topology` (a NetworkX graph, one edge
                per link direction), ``ring``, ``torus``, ``mesh``, routes, failed
                and degraded links
``presets``     TPU slices by name (``tpu-v5e:8x16``): generation, shape, links, chips
``chiplets``    chips that show two devices (TPU7x): the chips' torus plus a core axis
``chips``       the chips' compute facts (peak FLOP/s, HBM bandwidth and capacity)
``slices``      several slices joined by the DCN (``tpu-v5e:4x4x2slices``): NICs, one switch,
                slice-major devices; meshes across slices (``hybrid_mesh``, ``dcn_axes``)
``dcn``         each generation's hosts, NICs and DCN rates, with their sources
``device_mesh`` logical meshes with named axes on a topology, and the groups they give
``units``       human units in (``"64 MiB"``, ``"45 GB/s"``, ``"1 us"``), SI floats out
=============== ====================================================================

Where a change goes
-------------------
A new shape of interconnect or routing rule goes in ``topology`` (or, for chips of
several devices, ``chiplets``); a new TPU generation in ``presets``; a new compute fact
of a chip in ``chips``; how named axes map to devices in ``device_mesh``; a new unit in
``units``.
"""
