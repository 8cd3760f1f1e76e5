"""Fuzz: mutations of every bundled HLO module and program file, through ``netsim program``.

Each mutated file runs as ``netsim program FILE`` (a program file) or ``netsim program
--hlo FILE --topology SLICE`` (a module) and must end within :data:`DEADLINE_S` with
exit 0 (the mutation is still a valid program: it ran) or exit 2 and one line naming the
file; never a traceback, never "bug in netsim". The mutations come from a fixed seed, so
every run tries the same files; :data:`SAMPLE` of them run (sized to keep the test to
tens of seconds on a loaded machine).
"""

from __future__ import annotations

import copy
import random
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT, sample_then_slow
from typer.testing import CliRunner

from netsim.cli.main import app
from netsim.scenario.errors import MAX_LISTED

runner = CliRunner()
HLO_DIR = ROOT / "scenarios" / "programs" / "hlo"
MODULES = sorted(HLO_DIR.glob("*.txt"))
PROGRAMS = sorted((ROOT / "scenarios" / "programs").glob("*.yaml")) + sorted(HLO_DIR.glob("*.yaml"))
DEADLINE_S = 30
SAMPLE = 320
"""Files tried per run, half modules and half program files."""

# A mutation: (label, content, the slice it runs on for a module, or None for a program file)
Case = tuple[str, "str | bytes", "str | None"]

NUMBERS = ["0", "-1", "-5", "1", "3", "99999999999", "1" + "0" * 30, "9" * 5000, "1e3", "nan", "0x10", ""]
NAMES = ["%nowhere", "%p", "%" + "n" * 5000, "%", "%add", "%0"]
OPCODES = ["frobnicate", "while", "call", "all-reduce", "all-gather-done", "async-start", "fusion", "tuple", "conditional", "custom-call", "parameter"]
SHAPES = [
    "f32[]",
    "q9[4]",
    "f32[-1]",
    "f32[2199023255552,2199023255552]",
    "f32[" + ",".join(["2"] * 70) + "]",
    "(" * 3000 + "f32[2]" + ")" * 3000,
    "f32[4",
    "(f32[2], (s32[], pred[]))",
]


def _topology(module: Path) -> str:
    return yaml.safe_load(module.with_suffix(".yaml").read_text())["topology"]


def _replace_one(rng: random.Random, text: str, pattern: str, choices: list[str]) -> str:
    found = list(re.finditer(pattern, text))
    if not found:
        return text
    match = rng.choice(found)
    return text[: match.start()] + rng.choice(choices) + text[match.end() :]


def hlo_mutations(rng: random.Random, path: Path) -> Iterator[tuple[str, str | bytes]]:
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    for k in range(6):
        yield f"number {k}", _replace_one(rng, text, r"(?<![A-Za-z_.%])\d+", NUMBERS)
    for k in range(3):
        yield f"name {k}", _replace_one(rng, text, r"%[A-Za-z0-9_.\-]+", NAMES)
    for k in range(3):
        yield f"opcode {k}", _replace_one(rng, text, r"(?<== )[a-z][a-z\-]*(?=\()|(?<=\} )[a-z][a-z\-]*(?=\()", OPCODES)
    for k in range(3):
        yield f"shape {k}", _replace_one(rng, text, r"[a-z]+\d*\[[\d,]*\](\{[^}]*\})?", SHAPES)
    header = rng.choice(["num_partitions=0", "num_partitions=99999999999", "replica_count=3", "num_partitions=x", "num_partitions=" + "9" * 5000])
    yield "header", re.sub(r"num_partitions=\d+", header, text, count=1)
    yield (
        "groups",
        _replace_one(
            rng,
            text,
            r"replica_groups=(\{[^=]*?\}\}|\[[^ ]*)",
            ["replica_groups={{0,1},{1,2}}", "replica_groups={}", "replica_groups=[2,3]<=[6]", "replica_groups={{0,99}}"],
        ),
    )
    yield "trip count", re.sub(r'"n":"\d+"', rng.choice(['"n":"-5"', '"n":"1000000000000"', '"n":"x"', '"n":"' + "9" * 5000 + '"']), text)
    for _ in range(2):
        drop = rng.randrange(len(lines))
        yield f"line {drop} dropped", "".join(lines[:drop] + lines[drop + 1 :])
    twice = rng.randrange(len(lines))
    yield f"line {twice} twice", "".join(lines[: twice + 1] + lines[twice:])
    a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
    swapped = lines[:]
    swapped[a], swapped[b] = swapped[b], swapped[a]
    yield f"lines {a} and {b} swapped", "".join(swapped)
    cut = rng.randrange(1, len(text))
    yield f"truncated at {cut}", text[:cut]
    chars = list(text)
    for _ in range(5):
        chars[rng.randrange(len(chars))] = rng.choice("{}()[],=%\"' \n0x")
    yield "characters flipped", "".join(chars)
    yield "binary", bytes(rng.getrandbits(8) for _ in range(200))
    yield "empty", ""


BAD_VALUES: list[Any] = [float("nan"), float("inf"), -1, 0, 10**30, "x", [1], {"a": 1}, None, True, "1e400 B", "9" * 5000]


