"""Programs: collectives and compute on a sharded mesh, timed exactly and checked against NumPy."""

from __future__ import annotations

import re

import numpy as np
import pytest

import netsim
from netsim.analysis.program_stats import program_stats
from netsim.network.device_mesh import Mesh
from netsim.network.presets import tpu_slice
from netsim.programs.model import Op, Program, ProgramError, Sharded

V5E = tpu_slice("tpu-v5e:4x4")
PEAK, HBM = V5E.device(0)["peak_flops"], V5E.device(0)["hbm_bandwidth_Bps"]


def _gather_matmul(i: int, j: int, k: int, overlap: str | None = None, dtype: str = "bfloat16") -> Program:
    arrays = {"A": Sharded((i, j), dtype, ((), ("X",))), "B": Sharded((j, k), dtype)}
    if overlap:
        ops = (Op.of("mm", "matmul", ("A", "B"), "C", overlap=overlap),)
    else:
        ops = (Op.of("gather", "all_gather", ("A",), "A_full", axes=("X",), axis=1, tiled=True), Op.of("mm", "matmul", ("A_full", "B"), "C"))
    return Program("gm", {"X": 4, "Y": 4}, arrays, ops)


def _gather_alone(i: int, j: int) -> float:
    """The same all_gather as a collective on its own (the Python API a scenario runs)."""
    mesh = Mesh({"X": 4, "Y": 4}, V5E)
    return netsim.all_gather(np.zeros((16, i, j // 4), np.float16), axis=1, tiled=True, axis_index_groups=mesh.groups("X"), topology=V5E).time


def _roofline(m: int, k: int, n: int, size: int = 2) -> float:
    return max(2 * m * k * n / PEAK, (m * k + k * n + m * n) * size / HBM)


@pytest.mark.parametrize("shape", [(256, 1024, 512), (64, 512, 2048)])
def test_a_collective_alone_takes_what_it_takes_as_a_collective(shape):
    i, j, _ = shape
    gather = Op.of("g", "all_gather", ("A",), "B", axes=("X",), axis=1, tiled=True)
    program = Program("g", {"X": 4, "Y": 4}, {"A": Sharded((i, j), "bfloat16", ((), ("X",)))}, (gather,))
    for data in ("values", "none"):
        assert netsim.run_program(program, V5E, data=data).time == _gather_alone(i, j)


@pytest.mark.parametrize("shape", [(256, 1024, 512), (2048, 256, 64)])
def test_without_overlap_the_time_is_the_gather_plus_the_matmul_roofline(shape):
    i, j, k = shape
    result = netsim.run_program(_gather_matmul(i, j, k), V5E)
    assert result.time == pytest.approx(_gather_alone(i, j) + _roofline(i, j, k), rel=1e-12)
    assert result.verified and set(result.output) == {"A_full", "C"}


@pytest.mark.parametrize("shape", [(256, 1024, 512), (2048, 1024, 2048)])
def test_a_collective_matmul_overlaps_within_its_bounds(shape):
    i, j, k = shape
    data = "values" if i * k <= 256 * 512 else "none"
    comm = _gather_alone(i, j)
    overlapped = netsim.run_program(_gather_matmul(i, j, k, "collective"), V5E, data=data)
    # four steps per device, each block [i, j/4] times the rows [j/4, k] of B, writing C [i, k] once
    step = max(2 * i * (j // 4) * k / PEAK, (i * (j // 4) + (j // 4) * k + i * k) * 2 / HBM)
    assert all(unit.busy_s == pytest.approx(4 * step, rel=1e-12) for unit in overlapped.leaves[0].playback.compute_units.values())
    compute = 4 * step
    assert max(comm, compute) <= overlapped.time < comm + compute
    assert overlapped.time < netsim.run_program(_gather_matmul(i, j, k), V5E, data="none").time
    assert overlapped.verified == (data == "values")


def test_values_equal_numpy_unsharded():
    result = netsim.run_program(_gather_matmul(64, 256, 32), V5E)
    rng = np.random.default_rng(0)
    from netsim.semantics.program_values import dtype_of

    bf16 = dtype_of("bfloat16")
    a = rng.standard_normal((64, 256), dtype=np.float32).astype(bf16)
    b = rng.standard_normal((256, 32), dtype=np.float32).astype(bf16)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    # within one bfloat16 rounding step at max|C| of the exact product, not bit-equal to one float32 sum order:
    # which sums land near a rounding boundary depends on the BLAS library, its threads and the CPU
    step = 2.0 ** (np.floor(np.log2(np.abs(exact).max())) - 7)
    assert all(np.abs(result.output["C"][d].astype(np.float64) - exact).max() <= step for d in range(16))
    assert all(np.array_equal(result.output["A_full"][d], a) for d in range(16))


def test_a_bad_program_names_the_op_and_the_field():
    program = Program("bad", {"X": 4}, {"A": Sharded((4, 8))}, (Op.of("mm", "matmul", ("A", "Q"), "C"),))
    with pytest.raises(ProgramError, match=r"^op 'mm': in: no array 'Q'; known so far: A$"):
        program.arrays_after()


def _every_op() -> Program:
    arrays = {"A": Sharded((16, 8), "float32", (("X",), ("Y",))), "W": Sharded((8, 12), "float32", (("Y",), ()))}
    ops = (
        Op.of("a2a", "all_to_all", ("A",), "A2", axes=("X",), split_axis=1, concat_axis=0, tiled=True),
        Op.of("back", "all_to_all", ("A2",), "A3", axes=("X",), split_axis=0, concat_axis=1, tiled=True),
        Op.of("shift", "ppermute", ("A3",), "A4", axes=("X",), perm=((0, 1), (1, 2), (2, 3), (3, 0))),
        Op.of("e", "einsum", ("A4", "W"), "P", subscripts="ik,kj->ij"),
        Op.of("sum", "psum", ("P",), "Q", axes=("Y",)),
        Op.of("rs", "psum_scatter", ("P",), "R", axes=("Y",), scatter_dimension=1, tiled=True),
        Op.of("other", "compute", ("Q",), None, flops=1e9, bytes=1e6),
        Op.of("g", "all_gather", ("R",), "R2", axes=("Y",), axis=1, tiled=True, after=("other",)),
    )
    return Program("every_op", {"X": 4, "Y": 2}, arrays, ops)


CHIP = netsim.torus((4, 2)).with_device({"peak_flops": 1e12, "hbm_bandwidth_Bps": 1e11})


def test_every_op_runs_with_values_and_both_engines_agree():
    program = _every_op()
    arrays = program.arrays_after()
    assert arrays["A2"].sharding == ((), ("Y", "X")) and arrays["P"].partial == ("Y",) and arrays["R"].sharding == (("X",), ("Y",))
    runs = [netsim.run_program(program, CHIP, engine=engine) for engine in ("processes", "fast")]
    assert runs[0].time == runs[1].time and runs[0].output_digest == runs[1].output_digest
    assert runs[0].verified and all(d <= t for d, t in runs[0].program.checks.values())
    a = np.asarray(runs[0].output["A4"])
    a3 = np.asarray(runs[0].output["A3"])
    mesh = Mesh({"X": 4, "Y": 2}, CHIP)
    for x in range(4):  # the shift moved each shard one position along X
        for y in range(2):
            assert np.array_equal(a[mesh.devices[(x + 1) % 4, y]], a3[mesh.devices[x, y]])
    # the compute step waits for psum on its chip, and the gather waits for the compute step there
    stats = program_stats(runs[0])
    by_name = {op.name: op for op in stats.ops}
    assert by_name["other"].time_s == pytest.approx(1e9 / 1e12) and by_name["other"].bound == "compute"
    assert by_name["g"].start_s >= by_name["other"].start_s + 1e-3


def test_the_value_check_catches_a_chunk_in_the_wrong_place(monkeypatch):
    from netsim.checks.invariants import InvariantError
    from netsim.programs import values

    real = values._fill

    def swapped(record, index, local, pending):  # give every device its neighbour's input
        real(record, index, local[1:] + local[:1], pending)

    monkeypatch.setattr(values, "_fill", swapped)
    with pytest.raises(InvariantError, match="array A_full differs from the unsharded NumPy computation"):
        netsim.run_program(_gather_matmul(64, 256, 32), V5E)


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        ((Op.of("s", "psum", ("A",), "B", axes=("Y",)),), "op 's': axes: the input is not a partial sum over 'Y': there is nothing to sum"),
        ((Op.of("s", "psum", ("A",), "B", axes=("X",)),), "op 's': axes: the input is split over 'X': summing over it would add different blocks"),
        ((Op.of("g", "all_gather", ("A",), "B", axes=("X",), axis=1),), "op 'g': tiled: programs run all_gather tiled"),
        ((Op.of("m", "matmul", ("A", "A"), "B"),), "op 'm': in: the contracting dimension is 8 in one operand and 16 in the other"),
        ((Op.of("m", "matmul", ("A", "W"), "B", overlap="collective"),), "op 'm': overlap: a collective matmul is a matmul whose first operand is split"),
        ((Op.of("c", "compute", (), None),), "op 'c': flops: give flops and/or bytes, or seconds"),
        ((Op.of("c", "compute", (), None, seconds=1e-6), Op.of("c", "compute", (), None, seconds=1e-6)), "op 'c': name: two ops have this name"),
    ],
)
def test_a_bad_program_says_which_op_and_field(ops, message):
    arrays = {"A": Sharded((16, 8), "float32", (("X",), ())), "W": Sharded((8, 12))}
    with pytest.raises(ProgramError, match="^" + message.replace("(", r"\(")):
        Program("bad", {"X": 4, "Y": 2}, arrays, ops).arrays_after()


def test_a_compute_step_needs_the_chip_rates():
    program = Program("p", {"X": 2}, {"A": Sharded((4, 4))}, (Op.of("m", "matmul", ("A", "A"), "B"),))
    with pytest.raises(ProgramError, match=r"^op 'm': in: counts FLOPs but ring2's chips have no peak_flops"):
        netsim.run_program(program, netsim.ring(2))


ROWS = tuple(tuple(range(i, i + 4)) for i in range(0, 16, 4))
COLUMNS = tuple(tuple(range(i, 16, 4)) for i in range(4))


def test_collectives_over_explicit_groups_run_timing_only_as_the_same_collective():
    """Collectives on device shapes over replica groups (as an HLO module has them), with compute between."""
    arrays = {"a": Sharded((128, 256), "bfloat16")}
    gather = Op.of("ag", "all_gather", ("a",), "b", groups=ROWS, axis=0, tiled=True)
    alone = netsim.all_gather(np.zeros((16, 128, 256), np.float16), axis=0, tiled=True, axis_index_groups=[list(g) for g in ROWS], topology=V5E)
    assert netsim.run_program(Program("g", {"d": 16}, arrays, (gather,)), V5E, data="none").time == alone.time
    ops = (
        gather,
        Op.of("work", "compute", ("b",), None, seconds=5e-6),
        Op.of("rs", "psum_scatter", ("b",), "c", groups=COLUMNS, scatter_dimension=0, tiled=True, after=("work",)),
        Op.of("shift", "ppermute", ("c",), "d", perm=tuple((i, (i + 1) % 16) for i in range(16))),
    )
    program = Program("hlo_like", {"d": 16}, arrays, ops)
    shapes = {name: array.shape for name, array in program.arrays_after().items()}
    assert shapes == {"a": (128, 256), "b": (512, 256), "c": (128, 256), "d": (128, 256)}
    stats = program_stats(netsim.run_program(program, V5E, data="none"))
    by_name = {op.name: op for op in stats.ops}
    assert by_name["work"].time_s == pytest.approx(5e-6, rel=1e-12) and by_name["rs"].start_s >= by_name["ag"].start_s + alone.time - 1e-12
    with pytest.raises(ProgramError, match=r"^op 'ag': groups: a collective over explicit groups runs timing-only"):
        netsim.run_program(program, V5E)
    sharded = {"a": Sharded((128, 256), "bfloat16", (("d",), ()))}
    with pytest.raises(ProgramError, match=r"^op 'ag': groups: a collective over explicit groups takes an array without sharding"):
        Program("bad", {"d": 16}, sharded, (gather,)).arrays_after()


def test_lowering_a_256_chip_program_stays_linear_in_its_transfers():
    """Counted, not timed: every transfer waits for a bounded number of steps, however many ops came before."""
    from netsim.programs.lowering import lower

    ops = (
        Op.of("g", "all_gather", ("A",), "A2", axes=("X",), axis=1, tiled=True),
        Op.of("mm", "matmul", ("A2", "B"), "C"),
        Op.of("g2", "all_gather", ("C",), "C2", axes=("Y",), axis=0, tiled=True),
        Op.of("g3", "all_gather", ("A2",), "A3", axes=("Y",), axis=0, tiled=True),
    )
    arrays = {"A": Sharded((4096, 8192), "bfloat16", (("Y",), ("X",))), "B": Sharded((8192, 4096), "bfloat16")}
    program = Program("big", {"X": 16, "Y": 16}, arrays, ops)
    low = lower(program, Mesh(program.mesh, tpu_slice("tpu-v5e:16x16")))
    transfers = low.schedule.transfers
    assert len(transfers) == 3 * 16 * 16 * 15 * 2  # three gathers over 16, two pieces per block (15 blocks reach each chip)
    work = [c for c in low.schedule.computes if not c.join]
    joins = [c for c in low.schedule.computes if c.join]
    assert len(work) == 256
    # g3 waits for A2, whose 30 pieces arrived by g on each chip: one join of them per chip
    assert len(joins) == 256 and {len(c.deps) for c in joins} == {30}
    assert int(transfers.dep_ptr[-1]) <= 12 * len(transfers)


def _dependency_entries(n: int, layers: int = 2) -> tuple[int, int]:
    """Dependency entries and steps (transfers + compute steps) of an FSDP program on an n x n v5e slice."""
    from netsim.programs.lowering import lower

    arrays = {"x": Sharded((64 * n * n, 256), "bfloat16", (("X", "Y"), ()))}
    ops = []
    for k in range(layers):
        arrays[f"W{k}"] = Sharded((256, 256), "bfloat16", (("X", "Y"), ()))
        after = (f"g{k - 1}",) if k else ()
        ops.append(Op.of(f"g{k}", "all_gather", (f"W{k}",), f"W{k}f", axes=("X", "Y"), axis=0, tiled=True, after=after))
    for k in range(layers):
        ops.append(Op.of(f"mm{k}", "matmul", ("x" if not k else f"h{k - 1}", f"W{k}f"), f"h{k}"))
    program = Program("fsdp", {"X": n, "Y": n}, arrays, tuple(ops))
    low = lower(program, Mesh(program.mesh, tpu_slice(f"tpu-v5e:{n}x{n}")))
    transfers, computes = low.schedule.transfers, low.schedule.computes
    entries = int(transfers.dep_ptr[-1]) + sum(len(c.deps) for c in computes)
    return entries, len(transfers) + len(computes)


def test_dependencies_do_not_grow_with_the_arrivals_an_op_waits_for():
    """Counted: a 2-layer FSDP program's dependency entries per step are the same at 16 and at 256 devices.

    The second gather waits for the first (``after``): each of its transfers leaving a chip
    waits for one join of the first gather's arrivals there, not for every arrival.
    Measured: 2.74 entries per step at 16 devices, 2.99 at 256; with every arrival as a
    dependency it was 31.3 and 511.
    """
    small, small_steps = _dependency_entries(4)
    big, big_steps = _dependency_entries(16)
    assert big_steps > 15 * small_steps
    assert big / big_steps <= 1.25 * small / small_steps


def test_a_program_built_in_python_writes_out_as_a_file_and_reads_back_the_same():
    import yaml

    from netsim.programs.files import load_program, program_as_data, program_from_data

    for program, topology in ((_every_op(), "tpu-v5e:2x4"), (_gather_matmul(64, 256, 32, "collective"), "tpu-v5e:4x4")):
        data = yaml.safe_load(yaml.safe_dump(program_as_data(program, topology)))
        assert program_from_data(data).program == program
    bundled = load_program("scenarios/programs/megatron_mlp.yaml")
    again = program_from_data(program_as_data(bundled.program, "tpu-v5e:4x4", data="values", seed=2))
    assert again.program == bundled.program
    assert netsim.run_program(again).time == bundled.expected.time_s


@pytest.mark.parametrize("source", ["scenarios/programs/fsdp_two_layers.yaml", "scenarios/programs/hlo/mlp.yaml"])
def test_every_program_and_hlo_run_passes_the_invariant_checks(source, monkeypatch):
    """Programs and HLO modules are checked as collectives are: check_playback runs, compute steps included."""
    import netsim.checks.invariants as invariants

    seen = []
    real = invariants._check_computes
    monkeypatch.setattr(invariants, "_check_computes", lambda arrays: (seen.append((len(arrays.src), len(arrays.started))), real(arrays))[1])
    if "/hlo/" in source:
        from netsim.programs.hlo.run import run_hlo_program

        result = run_hlo_program(source)
    else:
        result = netsim.run_program(source, data="none")
    schedule = result.leaves[0].schedule
    assert seen == [(len(schedule.transfers), len(schedule.computes))] and len(schedule.computes) > 0


@pytest.mark.parametrize("data", ["values", "none"])
def test_a_program_gathers_over_a_pod_with_bundles_as_the_collective_does(data):
    """multiaxis_bundled in a program: the bundled scenario's schedule and time, bit for bit, and the values NumPy gives."""
    from netsim.scenario import load_scenario

    arrays = {"A": Sharded((64 * 12288,), "float32", (("X", "Y", "Z"),))}
    ops = (Op.of("g", "all_gather", ("A",), "A_full", axes=("X", "Y", "Z"), axis=0, tiled=True, algorithm="multiaxis_bundled"),)
    program = Program("pod_gather", {"X": 4, "Y": 4, "Z": 4}, arrays, ops)
    result = netsim.run_program(program, "tpu-v4:4x4x4", data=data)
    scenario = load_scenario("scenarios/allgather_tpu_v4_4x4x4_bundled.yaml")
    assert result.time == scenario.expected.time_s == 2.0468800000000003e-05
    assert len(result.leaves[0].schedule.transfers) == 3456 and result.leaves[0].schedule.transfers.bundles
    if data == "values":
        assert result.verified and result.output["A_full"].shape == (64, 64 * 12288)
    with pytest.raises(ProgramError, match=r"^op 'cm': algorithm: multiaxis_bundled sends bundles, and a collective matmul"):
        matmul = Op.of("cm", "matmul", ("A2", "B"), "C", overlap="collective", algorithm="multiaxis_bundled")
        two = {"A2": Sharded((64, 64 * 8), "float32", ((), ("X", "Y", "Z"))), "B": Sharded((64 * 8, 8), "float32")}
        netsim.run_program(Program("cm", {"X": 4, "Y": 4, "Z": 4}, two, (matmul,)), "tpu-v4:4x4x4", data="none")


def test_a_program_too_big_for_memory_is_refused_before_it_plays_with_advice_it_has_not_taken(monkeypatch, tmp_path):
    """The estimate is checked before playing; a timing-only run is not told to run timing-only."""
    import yaml

    import netsim.checks.memory as memory

    monkeypatch.setattr(memory, "available_memory", lambda: 2**17)  # 128 KiB
    with open("scenarios/programs/fsdp_two_layers.yaml") as file:
        data = yaml.safe_load(file)
    for mode, advice in (("none", "use fewer devices or ops, or an algorithm with fewer steps"), ("values", "run it timing-only with `data: none`, or use")):
        path = tmp_path / f"p_{mode}.yaml"
        path.write_text(yaml.safe_dump({**data, "data": mode}))
        refused = rf"^{re.escape(str(path))}: data: this run needs about .* but only 128 KiB is available; {re.escape(advice)}"
        with pytest.raises(netsim.ScenarioError, match=refused):
            netsim.run_program(path)


def test_an_all_to_all_followed_by_a_permute_keeps_each_ops_blocks_apart():
    # an all-to-all's last member keeps its own last block (it never travels); the permute after it starts its pair 0
    # on that same device: the two ops' blocks must not share a number there (they did, and the block was overwritten)
    program = Program(
        "a2a_then_shift",
        {"X": 4},
        {"A": Sharded((8, 4), "int32", (("X",), ()))},
        (
            Op.of("a2a", "all_to_all", ("A",), "B", axes=("X",), split_axis=1, concat_axis=0, tiled=True),
            Op.of("shift", "ppermute", ("A",), "C", axes=("X",), perm=((3, 0), (0, 1), (1, 2), (2, 3))),
        ),
    )
    result = netsim.run_program(program, netsim.ring(4), seed=3)  # (it raised KeyError (0, 15, 0))
    assert result.verified
    b, c = np.asarray(result.output["B"]), np.asarray(result.output["C"])
    # all_to_all(split 1, concat 0): device d holds column d of every shard, stacked by source; the shards back from it
    shards = [np.concatenate([b[d][2 * s : 2 * s + 2] for d in range(4)], axis=1) for s in range(4)]
    for d in range(4):  # the shift: device d gets device d-1's shard
        assert np.array_equal(c[d], shards[(d - 1) % 4])
    assert [op.block_offset for op in result.program.lowered.ops] == [0, 16]  # 4 x 4 all-to-all blocks, then the pairs
