"""Runs that would not fit in memory are refused up front, with a pointer to the timing-only mode."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import netsim
from netsim.checks.memory import BYTES_PER_HOP, BYTES_PER_RUN, BYTES_PER_TRANSFER, MemoryLimitError, available_memory, check_memory, estimate_memory
from netsim.cli.main import app
from netsim.network.units import format_bytes

runner = CliRunner()
GiB = 2**30


def test_the_pod_sized_all_gather_is_refused_before_anything_is_allocated(tmp_path):
    # 4096 devices, 1 GiB each: the gathered output alone is 4096 x 4096 GiB.
    path = tmp_path / "pod.yaml"
    path.write_text("name: pod\ntopology: {kind: ring, dims: [4096]}\ncollective: {op: all_gather}\ninput: {bytes_per_device: 1 GiB, dtype: int8}\n")
    result = runner.invoke(app, ["run", str(path)])
    assert result.exit_code == 2
    line = result.output.strip()
    assert len(line.splitlines()) == 1
    # The 4096 x 4096 GiB of outputs would stay lazy (over 2 GiB), so they are not counted; what is:
    # inputs 4 TiB, checking a lazy output a row at a time: 2 rows of 4 TiB, 2 x 4096 x 4095 one-hop transfers
    needed = 4096 * GiB + 2 * 4096 * GiB + BYTES_PER_RUN + 2 * 4096 * 4095 * (BYTES_PER_TRANSFER + BYTES_PER_HOP)
    assert line.startswith(f"error: {path}: input: this run needs about {format_bytes(needed)} of memory (")
    assert "reference 8 TiB" in line
    assert line.endswith("is available; run it timing-only with `data: none`, or use fewer devices or a smaller input")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pod.yaml"]


def test_the_python_api_refuses_it_too():
    # A broadcast view: 4096 devices "holding" 1 GiB each without the memory behind it.
    x = np.broadcast_to(np.zeros(1, np.int8), (4096, GiB))
    # the output stays lazy (not counted); checking one group against the reference does not fit
    with pytest.raises(MemoryLimitError, match=r"^this run needs about 8\.\d+ TiB of memory \(reference 8 TiB, schedule .*\) but only .* `data: none`"):
        netsim.all_gather(x, topology=netsim.ring(4096))


def test_a_scenario_that_fits_in_the_machine_but_not_in_what_is_free_is_refused(tmp_path, monkeypatch):
    scenario = Path(__file__).resolve().parent.parent / "scenarios" / "allgather_ring8_bandwidth_bound.yaml"
    assert netsim.load_scenario(scenario)  # fine with this machine's memory
    monkeypatch.setattr("netsim.checks.memory.available_memory", lambda: 64 * 2**20)
    result = runner.invoke(app, ["run", str(scenario)])
    assert result.exit_code == 2
    # 8 devices x 8 MiB in, 8 x 64 MiB out, 64 MiB of inputs and 64 MiB of temporaries to check one group, 112 one-hop transfers
    needed = 8 * 8 * 2**20 + 8 * 64 * 2**20 + 8 * 8 * 2**20 + 64 * 2**20 + BYTES_PER_RUN + 112 * (BYTES_PER_TRANSFER + BYTES_PER_HOP)
    assert f"this run needs about {format_bytes(needed)} of memory" in result.output
    assert "but only 64 MiB is available" in result.output


@pytest.mark.parametrize(
    ("collective", "outputs", "partial_sums", "reference", "transfers"),
    [
        ("all_gather", 16 * 4 * 100, 0, 4 * 100 + 1 * 400, 16 * 3 * 2),  # exact copies: one output of temporaries (compared bit for bit)
        # every block summed is a new array; the check: 25 B of float32 (6 elements), its sum and 6 float32 temporaries each
        ("psum_scatter", 16 * 25, 16 * 100, 6 * (4 + 6 * 4 + 4), 16 * 3 * 2),
        ("psum", 16 * 100, 0, 4 * 100 + 4 * 100, 16 * 3 * 2 * 2),  # its sums are the chunks its all-gather moves
    ],
)
def test_estimates_from_sizes(collective, outputs, partial_sums, reference, transfers):
    e = estimate_memory(collective, 16, 4, 100, pieces=2)
    schedule = BYTES_PER_RUN + transfers * (BYTES_PER_TRANSFER + BYTES_PER_HOP)
    assert (e.inputs, e.outputs, e.partial_sums, e.reference, e.schedule) == (16 * 100, outputs, partial_sums, reference, schedule)
    assert e.total == 16 * 100 + outputs + partial_sums + reference + schedule
    assert estimate_memory(collective, 16, 4, 100, input_exists=True).inputs == 0


def test_a_reduce_scatter_counts_the_sums_its_algorithm_keeps():
    # 16 devices in groups of 4, 100 B each: blocks of 25 B
    sums = {a: estimate_memory("psum_scatter", 16, 4, 100, algorithm=a).partial_sums for a in ("ring", "recursive_halving", "direct")}
    assert sums == {"ring": 16 * 100, "recursive_halving": 16 * 50 + 25, "direct": 16 * 25 + 25}
    # the compiled player (20000 transfers and more) makes every sum before it fills the buffers: 3 blocks per device
    assert estimate_memory("psum_scatter", 16, 4, 100, algorithm="direct", transfers=20_000).partial_sums == 16 * 3 * 25


def test_the_estimate_covers_what_a_run_really_takes():
    import tracemalloc

    x = np.ones((16, 64 * 1024), np.float32)
    for op, estimate in (
        (netsim.all_gather, estimate_memory("all_gather", 16, 16, x[0].nbytes, 2, input_exists=True)),
        (netsim.psum, estimate_memory("psum", 16, 16, x[0].nbytes, 2, input_exists=True)),
        (lambda x: netsim.psum_scatter(x, tiled=True), estimate_memory("psum_scatter", 16, 16, x[0].nbytes, 2, input_exists=True)),
    ):
        tracemalloc.start()
        op(x)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak <= estimate.total


def test_available_memory_is_what_the_machine_reports():
    available = available_memory()
    assert available is None or available > 0
    meminfo = Path("/proc/meminfo")
    if available is not None and meminfo.exists():
        line = next(line for line in meminfo.read_text().splitlines() if line.startswith("MemAvailable:"))
        assert available <= int(line.split()[1]) * 1024 * 1.05  # it moves a little between the two reads


def test_check_memory_lets_runs_that_fit_through():
    check_memory(estimate_memory("psum", 8, 8, 1024), available=GiB)
    with pytest.raises(MemoryLimitError):
        check_memory(estimate_memory("psum", 8, 8, GiB), available=GiB)


def test_a_lazy_output_is_not_counted_up_front(monkeypatch):
    """A lazy output is built a row at a time when read, so the memory check must not refuse it.

    (A 1024-device ring all_gather of 64 MiB has 64 GiB of outputs: lazy by default, and it
    must run on a machine with far less memory.)
    """
    import numpy as np

    import netsim
    import netsim.pipeline

    seen = []
    monkeypatch.setattr(netsim.pipeline, "check_memory", seen.append)
    x = np.arange(8 * 16, dtype=np.int32).reshape(8, 16)
    lazy = netsim.all_gather(x, output="lazy")
    full = netsim.all_gather(x, output="full")
    assert seen[0].outputs == 0 and seen[1].outputs == 8 * 8 * x[0].nbytes
    assert full.output_digest_of == "every output byte (shape, dtype and values)"
    assert lazy.output_digest_of.startswith("the input's bytes with the collective and its layout")
    lazy.output._row = None  # the digest of a lazy output never builds a row
    assert lazy.output_digest == netsim.all_gather(x, output="lazy").output_digest != full.output_digest
    assert lazy.output_digest != netsim.all_gather(x + 1, output="lazy").output_digest
    assert lazy.output_digest != netsim.all_gather(x, tiled=True, output="lazy").output_digest


_FRAGMENTS = """
import os, sys
import numpy as np
from netsim.allocator import keep_freed_memory, return_freed_memory
if sys.argv[1] == "return":
    assert return_freed_memory()
