"""Fuzz: hundreds of malformed scenario files, made by mutating the bundled ones, through the CLI.

Each runs as ``netsim run scenario.yaml --output out --trace trace.json`` in an empty
directory and must give exit code 2 and a line per mistake naming the file (the first
names the field, where the mistake is in one), no traceback, and leave nothing behind. The mutations
are generated from a fixed seed, so every run tries the same files.
"""

from __future__ import annotations

import copy
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from conftest import ROOT, sample_then_slow
from typer.testing import CliRunner

import netsim
from netsim.cli.main import app
from netsim.scenario.errors import MAX_LISTED

BASES = sorted((ROOT / "scenarios").glob("*.yaml"))
runner = CliRunner()

# A mutation: (label, file content, field the message must name or None, fragment the message must contain or None)
Case = tuple[str, "str | bytes", "str | None", "str | None"]


def _base(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    data.pop("expected", None)
    return data


def _set(data: dict, dotted: str, value: Any) -> dict:
    out = copy.deepcopy(data)
    *parents, last = dotted.split(".")
    node = out
    for part in parents:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[last] = value
    return out


def _delete(data: dict, dotted: str) -> dict:
    out = copy.deepcopy(data)
    *parents, last = dotted.split(".")
    node = out
    for part in parents:
        node = node[part]
    node.pop(last, None)
    return out


def _dump(data: Any) -> str:
    return yaml.safe_dump(data, sort_keys=False)


def _with_bytes(data: dict, value: Any) -> dict:
    out = _set(data, "input.bytes_per_device", value)
    out["input"].pop("shape", None)
    return out


def _with_groups(data: dict, groups: Any) -> dict:
    out = _set(data, "collective.axis_index_groups", groups)
    out["collective"].pop("axes", None)  # groups instead of mesh axes
    return out


WRONG_TYPES: dict[str, list[Any]] = {
    "name": [[1, 2], {"k": 1}, 3.5, True, None, 7],
    "algorithm": [[1], {"k": 1}, 3.5, 12, "tree", "RING", ""],
    "collective.op": [[1], {"k": 1}, 3.5, "all_reduce", "psum ", None],
    "input.dtype": [[1], {"k": 1}, 3.5, "float33", "complex64", "bool", "object", "str", "V8", "i4,i4", "(2,)f4", "datetime64", "f4("],
    "forwarding": [[1], "wormhole", 3, None],
    "seed": ["x", [1], {"a": 1}, 2.5, "1e3", -1, 2**63, 10**30],
    "input.shape": ["4", 4, {"a": 1}, [[1]], ["x"], [-1], [1.5], [4, -2], [2**41], [1] * 9],
    "input.values": ["ones", 3, [1]],
    "link": ["fast", [1], 3],
    "link.bandwidth": ["0 GB/s", "-1 GB/s", 0, -5, "fast", "45 GBps", "1e400 GB/s", "0.5 B/s", [1], "45 GB", "GB/s"],
    "link.latency": ["-1 us", "1 hour", "fast", [1], "2e9 s", "1e400 s", "1 us/s", -1],
    "stragglers": ["late", [1, 2], 3],
    "faults": ["all", {"link": [0, 1]}, 3, [[0, 1]]],
    "mesh": ["x", [1], 3, {"data": 0}, {"data": -1}, {"data": 3, "model": 5}],
}

UNKNOWN_KEYS = {
    "": ["algoritm", "colour", "seeds", "Name", "topologie", "input_shape", "fault", "straggler", "🙂"],
    "collective": ["axis_groups", "groups", "tile", "op2", "scatter_dim"],
    "input": ["size", "shape2", "type", "value"],
    "link": ["bw", "lat", "bandwidth_Bps"],
}


def structured(rng: random.Random, path: Path) -> Iterator[Case]:
    base = _base(path)
    op = base["collective"]["op"]
    topology = netsim.load_scenario(path).topology_obj
    n = topology.n_devices
    near = min(topology.graph.successors(0))  # a neighbour of device 0
    far = next(d for d in range(1, n) if not topology.graph.has_edge(0, d))  # and a device that is not
    dtype = base["input"].get("dtype", "float32")
    # wrong types and values, one field at a time
    for field, values in WRONG_TYPES.items():
        if field.startswith(("collective.", "input.")) and field.split(".")[0] not in base:
            continue
        if field == "input.shape" and "shape" not in base["input"]:
            continue
        value = rng.choice(values)
        yield f"{field}={value!r}", _dump(_set(base, field, value)), field, None
    if op == "all_gather":
        for value in ("x", 2.5, [0], 10**30, -(10**30), 99):
            yield f"axis={value!r}", _dump(_set(base, "collective.axis", value)), "collective.axis", None
        for value in ("maybe", [True], 7, 2.5):
            yield f"tiled={value!r}", _dump(_set(base, "collective.tiled", value)), "collective.tiled", None
    if op == "psum_scatter":
        for value in ("x", 2.5, 10**30, -7):
            yield f"scatter_dimension={value!r}", _dump(_set(base, "collective.scatter_dimension", value)), "collective.scatter_dimension", None
    if op == "all_to_all":
        for field in ("split_axis", "concat_axis"):
            for value in ("x", 2.5, 10**30, -7):
                yield f"{field}={value!r}", _dump(_set(base, f"collective.{field}", value)), f"collective.{field}", None
    if op == "ppermute":
        for label, perm in (
            ("repeated source", [[0, 1], [0, 2]]),
            ("repeated destination", [[0, 1], [2, 1]]),
            ("out of range", [[0, n]]),
            ("negative", [[-1, 0]]),
            ("triple", [[0, 1, 2]]),
            ("not pairs", [0, 1]),
            ("strings", [["0", "1"]]),
            ("a number", 3),
        ):
            yield f"perm {label}", _dump(_set(base, "collective.perm", perm)), "collective.perm", None
    # missing fields
    for field in ("name", "topology", "collective", "input", "collective.op"):
        expected = "collective.op" if field == "collective.op" else field
        yield f"missing {field}", _dump(_delete(base, field)), expected, "required field is missing" if field != "collective.op" else None
    drop_input = _delete(_delete(base, "input.shape"), "input.bytes_per_device")
    yield "missing shape and bytes", _dump(drop_input), "input", "give either shape"
    both = _set(base, "input.shape", [4])
    both["input"]["bytes_per_device"] = "16 B"
    yield "shape and bytes", _dump(both), "input", "not both"
    # unknown keys, at every level
    for where, keys in UNKNOWN_KEYS.items():
        key = rng.choice(keys)
        field = f"{where}.{key}" if where else key
        data = base if where != "link" else _set(base, "link.bandwidth", "45 GB/s")
        yield f"unknown {field}", _dump(_set(data, field, rng.choice([1, "x", [1]]))), field, "unknown field"
    # sizes: zero, negative, not dividing, huge
    for value in ("0 B", "-4 MiB", "0 MiB", "many", -5, 0, "1.5 B", "2 PiB", "1e400 B", "4 Mb"):
        yield f"bytes_per_device={value!r}", _dump(_with_bytes(base, value)), "input.bytes_per_device", None
    itemsize = np.dtype(dtype).itemsize
    if itemsize > 1:
        yield "bytes not whole elements", _dump(_with_bytes(base, f"{4 * itemsize + 1} B")), "input.bytes_per_device", "is not a whole number of"
    if op == "psum_scatter":
        bad = _set(_set(base, "input.shape", [n * 3 + 1]), "collective.tiled", True)
        bad["input"].pop("bytes_per_device", None)
        yield "scatter does not divide", _dump(bad), "input.shape", "to be divisible by the group size"
        untiled = _with_bytes(_set(base, "collective.tiled", False), f"{itemsize * (n + 1)} B")
        if untiled["collective"].get("axis_index_groups") is None and untiled["collective"].get("axes") is None:
            yield "untiled bytes do not split", _dump(untiled), "input.bytes_per_device", "do not split into"
    for value in ("1e15 B", "1 TiB", "900 TiB"):
        yield f"too big {value}", _dump(_with_bytes(base, value)), "input", "data: none"
    huge = _set(base, "input", {"shape": [2**40, 2**20], "dtype": "int8"})
    yield "too big shape", _dump(huge), "input", "data: none"  # with data, the memory check refuses first
    yield "too big shape, timing only", _dump(_set(huge, "data", "none")), "input.shape", "use smaller dimensions"
    # groups that repeat, skip, overlap, go out of range or differ in size
    order = list(range(n))
    rng.shuffle(order)
    half = n // 2
    for label, groups, fragment in (
        ()
        if op == "ppermute"
        else (  # ppermute has pairs, not groups
            ("repeat", [[*order[:-1], order[0]]], "appears more than once"),
            ("skip", [order[:-1]], "is in no group"),
            ("out of range", [[*order[:-1], n]], "is out of range"),
            ("negative", [[*order[:-1], -1]], "is out of range"),
            ("ragged", [order[: half - 1], order[half - 1 :]], "must all have the same size"),
            ("empty", [[]], "non-empty"),
            ("not lists", order, None),
            ("strings", [[str(d) for d in order]], None),
            ("floats", [[d + 0.5 for d in order]], None),
            ("nested", [[order]], None),
        )
    ):
        yield f"groups {label}", _dump(_with_groups(base, groups)), "collective.axis_index_groups", fragment
    # topologies that are wrong inline
    for label, inline, fragment in (
        ("no kind", {"dims": [4]}, "required field is missing"),
        ("hexagon", {"kind": "hexagon", "dims": [4]}, None),
        ("zero dim", {"kind": "ring", "dims": [0]}, None),
        ("negative dim", {"kind": "torus", "dims": [4, -4]}, None),
        ("4 axes", {"kind": "torus", "dims": [2, 2, 2, 2]}, None),
        ("huge", {"kind": "torus", "dims": [65536, 65536]}, "more than netsim simulates"),
        ("huge 3d", {"kind": "torus", "dims": [65536, 65536, 65536]}, "more than netsim simulates"),
        ("ring 2 axes", {"kind": "ring", "dims": [4, 4]}, "a ring has one axis"),
        ("mesh wrap", {"kind": "mesh", "dims": [4], "wraparound": [True]}, None),
        ("wrap flags", {"kind": "torus", "dims": [4, 4], "wraparound": [True]}, "wraparound has 1 flags"),
        ("bad link", {"kind": "ring", "dims": [4], "link": {"bandwidth": "0 GB/s"}}, None),
        ("unknown file", "no_such_topology", "no topology file"),
        ("a number", 8, None),
        ("null byte", "ring\x008", None),
        ("a directory", ".", "no topology file"),
        ("list", [4, 4], None),
    ):
        yield f"topology {label}", _dump(_set(base, "topology", inline)), "topology", fragment
    # faults and stragglers that do not fit
    isolated = [{"link": [0, d], "state": "down"} for d in sorted(set(topology.graph.successors(0)))]
    wrong_coordinates = [[0] * (len(topology.dims) + 1), [0] * len(topology.dims) + [1]]
    for label, faults, field in (
        ("not neighbours", [{"link": [0, far], "state": "down"}], "faults.0.link"),
        ("off the grid", [{"link": [0, n], "state": "down"}], "faults.0.link"),
        ("coordinates", [{"link": wrong_coordinates, "state": "down"}], "faults.0.link"),
        ("zero percent", [{"link": [0, near], "bandwidth": "0%"}], "faults.0.bandwidth"),
        ("zero bandwidth", [{"link": [0, near], "bandwidth": "0 GB/s"}], "faults.0.bandwidth"),
        ("bare number", [{"link": [0, near], "bandwidth": 0.1}], "faults.0.bandwidth"),
        ("down and slow", [{"link": [0, near], "state": "down", "bandwidth": "10%"}], "faults.0"),
        ("no change", [{"link": [0, near]}], "faults.0"),
        ("twice", [{"link": [0, near], "state": "down"}, {"link": [near, 0], "state": "down"}], "faults.1.link"),
        ("device 0 cut off", isolated, "faults"),
        ("unknown key", [{"link": [0, near], "state": "down", "why": "rain"}], "faults.0.why"),
        ("three ends", [{"link": [0, near, 2], "state": "down"}], "faults.0.link"),
    ):
        if label == "device 0 cut off" and op == "ppermute" and not any(0 in pair for pair in base["collective"]["perm"]):
            continue
        yield f"faults {label}", _dump(_set(base, "faults", faults)), field, None
    for label, stragglers, field in (
        ("off the grid", {n: "1 us"}, f"stragglers.{n}"),
        ("negative", {0: "-1 us"}, "stragglers.0"),
        ("bare number", {0: "soon"}, "stragglers.0"),
        ("too long", {0: "1e30 s"}, "stragglers.0"),
        ("device name", {"first": "1 us"}, "stragglers.first"),
    ):
        yield f"stragglers {label}", _dump(_set(base, "stragglers", stragglers)), field, None
    # a key given twice, and a deeply nested value
    text = _dump(base)
    yield "duplicate key", text + f"name: {base['name']}_again\n", None, "found the key 'name' twice"
    depth = rng.randint(40, 200)
    yield f"nested {depth}", _dump(_set(base, "input.shape", _nest(depth))), "input.shape", None


def _nest(depth: int) -> Any:
    value: Any = [1]
    for _ in range(depth):
        value = [value]
    return value


TAGS = [
    "!!python/object/apply:os.system ['touch pwned']",
    "!!python/object/apply:subprocess.check_output [['touch', 'pwned']]",
    "!!python/name:os.system",
    "!!python/object:pathlib.Path {}",
    "!!python/module:os",
    "!!python/object/new:type ['X', [], {}]",
    "!Foo 1",
    "!!timestamp 2001-12-14",
    "!!set {a, b}",
    "!!omap [a: 1]",
    "!!binary aGVsbG8=",
    "!<tag:example.com,2000:x> 1",
]


def textual(rng: random.Random, path: Path) -> Iterator[Case]:
    text = path.read_text()
    base = _base(path)
    lines = text.splitlines(keepends=True)
    # YAML tags in every field that holds a value
    for field in ("name", "topology", "algorithm", "input.shape", "input.dtype", "collective.op", "seed"):
        tag = rng.choice(TAGS)
        marker = "__TAGGED__"
        data = _set(base, field, marker)
        if field == "input.shape":
            data["input"].pop("bytes_per_device", None)
        yield f"tag {field} {tag[:20]}", _dump(data).replace(f"'{marker}'", tag).replace(marker, tag), None, None
    yield "tag at top", f"{rng.choice(TAGS[:6])}\n", None, None
    yield "tag as document", "--- !!python/object/apply:os.system ['touch pwned']\n", None, None
    # syntax errors
    for label, broken in (
        ("unclosed flow", text + "extra: [1, 2\n"),
        ("unclosed map", text + "extra: {a: 1\n"),
        ("unclosed quote", text + 'extra: "abc\n'),
        ("tab indent", text.replace("\n  ", "\n\t", 1)),
        ("bad indent", text + "collective:\n op: psum\n   axis: 0\n"),
        ("colon colon", text + "key: : value\n"),
        ("stray dash", text + "- item\n"),
        ("alias to nothing", text + "extra: *nothing\n"),
        ("two documents", text + "---\n" + text),
        ("directive", "%YAML 9.9\n---\n" + text),
        ("null byte", text + "extra: a\x00b\n"),
        ("control char", text + "extra: a\x07b\n"),
    ):
        yield f"syntax {label}", broken, None, None
    # truncated, and lines dropped or shuffled (often still YAML, never a valid scenario)
    cut = rng.randint(1, max(1, len(text) // 3))
    yield f"truncated at {cut}", text[:cut], None, None
    for key in ("name:", "collective:", "input:"):
        yield f"line {key} dropped", "".join(line for line in lines if not line.startswith(key)), None, None
    shuffled = lines[:]
    rng.shuffle(shuffled)
    yield "lines shuffled", "".join(shuffled), None, None
    # binary garbage, long lines, huge and empty documents
    for k in range(4):
        blob = bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 400)))
        yield f"binary {k}", b"\xff\xfe" + blob, None, "not a text file"
    yield "binary after text", text.encode() + b"\x80\x81\xfe", None, "not a text file"
    yield "empty", "", None, "expected a mapping of fields"
    yield "only a comment", "# nothing here\n", None, "expected a mapping of fields"
    yield "a list", "- 1\n- 2\n", None, "expected a mapping of fields"
    yield "a number", "42\n", None, "expected a mapping of fields"
    yield "a string", "all_gather please\n", None, "expected a mapping of fields"
    depth = rng.randint(1500, 2500)  # past Python's recursion limit
    yield f"deep lists {depth}", "name: " + "[" * depth + "]" * depth + "\n", None, "nested too deeply"
    yield f"deep maps {depth}", "name: " + "{a: " * depth + "1" + "}" * depth + "\n", None, "nested too deeply"
    yield "billion laughs", _laughs(base), None, "expands to more than"
    yield "recursive alias", "loop: &loop [1, *loop]\n" + text, None, "an alias refers to a node that holds it"
    yield "5000-digit seed", _dump({**base, "seed": "__BIG__"}).replace("__BIG__", "9" * 5000), None, "digits is too long"
    yield "long topology name", _dump({**base, "topology": "t" * rng.randint(256, 5000)}), "topology", "no topology file"


