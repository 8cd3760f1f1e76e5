"""Compile the bundled JAX examples and write their HLO modules into scenarios/programs/hlo/.

Run from the repository's root (needs the ``jax`` extra; no accelerator):

    python scripts/make_hlo_modules.py

Each example of :mod:`netsim.programs.hlo.examples` is compiled on CPU with 8 fake devices
(a 2x4 mesh) and written as ``NAME.txt`` (the optimised module's text, without the
debugging tables that name this machine's file paths) and ``NAME.devices.json`` (its
device map: CPU devices have no coordinates, so ids lie row-major on the slice).

The TPU-compiled modules beside them (``scenarios/programs/hlo/tpu/``) need the TPU
compiler: ``python scripts/make_hlo_modules.py --tpu`` runs
``scripts/make_tpu_hlo_modules.py`` (in an environment with ``jax[tpu]``; see its docstring).
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

if __name__ == "__main__" and "--tpu" in sys.argv[1:]:  # before netsim is imported: that environment needs only jax[tpu]
    sys.argv = [sys.argv[0], *(a for a in sys.argv[1:] if a != "--tpu")]
    runpy.run_path(str(Path(__file__).resolve().parent / "make_tpu_hlo_modules.py"), run_name="__main__")
    sys.exit(0)

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from netsim.programs.hlo.examples import EXAMPLES, compile_example, example_mesh  # noqa: E402
from netsim.programs.hlo.export import export  # noqa: E402
from netsim.programs.hlo.text import strip_debug_tables  # noqa: E402


def main(out: Path = ROOT / "scenarios" / "programs" / "hlo") -> None:
    mesh = example_mesh()
    out.mkdir(parents=True, exist_ok=True)
    for name in EXAMPLES:
        path = out / f"{name}.txt"
        export(compile_example(name, mesh), mesh, path)
        path.write_text(strip_debug_tables(path.read_text()))
        print(f"wrote {path.relative_to(ROOT)} and its device map")


if __name__ == "__main__":
    main()
