"""Every Python call the README and docs/*.md name in their prose runs, and does what the text around it says.

The README's fenced Python blocks and shell commands run in ``tests/test_readme.py``;
this file covers the calls written inline (`` `topology.device(coord)` ``): each has a
runnable twin below, with the arguments filled in and the claim of its sentence
asserted. A call added to the docs without a twin here fails
``test_every_documented_call_has_a_runnable_twin``. Also here: the documented behaviours
that once failed (``topology.device`` with coordinates, ``program_as_data`` keeping the
data mode, what "equals" means for the collective matmul in bfloat16).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import yaml
from conftest import ROOT

import netsim
from netsim.programs.files import load_program, program_as_data, program_from_data
from netsim.programs.model import Op, Program, Sharded

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

SET_UP = """
import dataclasses
import numpy as np
import netsim
x = np.arange(16 * 8, dtype=np.float32).reshape(16, 8)
result = netsim.all_gather(x[:8], algorithm="ring")
topology = netsim.torus((4, 4), device={"peak_flops": 1.97e14})
"""

CALLS = {
    "netsim.ring(n)": "t = netsim.ring(6); assert t.n_devices == 6 and t.wraparound == (True,)",
    "netsim.torus(dims, wraparound=...)": "t = netsim.torus((4, 2), wraparound=(True, False)); assert (t.dims, t.wraparound) == ((4, 2), (True, False))",
    "netsim.mesh(dims)": "t = netsim.mesh((2, 3)); assert (t.n_devices, t.wraparound) == (6, (False, False))",
    "netsim.semantics.chunks.shape_only(shape, dtype)": (
        "big = netsim.semantics.chunks.shape_only((8, 4096), 'float32')\n"
        "r = netsim.all_gather(big, data='none', algorithm='ring')\n"
        "assert r.time == netsim.all_gather(np.ones((8, 4096), np.float32), algorithm='ring').time  # same timings"
    ),
    "netsim.sweep(study)": "table = netsim.sweep(STUDY, output='sweep_out', workers=1); assert len(table) == 2 and table['verified'].all()",
    "netsim.studies.sweep.read_results(path)": (
        "again = netsim.studies.sweep.read_results('sweep_out/results.csv')\nassert again['time_s'].tolist() == table['time_s'].tolist()  # bit for bit"
    ),
    "netsim.load_study(...)": "study = netsim.load_study('scenarios/studies/ring_algorithms.yaml'); assert study.fields[0] == 'algorithm'",
    "netsim.studies.plots.plot_results(table, directory)": (
        "import netsim.studies.plots\n"
        "drawn = netsim.studies.plots.plot_results(table, 'plots')\n"
        "import pathlib; assert drawn and all(pathlib.Path(p.path).exists() for p in drawn)"
    ),
    'netsim.ppermute(x, perm, algorithm="multipath")': (
        "corner = np.ones((16, 4096), np.float32)\n"
        "split = netsim.ppermute(corner, [(0, 15)], algorithm='multipath', topology=netsim.mesh((4, 4)))\n"
        "whole = netsim.ppermute(corner, [(0, 15)], topology=netsim.mesh((4, 4)))\n"
        "assert split.time == pytest_approx(4096 * 4 / (2 * 45e9) + 6e-6) and split.time < whole.time  # s/(2B) + 6 alpha"
    ),
    'netsim.ppermute(..., algorithm="multipath")': "assert netsim.ppermute(x, [(0, 15)], algorithm='multipath', topology=netsim.mesh((4, 4))).verified",
    "netsim.animate(netsim.simulate(netsim.load_scenario(...)))": (
        "anim = netsim.animate(netsim.simulate(netsim.load_scenario('scenarios/allgather_ring8.yaml')))\n"
        "assert anim.frames[-1].time_s == pytest_approx(2.738897777777778e-05)  # its frames, up to the run's time (drawn when shown)"
    ),
    "netsim.all_gather(...)": "assert netsim.all_gather(x[:4]).output.shape == (4, 4, 8)",
    "netsim.animate(result)": "assert '<img' in netsim.animate(netsim.psum(np.ones((2, 1)))).to_html(standalone=False)",
    'netsim.torus(dims, device={"peak_flops": 1.97e14, "hbm_bandwidth_Bps": 8.1e11, "hbm_capacity_bytes": 16 * 10**9})': (
        't = netsim.torus((2, 2), device={"peak_flops": 1.97e14, "hbm_bandwidth_Bps": 8.1e11, "hbm_capacity_bytes": 16 * 10**9})\n'
        "assert t.device(3) == {'peak_flops': 1.97e14, 'hbm_bandwidth_Bps': 8.1e11, 'hbm_capacity_bytes': 16 * 10**9}"
    ),
    "topology.with_device({...})": (
        "merged = topology.with_device({'hbm_capacity_bytes': 32 * 2**30})\n"
        "assert merged.device(0) == {'peak_flops': 1.97e14, 'hbm_bandwidth_Bps': None, 'hbm_capacity_bytes': 32 * 2**30}"
    ),
    "topology.device(d)": "assert topology.device(5) == {'peak_flops': 1.97e14, 'hbm_bandwidth_Bps': None, 'hbm_capacity_bytes': None}",
    "topology.device(coord)": "assert topology.device((1, 2)) == topology.index((1, 2)) == 6",
    'netsim.programs.files.program_as_data(program, "tpu-v5e:4x4")': (
        "from netsim.programs.model import Op, Program, Sharded\n"
        "program = Program('g', {'X': 4, 'Y': 4}, {'A': Sharded((64, 256), 'bfloat16', ((), ('X',)))},"
        " (Op.of('gather', 'all_gather', ('A',), 'A_full', axes=('X',), axis=1, tiled=True),))\n"
        "import yaml; written = yaml.safe_dump(netsim.programs.files.program_as_data(program, 'tpu-v5e:4x4'))\n"
        "again = netsim.run_program(yaml.safe_load(written)); ran = netsim.run_program(program, 'tpu-v5e:4x4')\n"
        "assert again.time == ran.time and again.verified == ran.verified == True"
    ),
    "netsim.ring(8).fail_link(3, 4)": (
        "broken = netsim.ring(8).fail_link(3, 4)\nassert netsim.all_gather(np.ones((8, 64)), topology=broken).time > netsim.all_gather(np.ones((8, 64))).time"
    ),
    'netsim.build_schedule("gather", [[0, 1, 2]], "ring").table()': "assert 'step' in str(netsim.build_schedule('gather', [[0, 1, 2]], 'ring').table())",
    'netsim.engine.play(topology, transfers, buffers, computes=[Compute(device=0, flops=2e12, bytes=1e9)], engine="processes")': (
        "from netsim.algorithms.compute import Compute\n"
        "chips = netsim.torus((2, 2), device={'peak_flops': 1.97e14, 'hbm_bandwidth_Bps': 8.1e11})\n"
        "played = netsim.engine.play(chips, [], [{} for _ in range(4)], computes=[Compute(device=0, flops=2e12, bytes=1e9)], engine='processes')\n"
        "assert played.time == pytest_approx(max(2e12 / 1.97e14, 1e9 / 8.1e11))  # the roofline"
    ),
    "netsim.stats(result)": "assert netsim.stats(result) is not None",
    "netsim.analyse(result)": "assert netsim.analyse(result).estimate.time_s == pytest_approx(result.time)  # a ring on a ring: exact",
    "dataclasses.replace(result, ...)": "changed = dataclasses.replace(result, scenario='mine'); assert changed.scenario == 'mine' and result.scenario is None",
    "netsim.analysis.program_stats.program_stats(result)": (
        "from netsim.analysis.program_stats import program_stats\n"
        "run = netsim.run_program('scenarios/programs/allgather_matmul.yaml')\n"
        "assert program_stats(run).exposed_communication_s == run.exposed_communication_s"
    ),
    "netsim.analysis.hlo_stats.hlo_summary(result)": (
        "from netsim.analysis.hlo_stats import hlo_summary\n"
        "from netsim.programs.hlo.run import run_hlo_program\n"
        "assert hlo_summary(run_hlo_program('scenarios/programs/hlo/mlp.yaml'))"
    ),
    "netsim.network.slices.multislice(slice, n)": (
        "from netsim.network.slices import multislice\n"
        "two = multislice(netsim.torus((2, 2)), 2); assert two.n_devices == 8 and [two.slice_of(d) for d in (0, 3, 4, 7)] == [0, 0, 1, 1]"
    ),
    "multislice(..., nic_latency_s=..., pcie_latency_s=...)": (
        "slow = multislice(netsim.torus((2, 2)), 2, nic_latency_s=50e-6, pcie_latency_s=2e-6)\n"
        "x8 = np.ones((8, 16), np.float32)\n"
        "assert netsim.psum(x8, topology=slow, algorithm='ring').time > netsim.psum(x8, topology=two, algorithm='ring').time"
    ),
    "netsim.network.slices.hybrid_mesh(ici_mesh_shape, dcn_mesh_shape, topology)": (
        "from netsim.network.slices import hybrid_mesh\n"
        "m = hybrid_mesh({'data': 1, 'model': 4}, {'data': 2, 'model': 1}, two)\n"
        "assert [sorted({two.slice_of(d) for d in g}) for g in m.groups('data')] == [[0, 1]] * 4  # the DCN axis: one device per slice"
    ),
    "netsim.programs.hlo.run.run_hlo(..., unroll=True)": (
        "from netsim.programs.hlo.run import run_hlo\n"
        "assert run_hlo('scenarios/programs/hlo/psum.txt', 'tpu-v5e:2x4', unroll=True).time == run_hlo('scenarios/programs/hlo/psum.txt', 'tpu-v5e:2x4').time"
    ),
}
"""Each documented call (as the docs write it, whitespace folded) and code that runs it and checks its sentence."""

NOT_CALLS = {
    "AllGather_X(A[I, J_X]) -> A[I, J]; A[I, J] · B[J, K] -> C[I, K]": "the scaling book's notation",
    "max(2·M·K·N / peak_flops, bytes / hbm_bandwidth)": "a formula",
    "eps(dtype) · (2 + partial-sum additions + ceil(log2 K)) · max|reference|": "a formula",
    "duration_s(step, index)": "a method to override, run by the README's link-subclass block",
    "max(FLOPs / peak_flops, bytes / hbm_bandwidth)": "a formula",
    "jax.jit(f).lower(...).compile().as_text()": "JAX's own API (run by scripts/make_hlo_modules.py)",
    'jax.experimental.topologies.get_topology_desc( platform="tpu", topology_name="v5e:4x4")': "JAX's own API, which needs libtpu",
    "jax.jit(f).lower(*shape_dtype_structs).compile()": "JAX's own API (run by scripts/make_hlo_modules.py)",
    "jax.shard_map(body, mesh=mesh, ...)": "JAX's own API",
    "mesh_utils.create_hybrid_device_mesh(mesh_shape, dcn_mesh_shape)": "JAX's own API, which netsim's hybrid_mesh follows",
    'netsim.from_jax(f, *args, topology="tpu-v5e:4x4")': "run by docs/programs.md's from_jax block (JAX needs its device count set first)",
    'jax.make_mesh((4, 4), ("data", "model"), devices=topology.devices)': "JAX's own API, which needs libtpu (run by tests/test_hlo_libtpu.py)",
    'netsim.programs.hlo.export.export(compiled, mesh, "step.txt")': "needs a compiled JAX function (run by tests/test_hlo_libtpu.py's export test)",
    "jax.experimental.topologies.get_topology_desc(..., num_slices=2)": "JAX's own API, which needs libtpu (run by scripts/make_tpu_hlo_modules.py)",
    'compiled.cost_analysis()["flops"]': "JAX's own API, which needs libtpu (run by scripts/hlo_flops_libtpu.py; tests/test_hlo_flops.py compares)",
    'cost_analysis()["flops"]': "JAX's own API, as above",
    "S(1)": "a memory space as HLO layouts write it, not a call (tests/test_hlo_bytes.py checks its bytes are not HBM bytes)",
    "T(8,128)": "a TPU tile as HLO layouts write it, not a call (tests/test_hlo_memory.py checks arrays take whole tiles)",
    "T(2,128)": "a TPU tile, as above (tests/test_hlo_memory.py::test_arrays_with_tpu_tiles_take_whole_tiles: bf16[1,1024] takes 4 KiB)",
    "compiled.memory_analysis()": "JAX's own API, which needs libtpu (run by scripts/tpu_memory_figures.py; tests/test_hlo_memory.py compares)",
    "cost_analysis()": "JAX's own API, which needs libtpu (recorded by scripts/make_step_modules.py; tests/test_validation_steps.py compares)",
    "memory_analysis()": "JAX's own API, which needs libtpu (recorded by scripts/make_step_modules.py; tests/test_validation_steps.py compares)",
    "result.report()": "run by docs/hlo.md's step-report block",
    "netsim.report(result)": "run by docs/hlo.md's step-report block",
    "run_hlo(..., model={...})": (
        "from netsim.programs.hlo.run import run_hlo\n"
        "shape = {'params': 1e9, 'layers': 2, 'heads': 8, 'head_dim': 128, 'seq': 2048, 'per_device_batch': 4}\n"
        "r = run_hlo('scenarios/programs/hlo/tpu/v5e_4x4/mlp.txt', 'tpu-v5e:4x4', model=shape)\n"
        'assert r.report().flops_source.startswith("MaxText\'s formula") and r.report().tokens_per_s > 0'
    ),
    "netsim.report(result, model={...})": (
        "from netsim.programs.hlo.run import run_hlo\n"
        "shape = {'params': 1e9, 'layers': 2, 'heads': 8, 'head_dim': 128, 'seq': 2048, 'per_device_batch': 4}\n"
        "step = netsim.report(run_hlo('scenarios/programs/hlo/tpu/v5e_4x4/mlp.txt', 'tpu-v5e:4x4'), model=shape)\n"
        "assert step.flops_per_device == 6 * 1e9 * 2048 * 4 + 12 * 8 * 2 * 128 * 2048**2 * 4  # MaxText's formula"
    ),
}

STUDY = {
    "name": "tiny",
    "base": {"topology": "ring4", "collective": {"op": "all_gather"}, "input": {"bytes_per_device": "1 KiB"}},
    "grid": {"algorithm": ["ring", "bidirectional_ring"]},
}


def documented_calls() -> dict[str, str]:
    """Inline code in the docs' prose (fenced blocks left out) that reads as a call, whitespace folded."""
    found: dict[str, str] = {}
    for doc in DOCS:
        prose = re.sub(r"^```.*?^```", "", doc.read_text(encoding="utf-8"), flags=re.S | re.M)
        for span in re.findall(r"`([^`]+)`", prose):
            code = " ".join(span.split())
            if re.match(r"^[A-Za-z_][\w.]*\(.*\)", code):
                found.setdefault(code, doc.name)
    return found