def _laughs(base: dict) -> str:
    """Aliases that would expand to 10**9 elements if anything copied them."""
    out = ['l0: &l0 ["ha", "ha", "ha", "ha", "ha", "ha", "ha", "ha", "ha", "ha"]']
    for k in range(1, 9):
        out.append(f"l{k}: &l{k} [" + ", ".join([f"*l{k - 1}"] * 10) + "]")
    body = _dump({**base, "name": "__LAUGH__"}).replace("__LAUGH__", "*l8")
    return "\n".join(out) + "\n" + body


SAMPLE = 800
"""Files tried per run: a fixed sample of every mutation of every bundled scenario (keeps the test to tens of seconds on a loaded machine)."""


def all_cases() -> list[Case]:
    cases: list[Case] = []
    for index, path in enumerate(BASES):
        rng = random.Random(1000 + index)
        cases += [(f"{path.stem}: {label}", content, field, fragment) for label, content, field, fragment in structured(rng, path)]
        cases += [(f"{path.stem}: {label}", content, field, fragment) for label, content, field, fragment in textual(rng, path)]
    if len(cases) <= SAMPLE:
        return cases
    keep = sorted(random.Random(8).sample(range(len(cases)), SAMPLE))
    return [cases[k] for k in keep]


CASES = all_cases()
BUCKETS = 12


