"""Several slices: hosts turned to fit the slice, hierarchical labels and bounds, calibrated terms on every slice."""

from __future__ import annotations

import pytest
import yaml

import netsim
from netsim.scenario import scenario_from_data


def _dcn_psum(topology: str, ici: int) -> netsim.Result:
    data = {
        "name": "s",
        "topology": topology,
        "mesh": {"shape": {"dcn": 2, "ici": ici}},
        "collective": {"op": "psum", "axes": ["dcn"]},
        "input": {"bytes_per_device": "1 MiB", "dtype": "float32"},
        "data": "none",
    }
    return netsim.simulate(scenario_from_data(data, "s.yaml"))


@pytest.mark.parametrize("generation", ["tpu-v5e", "tpu-v6e"])
def test_a_2x4_slice_is_one_host_of_8_chips_either_way_round(generation):
    wide, tall = _dcn_psum(f"{generation}:2x4x2slices", 8), _dcn_psum(f"{generation}:4x2x2slices", 8)
    assert wide.topology_obj.device_host == tall.topology_obj.device_host == (0,) * 8 + (1,) * 8
    assert wide.time == tall.time


RING = [0, 1, 2, 3, 7, 11, 15, 14, 10, 6, 5, 9, 13, 12, 8, 4]
"""A Hamiltonian cycle of a 4x4 slice: its members are a ring of neighbours."""


def _hierarchical_psum(devices: list[int] | None) -> netsim.Result:
    mesh = {"shape": {"dcn": 2, "ici": 16}, **({"devices": devices + [16 + d for d in devices]} if devices else {})}
    data = {
        "name": "s",
        "topology": "tpu-v5e:4x4x2slices",
        "mesh": mesh,
        "collective": {"op": "psum", "axes": ["dcn", "ici"]},
        "algorithm": "hierarchical",
        "input": {"bytes_per_device": "1 MiB", "dtype": "float32"},
        "data": "none",
    }
    return netsim.simulate(scenario_from_data(data, "s.yaml"))


def test_hierarchical_psum_is_exact_only_where_each_slice_is_a_ring_of_neighbours():
    from netsim.analysis.why import analyse

    ring, row_major = analyse(_hierarchical_psum(RING)), _hierarchical_psum(None)
    assert ring.estimate.kind == "exact" and ring.ratio == pytest.approx(1, abs=1e-9)
    bound = analyse(row_major).estimate  # rows of 4 joined end to start: 3 -> 4 is two hops
    assert bound.kind == "lower_bound" and bound.time_s * 1.2 < row_major.time


def _program(tmp_path, devices: list[int] | None) -> str:
    mesh = {"shape": {"dcn": 2, "ici": 16}, **({"devices": devices + [16 + d for d in devices]} if devices else {})}
    program = {
        "name": "h",
        "topology": "tpu-v5e:4x4x2slices",
        "mesh": mesh,
        "arrays": {"x": {"shape": [32, 8192], "dtype": "float32", "sharding": [None, None], "partial": ["dcn", "ici"]}},
        "ops": [{"name": "p", "op": "psum", "in": "x", "axes": ["dcn", "ici"], "algorithm": "hierarchical", "out": "y"}],
        "data": "none",
    }
    path = tmp_path / f"h{bool(devices)}.yaml"
    path.write_text(yaml.safe_dump(program))
    return str(path)


def test_a_programs_hierarchical_psum_gets_the_hierarchical_form_not_the_flat_rings(tmp_path):
    from netsim.analysis.program_stats import program_stats

    ring = program_stats(netsim.run_program(_program(tmp_path, RING))).ops[0]
    assert (ring.estimate_kind, ring.bound) == ("exact", "DCN") and ring.estimate_s == pytest.approx(ring.time_s, rel=1e-9)
    row_major = program_stats(netsim.run_program(_program(tmp_path, None))).ops[0]
    assert row_major.estimate_kind == "lower_bound" and row_major.estimate_s <= row_major.time_s
    assert "on a group across 2 slices (≥ max(a chain" in row_major.why and row_major.why.count("[ICI ") == 1


def _gather(topology: str, calibration: str, axes: list[str], shape: dict) -> netsim.Result:
    data = {
        "name": "s",
        "topology": topology,
        "mesh": {"shape": shape},
        "collective": {"op": "all_gather", "axes": axes},
        "input": {"bytes_per_device": "1 MiB", "dtype": "float32"},
        "data": "none",
        "calibration": calibration,
    }
    return netsim.simulate(scenario_from_data(data, "s.yaml"))


def test_calibrated_slices_keep_the_generations_measured_ici_terms():
    from netsim.analysis.why import analyse
    from netsim.network.calibration import CALIBRATIONS

    one = _gather("tpu-v5e:4x4", "calibrated", ["ici"], {"ici": 16})
    two = _gather("tpu-v5e:4x4x2slices", "calibrated", ["ici"], {"dcn": 2, "ici": 16})
    nominal = _gather("tpu-v5e:4x4x2slices", "nominal", ["ici"], {"dcn": 2, "ici": 16})
    assert two.time == one.time > nominal.time  # the in-slice gather as on one slice: links at 0.95, the fixed cost paid
    across, across_nominal = (_gather("tpu-v5e:4x4x2slices", mode, ["dcn"], {"dcn": 2, "ici": 16}) for mode in ("calibrated", "nominal"))
    # over the DCN, whose links were never measured: the nominal time plus the fixed cost per collective, and its exact form says so
    assert across.time == pytest.approx(across_nominal.time + CALIBRATIONS["tpu-v5e"].collective_overhead_s, rel=1e-12)
    estimate = analyse(across).estimate
    assert estimate.kind == "exact" and estimate.time_s == pytest.approx(across.time, rel=1e-9)