def test_every_documented_call_has_a_runnable_twin():
    found = documented_calls()
    missing = [f"{doc}: {code}" for code, doc in found.items() if code not in CALLS and code not in NOT_CALLS]
    assert not missing, "documented calls with no twin in CALLS:\n" + "\n".join(missing)
    stale = [code for code in CALLS if code not in found]
    assert not stale, f"twins of calls the docs no longer make: {stale}"


def test_every_documented_call_runs_and_does_what_its_sentence_says(tmp_path):
    program = [textwrap.dedent(SET_UP), f"STUDY = {STUDY!r}", "import math\ndef pytest_approx(v):\n    return _Near(v)"]
    program.append("class _Near:\n    def __init__(self, v): self.v = v\n    def __eq__(self, o): return math.isclose(o, self.v, rel_tol=1e-9)")
    for code, twin in CALLS.items():
        program.append(f"print({code!r}, flush=True)\n{twin}")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MPLBACKEND": "Agg"}
    (tmp_path / "scenarios").symlink_to(ROOT / "scenarios")
    (tmp_path / "topologies").symlink_to(ROOT / "topologies")
    done = subprocess.run([sys.executable, "-c", "\n".join(program)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{done.stdout[-1500:]}\n{done.stderr[-3000:]}"
    assert done.stdout.count("\n") == len(CALLS)


def test_a_tuple_of_coordinates_gives_the_device_index_as_the_readme_says():
    for topology in (netsim.torus((4, 4)), netsim.mesh((2, 3, 4)), netsim.ring(5)):
        coords = [topology.coord(d) for d in range(topology.n_devices)]
        assert [topology.device(c) for c in coords] == list(range(topology.n_devices))
        assert topology.device(list(coords[-1])) == topology.n_devices - 1
    with pytest.raises(ValueError, match=r"^coordinates \(4, 0\) are not on torus4x4 \(dims \(4, 4\)\)$"):
        netsim.torus((4, 4)).device((4, 0))
    with pytest.raises(ValueError, match=r"^coordinates \(1,\) are not on torus4x4"):
        netsim.torus((4, 4)).device((1,))


def test_program_as_data_keeps_the_data_mode():
    program = Program("g", {"X": 4}, {"A": Sharded((8, 4), "bfloat16", (("X",), ()))}, (Op.of("g", "all_gather", ("A",), "B", axes=("X",), tiled=True),))
    ran = netsim.run_program(program, "tpu-v5e:4x1")
    written = program_as_data(program, "tpu-v5e:4x1")
    assert written["data"] == "values" and netsim.run_program(written).verified == ran.verified is True
    assert program_as_data(program, "tpu-v5e:4x1", data="none")["data"] == "none"
    # a program file: its own mode, seed and topology
    for path in ("scenarios/programs/megatron_mlp.yaml", "scenarios/programs/hlo/../allgather_matmul.yaml"):
        loaded = load_program(path)
        data = yaml.safe_load(yaml.safe_dump(program_as_data(loaded)))
        assert (data["data"], data["seed"], data["topology"]) == (loaded.data, loaded.seed, loaded.topology)
        assert program_from_data(data).program == loaded.program
    timing = program_from_data({**yaml.safe_load((ROOT / "scenarios/programs/megatron_mlp.yaml").read_text()), "data": "none"})
    assert program_as_data(timing)["data"] == "none"


def test_the_collective_matmul_equals_the_gathered_one_as_the_readme_says():
    gathered = netsim.run_program(ROOT / "scenarios/programs/allgather_matmul.yaml").output["C"]
    overlapped = netsim.run_program(ROOT / "scenarios/programs/collective_matmul.yaml").output["C"]
    assert gathered.dtype.name == overlapped.dtype.name == "bfloat16"
    differ = gathered != overlapped
    largest = np.abs(gathered.astype(np.float32)).max()
    biggest_difference = np.abs(gathered.astype(np.float32) - overlapped.astype(np.float32)).max()
    readme = " ".join(" ".join(doc.read_text(encoding="utf-8") for doc in DOCS).split())  # the README and docs/
    # Bounds, not counts: which float32 sums land near a bfloat16 rounding boundary depends on the order the
    # BLAS library sums in (its build, its threads, the CPU): 500 elements here, 444 or 412 elsewhere.
    claim = (
        f"fewer than 0.1% of the {differ.size:,} elements of `C` differ (how many depends on the BLAS library, its threads and the CPU), "
        "each by at most one rounding step at max|C| (2^-7 of it): most by one rounding step, the rest near zero, where the sums cancel"
    )
    assert claim in readme, claim
    assert differ.mean() < 1e-3
    # one rounding step: bfloat16 numbers in [2^k, 2^(k+1)) are 2^(k-7) apart, so their bit patterns (same sign) differ by 1
    assert biggest_difference <= 2.0 ** (np.floor(np.log2(largest)) - 7) <= 2.0**-7 * largest
    a, b = (c.view(np.uint16)[differ].astype(np.int64) for c in (gathered, overlapped))
    assert 2 * int((np.abs(a - b) == 1).sum()) > int(differ.sum())  # most
    near_zero = np.abs(gathered.astype(np.float32))[differ][np.abs(a - b) > 1]
    assert near_zero.size == 0 or near_zero.max() < 1e-3 * largest  # where the float32 sums cancel