def test_a_good_scenario_run_the_same_way_does_write_its_files(tmp_path, monkeypatch):
    # the control: the "nothing left behind" check below can fail
    (tmp_path / "scenario.yaml").write_text((ROOT / "scenarios" / "allgather_ring8_latency_bound.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["run", "scenario.yaml", "--output", "out", "--trace", "trace.json"])
    assert result.exit_code == 0, result.output
    assert sorted(os.listdir(tmp_path)) == ["out", "scenario.yaml", "trace.json"]


def test_there_are_at_least_500_distinct_malformed_files():
    assert len(CASES) >= 500
    assert len({content for _, content, _, _ in CASES}) >= 500


@pytest.mark.parametrize("bucket", sample_then_slow(range(BUCKETS), 4))
def test_malformed_scenarios_are_one_clear_line_exit_2_and_leave_nothing(tmp_path, monkeypatch, bucket):
    failures = []
    for k, (label, content, field, fragment) in enumerate(CASES[bucket::BUCKETS]):
        workdir = tmp_path / f"case{k}"
        workdir.mkdir()
        scenario = workdir / "scenario.yaml"
        if isinstance(content, bytes):
            scenario.write_bytes(content)
        else:
            scenario.write_text(content, encoding="utf-8")
        monkeypatch.chdir(workdir)
        result = runner.invoke(app, ["run", "scenario.yaml", "--output", "out", "--trace", "trace.json"])
        line = result.output.strip()
        problems = []
        if result.exit_code != 2:
            problems.append(f"exit code {result.exit_code}")
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            problems.append(f"raised {type(result.exception).__name__}: {result.exception}")
        lines = line.splitlines()
        if "Traceback" in result.output or not 1 <= len(lines) <= MAX_LISTED + 1 or any(not li.startswith("error: scenario.yaml: ") for li in lines):
            problems.append("not a line per mistake, each naming the file")
        if max(map(len, lines), default=0) > 1000:
            problems.append(f"{max(map(len, lines))} characters: echoed without bound")
        if "bug in netsim" in line:
            problems.append("blames netsim for the file")
        if not line.startswith("error: scenario.yaml: "):
            problems.append("does not name the file")
        elif field is not None and not line.startswith(f"error: scenario.yaml: {field}"):
            problems.append(f"does not name the field {field}")
        if fragment is not None and fragment not in line:
            problems.append(f"does not say {fragment!r}")
        left = sorted(os.listdir(workdir))
        if left != ["scenario.yaml"]:
            problems.append(f"left files behind: {left}")
        if problems:
            failures.append(f"{label}: {'; '.join(problems)}\n    {line[:300]}")
    assert not failures, f"{len(failures)} malformed scenario(s) handled badly:\n" + "\n".join(failures)