def _leaves(data: Any, prefix: tuple = ()) -> Iterator[tuple]:
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _leaves(value, (*prefix, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _leaves(value, (*prefix, index))
    else:
        yield prefix


def _set(data: Any, where: tuple, value: Any) -> Any:
    out = copy.deepcopy(data)
    node = out
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    return out


def program_mutations(rng: random.Random, path: Path) -> Iterator[tuple[str, str | bytes]]:
    text = path.read_text()
    data = yaml.safe_load(text)
    data.pop("expected", None)
    leaves = [leaf for leaf in _leaves(data) if leaf]
    for leaf in rng.sample(leaves, min(10, len(leaves))):
        value = rng.choice(BAD_VALUES)
        yield f"{'.'.join(map(str, leaf))}={str(value)[:20]}", yaml.safe_dump(_set(data, leaf, value), sort_keys=False)
    for key in rng.sample(sorted(data), min(2, len(data))):
        yield f"missing {key}", yaml.safe_dump({k: v for k, v in data.items() if k != key}, sort_keys=False)
    if isinstance(data.get("ops"), list) and data["ops"]:
        ops = data["ops"]
        yield "ops twice", yaml.safe_dump({**data, "ops": ops + ops}, sort_keys=False)
        yield "ops reversed", yaml.safe_dump({**data, "ops": ops[::-1]}, sort_keys=False)
        yield "compute nan", yaml.safe_dump({**data, "ops": [*ops, {"name": "c", "op": "compute", "flops": float("nan")}]}, sort_keys=False)
    if "arrays" in data:
        name = sorted(data["arrays"])[0]
        for shape in ([2**40, 2**40, 0], [0], [3, 5], [2**62, 2**62]):
            yield f"shape {shape}", yaml.safe_dump(_set(data, ("arrays", name, "shape"), shape), sort_keys=False)
    if "hlo" in data:
        for target in ("/dev/zero", "nowhere.txt", ".", "psum.yaml"):
            yield f"hlo {target}", yaml.safe_dump({**data, "hlo": target}, sort_keys=False)
    lines = text.splitlines(keepends=True)
    cut = rng.randrange(1, len(text))
    yield f"truncated at {cut}", text[:cut]
    shuffled = lines[:]
    rng.shuffle(shuffled)
    yield "lines shuffled", "".join(shuffled)
    yield "binary", b"\xff\xfe" + bytes(rng.getrandbits(8) for _ in range(100))


def all_cases() -> list[Case]:
    modules: list[Case] = []
    for index, path in enumerate(MODULES):
        rng = random.Random(3000 + index)
        modules += [(f"{path.name}: {label}", content, _topology(path)) for label, content in hlo_mutations(rng, path)]
    programs: list[Case] = []
    for index, path in enumerate(PROGRAMS):
        rng = random.Random(4000 + index)
        programs += [(f"{path.name}: {label}", content, None) for label, content in program_mutations(rng, path)]
    pick = random.Random(9)
    half = SAMPLE // 2
    return pick.sample(modules, min(half, len(modules))) + pick.sample(programs, min(half, len(programs)))


CASES = all_cases()
BUCKETS = 6


class _Late(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _Late


def test_every_bundled_module_and_program_is_mutated():
    assert len(MODULES) >= 8 and len(PROGRAMS) >= 12
    labels = {label.split(":")[0] for label, _, _ in CASES}
    assert labels >= {p.name for p in MODULES} | {p.name for p in PROGRAMS}
    assert len(CASES) == SAMPLE and len({content for _, content, _ in CASES}) >= 0.9 * SAMPLE  # a few replace what they found by itself


@pytest.mark.parametrize("bucket", sample_then_slow(range(BUCKETS), 2))
def test_mutated_modules_and_programs_run_or_are_one_clear_line(tmp_path, monkeypatch, bucket):
    # a program file names its module relative to itself: the mutated files sit beside copies of the bundled modules
    for module in HLO_DIR.iterdir():
        if module.is_file():
            (tmp_path / module.name).write_bytes(module.read_bytes())
    monkeypatch.chdir(tmp_path)
    previous = signal.signal(signal.SIGALRM, _alarm)
    failures = []
    try:
        for k, (label, content, slice_name) in enumerate(CASES[bucket::BUCKETS]):
            name = f"case{bucket}_{k}.{'txt' if slice_name else 'yaml'}"
            path = tmp_path / name
            path.write_bytes(content if isinstance(content, bytes) else content.encode())
            args = ["program", "--hlo", name, "--topology", slice_name] if slice_name else ["program", name]
            started = time.perf_counter()
            signal.alarm(DEADLINE_S)
            try:
                result = runner.invoke(app, args)
            except _Late:
                failures.append(f"{label}: still running after {DEADLINE_S} s")
                continue
            finally:
                signal.alarm(0)
            line = result.output.strip()
            problems = []
            if result.exit_code not in (0, 2):
                problems.append(f"exit code {result.exit_code}")
            if result.exception is not None and not isinstance(result.exception, SystemExit):
                problems.append(f"raised {type(result.exception).__name__}: {str(result.exception)[:200]}")
            if "Traceback" in result.output or "bug in netsim" in result.output:
                problems.append("a traceback or a bug in netsim")
            said = line.splitlines()  # one line per mistake the file holds (at most MAX_LISTED, and one saying how many more)
            if result.exit_code == 2 and (not 1 <= len(said) <= MAX_LISTED + 1 or any(not s.startswith("error: ") or len(s) > 1000 for s in said)):
                problems.append(f"not one short line per mistake: {line[:200]!r}")
            if time.perf_counter() - started > DEADLINE_S:
                problems.append(f"took {time.perf_counter() - started:.0f} s")
            if problems:
                failures.append(f"{label}: {'; '.join(problems)}")
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert not failures, "\n".join(failures)