def test_hierarchical_with_axis_index_groups_is_refused_not_played_as_a_flat_ring(tmp_path):
    import numpy as np
    from typer.testing import CliRunner

    from netsim.cli.main import app

    path = tmp_path / "g.yaml"
    for topology in ("tpu-v5e:2x2x2slices", "tpu-v5e:2x4"):  # across slices, and on one slice
        path.write_text(
            f"name: g\ntopology: {topology}\ncollective: {{op: psum, axis_index_groups: [[0, 1, 2, 3, 4, 5, 6, 7]]}}\n"
            "algorithm: hierarchical\ninput: {bytes_per_device: 1 KiB, dtype: float32}\ndata: none\n"
        )
        out = CliRunner().invoke(app, ["run", str(path)])
        assert out.exit_code == 2
        assert out.output == (
            f"error: {path}: algorithm: hierarchical runs over mesh axes (the DCN's first, then the slice's), and axis_index_groups has none;"
            " name the axes (collective.axes: [dcn, ici] with a mesh), or pick another algorithm\n"
        )
    with pytest.raises(ValueError) as error:
        netsim.psum(np.ones((8, 4), np.float32), [list(range(8))], "tpu-v5e:2x2x2slices", "hierarchical")
    assert str(error.value) == (
        "hierarchical runs over mesh axes (the DCN's first, then the slice's), and groups given as device lists have none;"
        " name the axes (e.g. axes: [dcn, ici] with a mesh), or pick another algorithm"
    )


@pytest.mark.parametrize("data", ["none", "values"])
def test_the_memory_estimate_of_a_hierarchical_run_is_within_2x_of_its_measured_peak(data):
    import gc
    import tracemalloc

    from netsim.scenario.loading import memory_estimate

    def scenario(topology: str, shape: dict) -> netsim.Scenario:
        spec = {"name": "m", "topology": topology, "mesh": {"shape": shape}, "collective": {"op": "psum", "axes": list(shape)}, "algorithm": "hierarchical"}
        return scenario_from_data({**spec, "input": {"bytes_per_device": "64 KiB", "dtype": "float32"}, "data": data}, "m")

    netsim.simulate(scenario("tpu-v5e:2x2x2slices", {"dcn": 2, "ici": 4}))  # imports and caches: not part of the run's peak
    measured = scenario("tpu-v5e:4x4x2slices", {"dcn": 2, "ici": 16})
    gc.collect()
    tracemalloc.start()
    try:
        netsim.simulate(measured)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    estimate = memory_estimate(measured).total
    assert peak <= estimate <= 2 * peak, f"estimate {estimate} against the measured peak {peak}"


def test_links_that_never_queued_show_no_rounding_residue_as_a_wait():
    from netsim.analysis.stats import run_stats

    result = _hierarchical_psum(None)  # 4x4x2slices: sums of latencies taken in different orders differ by ~1e-22 s
    links = run_stats(result).links
    assert not [(u.name, u.wait_s, u.longest_queue) for u in links if 0 < u.wait_s < 1e-12]
    assert all((u.wait_s > 0) == (u.longest_queue > 0) for u in links)


def test_hierarchical_with_the_dcn_axis_second_says_so():
    from netsim.analysis.why import analyse

    data = {
        "name": "s",
        "topology": "tpu-v5e:4x4x2slices",
        "mesh": {"shape": {"dcn": 2, "ici": 16}},
        "collective": {"op": "psum", "axes": ["ici", "dcn"]},
        "algorithm": "hierarchical",
        "input": {"bytes_per_device": "1 MiB", "dtype": "float32"},
        "data": "none",
    }
    second = netsim.simulate(scenario_from_data(data, "s.yaml"))
    assert second.time > 2.5 * _hierarchical_psum(None).time  # 357.5 us against 126.4 us with the DCN axis first
    assert analyse(second).estimate.formula.endswith(
        " (the DCN axis is not the group's first, which hierarchical takes as the slow network's: list it first in axes for the plan XLA uses across slices)"
    )


def _psum_across_slices(topology: str, ici: int):
    """A timing-only psum of 1 MiB a device over the DCN axis of two slices and the ICI axis within them."""
    data = {
        "name": "e",
        "topology": topology,
        "mesh": {"shape": {"dcn": 2, "ici": ici}},
        "collective": {"op": "psum", "axes": ["dcn", "ici"]},
        "input": {"bytes_per_device": "1 MiB", "dtype": "float32"},
        "data": "none",
    }
    return netsim.simulate(scenario_from_data(data, "e.yaml"))


def test_explain_and_run_give_one_closed_form_across_slices():
    from netsim.analysis.why import analyse
    from netsim.network.units import format_seconds
    from netsim.teaching.explain import explain

    result = _psum_across_slices("tpu-v5e:2x2x2slices", 4)
    bound = analyse(result).estimate
    assert bound.kind == "lower_bound"
    text = " ".join(explain(result).split())
    assert f"[ICI 4 us | DCN 63.943 us]: {format_seconds(bound.time_s)} ({bound.time_s!r} s)" in text


def test_explain_of_a_32_device_psum_is_summarised_not_thousands_of_lines():
    from netsim.teaching.explain import explain
    from netsim.teaching.explain_scale import summary

    result = _psum_across_slices("tpu-v5e:4x4x2slices", 16)
    text = explain(result)
    assert text == summary(result) and len(text.splitlines()) < 200  # it was 12,515 lines or more, step by step
