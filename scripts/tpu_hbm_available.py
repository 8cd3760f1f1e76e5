"""Ask the TPU compiler how much HBM each generation's chip can allocate (the unit of the presets' capacities).

Needs ``jax[tpu]`` (libtpu from PyPI; no TPU: the compile is ahead of time). For each
generation it compiles, for one chip, a program whose temporaries do not fit, and prints
the compiler's refusal: "the total memory required for HLO temporaries (32.00G) exceeds
available HBM (15.75G)". A program of two 16 GiB temporaries is written "32.00G": the
compiler's G is GiB, and the HBM it offers (v4 30.75, v5p 95.74, v5e 15.75, v6e 31.25 with
libtpu 0.0.42.1) is more than the 32, 96, 16 and 32 x 10**9 bytes the spec tables' "GB"
would be. ``netsim/network/presets.py`` takes the capacities as GiB for that reason.

    /work/tpuvenv/bin/python scripts/tpu_hbm_available.py
"""

from __future__ import annotations

import importlib.metadata
import re

SLICES = {"tpu-v4": ("v4:2x2x1", "megacore"), "tpu-v5p": ("v5:2x2x1", "default"), "tpu-v5e": ("v5e:2x2", "default"), "tpu-v6e": ("v6e:2x2", "default")}
"""Each generation's smallest slice as ``jax.experimental.topologies`` names it (topology, chip config)."""


def available_hbm(topology_name: str, chip_config: str, gib: int = 64) -> str:
    """The compiler's refusal of ``gib`` GiB of f32 input and two temporaries as big, on one chip of the slice."""
    import jax
    import jax.numpy as jnp
    from jax.experimental import topologies
    from jax.sharding import SingleDeviceSharding

    device = topologies.get_topology_desc(platform="tpu", topology_name=topology_name, chip_config_name=chip_config).devices[0]
    x = jax.ShapeDtypeStruct((gib, 2**28), jnp.float32, sharding=SingleDeviceSharding(device))
    try:
        jax.jit(lambda a: jnp.sin(a) * jnp.cos(a) + a[::-1]).lower(x).compile()
    except Exception as error:
        found = re.search(r"HLO temporaries \(([\d.]+G)\) exceeds available HBM \(([\d.]+G)\)", str(error))
        return f"temporaries {found.group(1)}, available HBM {found.group(2)}" if found else str(error).splitlines()[0]
    return f"{gib} GiB compiled: ask for more"


def main() -> None:
    print(f"libtpu {importlib.metadata.version('libtpu')}, jax {importlib.metadata.version('jax')}")
    for generation, (name, config) in SLICES.items():
        print(f"{generation:8} {available_hbm(name, config, 128 if generation == 'tpu-v5p' else 16)}")


if __name__ == "__main__":
    main()
