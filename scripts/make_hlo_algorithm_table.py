"""Write the table of docs/hlo.md that sets the TPU compiler's collective algorithms beside netsim's.

Run from the repository's root (netsim's own environment; no libtpu):

    python scripts/make_hlo_algorithm_table.py          # prints the table
    python scripts/make_hlo_algorithm_table.py --write  # puts it into docs/hlo.md between its markers

For each module of :data:`MODULES` (bundled in ``scenarios/programs/hlo/tpu/``, compiled by
libtpu), each collective instruction: the compiler's algorithm as the module names it, its
time played with ``algorithm: compiler``, with netsim's own choice (and which), and its
closed form. ``tests/test_hlo_tpu.py`` checks that docs/hlo.md holds what this prints.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from netsim.analysis.hlo_stats import collectives  # noqa: E402
from netsim.programs.hlo.run import run_hlo_program  # noqa: E402

MODULES = ("v5e_4x4/fsdp_matmul", "v4_4x4x4/psum_scatter", "v6e_8x16/fsdp_matmul", "v5p_16x16x16/mlp")
"""The modules the table shows: four generations, four kinds of compiler algorithm."""
BEGIN, END = "<!-- algorithm table: scripts/make_hlo_algorithm_table.py -->", "<!-- end of the algorithm table -->"
DOC = ROOT / "docs" / "hlo.md"


def _us(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:.2f} us"


def table(compiled_runs: dict | None = None) -> str:
    """The markdown table (``compiled_runs``: program file -> its run with ``algorithm: compiler``, where already made)."""
    rows = [
        "| module (slice) | collective | compiler's algorithm | `algorithm: compiler` | netsim's own | closed form |",
        "|---|---|---|---|---|---|",
    ]
    for name in MODULES:
        path = ROOT / "scenarios" / "programs" / "hlo" / "tpu" / f"{name}.yaml"
        compiled = (compiled_runs or {}).get(path) or run_hlo_program(path, compare=False)
        own = {c["hlo_name"]: c for c in collectives(run_hlo_program_with(path, "netsim"))}
        for c in collectives(compiled):
            named = c["note"].partition(": ")[0] if c["compiler_algorithm"] else "-"
            mine = own[c["hlo_name"]]
            shape = f"{c['dtype']}[{','.join(map(str, c['shape']))}]"
            rows.append(
                f"| `{name}` ({compiled.topology}) | {c['op']} {shape} over {c['group_size']} | `{named}` | "
                f"{_us(c['time_s'])} ({c['algorithm']}) | {_us(mine['time_s'])} ({mine['algorithm']}) | {_us(c['estimate_s'])} |"
            )
    return "\n".join(rows) + "\n"


def run_hlo_program_with(path: Path, algorithm: str):
    """The program file run with ``algorithm`` whatever it says."""
    from netsim.programs.hlo.files import load_any_program

    loaded = load_any_program(path)
    return run_hlo_program(loaded.model_copy(update={"algorithm": algorithm}), compare=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="put the table into docs/hlo.md")
    args = parser.parse_args()
    text = table()
    if not args.write:
        print(text, end="")
        return
    doc = DOC.read_text()
    head, _, rest = doc.partition(BEGIN)
    _, _, tail = rest.partition(END)
    DOC.write_text(f"{head}{BEGIN}\n{text}{END}{tail}")
    print(f"wrote the table into {DOC.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