if sys.argv[1] == "keep":
    assert keep_freed_memory()
page = os.sysconf("SC_PAGE_SIZE")
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * page
big = np.ones(8 << 20, np.uint8)
del big  # (glibc raises its mmap threshold past 8 MiB when this is freed)
before = rss()
arrays = [np.ones(1 << 20, np.uint8) for _ in range(300)]
del arrays[:-1]  # every array freed but the last, which was allocated after all the others
print(rss() - before)
"""


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's allocator on Linux")
def test_freed_arrays_go_back_to_the_system_once_runs_ask_for_it():
    mib = 1 << 20
    assert _allocator_child(_FRAGMENTS, "default") > 250 * mib  # 299 freed MiB stay in the heap, below the last array
    assert _allocator_child(_FRAGMENTS, "return") < 20 * mib  # each array had its own mapping, unmapped when freed


def _allocator_child(script: str, mode: str) -> int:
    """What ``script`` prints, run in a fresh process with ``mode`` and no MALLOC_ settings of the environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    return int(subprocess.run([sys.executable, "-c", script, mode], capture_output=True, text=True, check=True, env=env).stdout)


_REFAULTS = """
import resource, sys
import numpy as np
from netsim.allocator import keep_freed_memory, return_freed_memory
for mode in sys.argv[1].split(","):  # (the policies in turn: the last one asked for holds)
    assert (keep_freed_memory if mode == "keep" else return_freed_memory)()
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
first = np.ones(64 << 20, np.uint8)
del first
before = faults()
again = np.ones(64 << 20, np.uint8)  # the same size, made again: its pages fault in again, or are reused
print(faults() - before)
"""


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc's allocator on Linux")
def test_big_programs_reuse_freed_pages_where_collectives_map_fresh_ones():
    assert _allocator_child(_REFAULTS, "keep") < 8  # the freed 64 MiB is taken again from the heap, its pages still mapped
    assert _allocator_child(_REFAULTS, "return") >= 32  # a fresh mapping: a fault per 2 MiB (a huge page) at least, 16,384 with 4 KiB pages
    assert _allocator_child(_REFAULTS, "keep,return") >= 32 and _allocator_child(_REFAULTS, "return,keep,keep") < 8  # the last holds
    assert _allocator_child(_FRAGMENTS, "keep") > 250 * 2**20  # what it costs: freed arrays below a live one stay held
