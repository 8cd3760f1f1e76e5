"""Result is frozen data of a run, a collective's or a program's; its readers compute once per result."""

from __future__ import annotations

import dataclasses
import gc
import weakref

import numpy as np
import pytest

import netsim
from netsim.analysis.path_stats import path_facts
from netsim.analysis.per_result import once_per_result
from netsim.analysis.stats import run_stats
from netsim.analysis.why import analyse
from netsim.engine.critical_path import CriticalPath
from netsim.result import ProgramRun


def test_a_result_cannot_be_changed_in_place_only_copied():
    result = netsim.all_gather(np.arange(8).reshape(4, 2), algorithm="ring")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.scenario = "mine"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.leaves[0].critical_path = None  # type: ignore[misc]
    mine = dataclasses.replace(result, scenario="mine")
    assert (mine.scenario, result.scenario, mine.time) == ("mine", None, result.time)
    assert isinstance(result.leaves, tuple) and not hasattr(result, "derived")


def test_kind_says_what_ran():
    collective = netsim.psum(np.arange(8).reshape(4, 2))
    program = netsim.run_program("scenarios/programs/allgather_matmul.yaml")
    assert (collective.kind, collective.program) == ("collective", None)
    assert program.kind == "program" and isinstance(program.program, ProgramRun)
    assert isinstance(program.leaves, tuple) and len(program.leaves) == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        program.program.checks = {}  # type: ignore[misc]


def test_kind_and_program_part_must_agree():
    result = netsim.psum(np.arange(8).reshape(4, 2))
    with pytest.raises(ValueError, match=r"^kind must be one of 'collective', 'program', got 'hlo'$"):
        dataclasses.replace(result, kind="hlo")
    with pytest.raises(ValueError, match=r"^a program's result needs a program part \(program=ProgramRun\(...\)\)$"):
        dataclasses.replace(result, kind="program")
    program = netsim.run_program("scenarios/programs/allgather_matmul.yaml")
    with pytest.raises(ValueError, match=r"^a collective's result has no program part \(program=None\), or is a program's \(kind='program'\)$"):
        dataclasses.replace(program, kind="collective")


def test_a_program_keeps_no_critical_path_and_statistics_walk_it_without_changing_the_result():
    program = netsim.run_program("scenarios/programs/allgather_matmul.yaml", data="none")
    assert program.leaves[0].critical_path is None
    assert program.critical_path == CriticalPath((), None, 0.0, program.time)
    walked = path_facts(program).critical_path.path
    arrivals = np.asarray(program.leaves[0].playback.arrived_at, float)
    assert walked.steps and walked.finish_s == arrivals.max() <= program.time  # up to the last arrival (a matmul may end the run)
    assert program.leaves[0].critical_path is None  # nothing written back into the result


def test_a_collective_keeps_its_path_joined_over_its_leaves():
    x = {"a": np.zeros((4, 64), np.float32), "b": np.zeros((4, 8), np.float32)}
    result = netsim.all_gather(x, algorithm="ring")
    first, second = (leaf.critical_path for leaf in result.leaves)
    assert result.critical_path.steps == first.steps + second.steps
    assert (result.critical_path.origin_s, result.critical_path.finish_s) == (first.origin_s, second.finish_s)
    assert second.finish_s == result.time  # the second leaf plays after the first: its path is shifted by the first's time
    assert second.steps[0].start >= first.finish_s


def test_statistics_and_analysis_are_computed_once_per_result():
    result = netsim.all_gather(np.zeros((4, 64), np.float32), axis_index_groups=[[0, 2], [1, 3]], algorithm="ring")
    assert run_stats(result) is run_stats(result) and analyse(result) is analyse(result)
    other = dataclasses.replace(result)  # a new object: computed again, equal
    assert run_stats(other) is not run_stats(result) and run_stats(other) == run_stats(result)
    assert run_stats(result, result.topology_obj) is not run_stats(result)  # with more arguments: not kept


def test_what_is_kept_goes_with_its_result():
    class Answer:
        pass

    calls = []

    @once_per_result
    def answer(result):
        calls.append(result.time)
        return Answer()

    result = netsim.psum(np.arange(8).reshape(4, 2))
    first = answer(result)
    assert answer(result) is first and len(calls) == 1
    assert answer.__wrapped__(result) is not first and len(calls) == 2  # the reader itself keeps nothing
    kept = weakref.ref(first)
    del first, result
    gc.collect()
    assert kept() is None  # freed with the result it was computed from
