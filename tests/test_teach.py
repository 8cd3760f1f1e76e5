"""The teaching page's server (``netsim teach``) under attack, and the files it shares a player with.

The server runs as the command a user starts (a subprocess on a free loopback port); the
requests are what a browser or a hostile script could send: traversal in asset paths,
oversized and malformed bodies, NaN and negative sizes, runs over the limits, 100 at once.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import netsim

pytest.importorskip("starlette", reason="netsim teach needs the teaching extra (starlette, uvicorn)")
pytest.importorskip("uvicorn", reason="netsim teach needs the teaching extra (starlette, uvicorn)")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    scratch = tmp_path_factory.mktemp("teach")
    process = subprocess.Popen(
        [sys.executable, "-c", "import netsim.cli; netsim.cli.main()", "teach", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=scratch,
    )  # fmt: skip
    line = process.stdout.readline()
    match = re.search(r"http://127\.0\.0\.1:\d+", line)
    assert match, f"no address printed: {line!r} {process.stderr.read() if process.poll() is not None else ''}"
    yield match.group(0), process, scratch
    process.terminate()
    process.wait(timeout=10)


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def post(url: str, body: bytes | dict) -> tuple[int, dict]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


TRAVERSALS = ["/assets/../web_app.py", "/assets/%2e%2e%2fweb_app.py", "/assets/..%2f..%2fpyproject.toml", "/assets/%2fetc%2fpasswd", "/../../etc/passwd"]
TRAVERSALS += ["/assets/index.html", "/assets/", "/assets/style.css/../../web_app.py", "/assets/web_app.py", "/assets/%00style.css"]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_asset_paths_reach_only_the_pages_own_files(server, path):
    url, _, _ = server
    status, body = get(url + path)
    assert status == 404
    assert b"root:" not in body and b"import" not in body


def test_the_page_and_its_assets_are_served_with_a_strict_policy(server):
    url, _, _ = server
    with urllib.request.urlopen(url + "/", timeout=10) as response:
        assert "default-src 'self'" in response.headers["Content-Security-Policy"]
        page = response.read().decode()
    for name in re.findall(r"/assets/([\w.]+)", page):
        assert get(f"{url}/assets/{name}")[0] == 200


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"topology": "torus", "dims": "4x4", "op": "psum", "bytes": "NaN"}, "page: input.bytes_per_device: 'NaN' is not a size from 1 KiB to 1 GiB"),
        (b'{"op": "psum", "bytes": NaN}', "page: input.bytes_per_device: nan is not a size from 1 KiB to 1 GiB"),
        ({"op": "psum", "bytes": -4096}, "page: input.bytes_per_device: -4096 is not a size from 1 KiB to 1 GiB"),
        ({"op": "psum", "bytes": 2**40}, "page: input.bytes_per_device: 1099511627776 is not a size from 1 KiB to 1 GiB"),
        ({"op": "psum", "dims": "4x4x4x4"}, "page: topology.dims: '4x4x4x4' is not 1 to 3 axes of 2 to 16 devices"),
        ({"op": "psum", "dims": "1000x1000"}, "page: topology.dims: '1000x1000' is not 1 to 3 axes"),
        ({"op": "psum_all"}, "page: collective.op: 'psum_all' is not one of all_gather, psum_scatter, psum, all_to_all, ppermute"),
        ({"op": "psum", "algorithm": "ringg"}, "page: algorithm: unknown algorithm 'ringg'; did you mean ring?"),
        ({"op": "psum", "path": "/etc/passwd"}, "page: path: unknown field"),
        ({"op": "psum", "axes": ["x", "x"]}, "page: collective.axes: ['x', 'x'] is not one or more of the mesh's axes x, y, each once"),
        (b"[1, 2", "page: the request is not JSON"),
        (b"[" * 100_000, "page: the request is over 4096 bytes"),
        (b'"just text"', "page: the request must be a JSON object"),
        ({"topology": "tpu", "preset": "tpu-v5e:16x16", "op": "psum"}, "page: topology: 256 devices in groups of 256 need about 783,360 transfers"),
    ],
)
def test_bad_requests_get_one_line_naming_the_field(server, body, message):
    url, _, _ = server
    status, answer = post(url + "/api/run", body)
    assert status == 400
    assert answer["error"].startswith(message), answer
    assert "\n" not in answer["error"] and "Traceback" not in answer["error"]


@pytest.mark.parametrize("endpoint", ["/api/algorithms", "/api/sweep"])
def test_every_endpoint_checks_its_fields(server, endpoint):
    url, _, _ = server
    for body, message in (({"op": "psum", "bytes": -1}, "page: input.bytes_per_device: -1 is not"), (b"{", "page: the request is not JSON")):
        status, answer = post(url + endpoint, body)
        assert status == 400 and answer["error"].startswith(message) and "Traceback" not in answer["error"]


def test_a_run_over_the_limits_is_refused_before_it_runs(server):
    url, _, _ = server
    began = time.perf_counter()
    status, answer = post(url + "/api/run", {"topology": "ring", "n": 64, "op": "all_to_all", "algorithm": "direct"})
    elapsed = time.perf_counter() - began
    assert status == 400 and "129,024 link crossings, more than the page runs (120,000)" in answer["error"]
    assert elapsed < 2.0  # the benchmark holds it to 0.2 s of server time (bench/teach.py); here only: not a run


def test_the_page_shows_netsim_runs_numbers(server, tmp_path):
    url, _, _ = server
    status, page = post(url + "/api/run", {"topology": "torus", "dims": "4x4", "op": "psum", "bytes": 65536, "axes": ["y"]})
    assert status == 200
    scenario = tmp_path / "row.yaml"
    scenario.write_text(
        "name: row\ntopology: {kind: torus, dims: [4, 4], link: {bandwidth: 45 GB/s, latency: 1 us}}\nmesh: {x: 4, y: 4}\n"
        "collective: {op: psum, axes: [y]}\ninput: {bytes_per_device: 64 KiB, dtype: float32}\n"
    )
    done = subprocess.run([sys.executable, "-m", "netsim", "run", str(scenario), "--json"], capture_output=True, text=True, check=True, cwd=ROOT)
    ran = json.loads(done.stdout)
    assert page["time_s"] == ran["time_s"]
    assert page["summary"]["estimate_s"] == ran["estimate_s"] and page["summary"]["kind"] == ran["estimate_kind"] == "exact"
    assert page["summary"]["formula"].startswith(ran["formula"].split(",")[0]) and page["summary"]["formula"].endswith(" = 7.09227 us")
    n, alpha, s, bandwidth = 4, 1e-6, 65536 / 4, 45e9  # the closed form by hand
    assert page["summary"]["estimate_s"] == pytest.approx(2 * (n - 1) * (alpha + s / (2 * bandwidth)), rel=1e-12)
    assert len(page["transfers"]["src"]) == ran["transfers"]


def test_a_hundred_requests_at_once_are_bounded_and_the_server_keeps_serving(server):
    url, process, scratch = server
    body = {"topology": "torus", "dims": "4x4", "op": "psum", "bytes": 4096}
    with ThreadPoolExecutor(max_workers=100) as pool:
        answers = list(pool.map(lambda _: post(url + "/api/run", body), range(100)))
    statuses = {status for status, _ in answers}
    assert statuses <= {200, 503} and 200 in statuses
    assert all(a["error"].startswith("busy: ") for s, a in answers if s == 503)
    assert post(url + "/api/run", body)[0] == 200 and process.poll() is None
    assert list(Path(scratch).iterdir()) == []  # nothing written where it was started


def test_the_sweep_marks_the_crossover_and_the_simulated_points_lie_on_an_exact_form(server):
    url, _, _ = server
    status, sweep = post(url + "/api/sweep", {"topology": "ring", "n": 8, "op": "all_gather"})
    assert status == 200 and sweep["kind"] == "exact"
    assert sweep["crossover_bytes"] == pytest.approx(2 * 1e-6 * 45e9)  # (n-1)α = (n-1)s/(2B): s = 2αB
    assert [p["bytes"] for p in sweep["points"]] == [1024 * 4**k for k in range(11)]
    assert all(p["time_s"] == pytest.approx(p["estimate_s"], rel=1e-9) for p in sweep["points"])


def test_the_html_page_of_the_bundled_psum_is_small_and_offline(tmp_path):
    out = tmp_path / "psum.html"
    command = [sys.executable, "-m", "netsim", "animate", "scenarios/psum_torus4x4_row.yaml", "-o", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert out.stat().st_size <= 500_000
    assert "data:image/png" not in text and not re.search(r"(src|href)=\"https?://", text)
    data = json.loads(re.search(r'<script type="application/json" id="run-data">(.*?)</script>', text, re.S).group(1))
    assert data["time_s"] == pytest.approx(2.3476266666666667e-05, rel=1e-9) and len(data["transfers"]["src"]) == 192


def test_a_gifs_device_colours_are_the_same_in_every_frame(tmp_path):
    Image = pytest.importorskip("PIL.Image")
    from netsim.teaching.palette import device_rgb, min_difference

    out = tmp_path / "a.gif"
    from netsim.teaching.animate import animate

    animate(netsim.all_gather(np.zeros((16, 16), np.float32), algorithm="ring", topology=netsim.ring(16)), frames=4, dpi=40).save(out)
    wanted = {device_rgb(k) for k in range(16)}
    seen: set[tuple[int, ...]] = set()
    keys = []
    with Image.open(out) as gif:
        assert gif.n_frames == 4
        for k in range(gif.n_frames):
            gif.seek(k)
            pixels = np.asarray(gif.convert("RGB"))
            colours = {tuple(map(int, c)) for c in np.unique(pixels.reshape(-1, 3), axis=0)}
            seen |= colours
            assert wanted <= colours or k == 0, f"frame {k}: device colours missing: {sorted(wanted - colours)}"
            height, width = pixels.shape[:2]
            keys.append(pixels[: height // 10, width - width * 2 // 5 :])  # the colour key, top right: drawn alike in every frame
    assert wanted <= seen and len(seen) <= 256  # one palette for the whole animation, holding every device's colour exactly
    assert all(np.array_equal(keys[0], key) for key in keys[1:])
    assert min_difference(16) > 15  # told apart by normal and colour-blind vision (deuteranopia, protanopia, tritanopia)


SETUPS = [{"topology": "ring", "n": 8}, {"topology": "mesh", "dims": "4x4"}, {"topology": "torus", "dims": "2x2x2", "axes": ["x", "z"]}]
SETUPS += [{"topology": "tpu", "preset": "tpu-v5e:4x4"}, {"topology": "slices", "slices": "tpu-v5e:2x2x2slices"}]


@pytest.mark.parametrize("setup", SETUPS)
def test_every_collective_on_every_kind_of_topology_makes_a_valid_scenario(setup):
    from netsim.teaching.web_form import OPS, applicable, scenario_of

    for op in OPS:
        found = applicable({**setup, "op": op})
        assert found["default"] in found["algorithms"]
        scenario = scenario_of({**setup, "op": op, "algorithm": next(iter(found["algorithms"]))}, build_topology=False)
        assert scenario.collective.op == op
        if op == "ppermute":  # a shift by one: every device sends once and receives once
            pairs = scenario.collective.perm
            assert sorted(a for a, _ in pairs) == sorted(b for _, b in pairs) == list(range(scenario.topology_shape.n_devices))


def test_beside_a_run_with_a_failed_link_the_page_says_the_form_promises_nothing_and_why():
    from netsim.teaching.events import summary_of

    summary = summary_of(netsim.simulate(netsim.load_scenario(ROOT / "scenarios/psum_torus4x4_link_down.yaml")))
    assert summary["kind"] == "none" and not summary["agree"]
    assert summary["why"].startswith(f"{summary['time_s'] / summary['estimate_s']:.3f}x the estimate: contention")
    assert summary["formula"] == "2·(n−1)·(α + s/(2B)) = 2·(4−1)·(1 us + 256 KiB/(2·45 GB/s)) = 23.4763 us"


def test_the_server_writes_only_in_its_own_temporary_folder_and_removes_it(tmp_path):
    scratch, work = tmp_path / "tmp", tmp_path / "work"
    scratch.mkdir()
    work.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    command = [sys.executable, "-m", "netsim", "teach", "--port", "0"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=work, env=env)
    try:
        url = re.search(r"http://127\.0\.0\.1:\d+", process.stdout.readline()).group(0)
        assert post(url + "/api/run", {"topology": "ring", "n": 4, "op": "psum"})[0] == 200
        assert [p.name.startswith("netsim-teach-") for p in scratch.iterdir()] == [True]
    finally:
        process.terminate()
        process.wait(timeout=20)
    assert list(scratch.iterdir()) == [] and list(work.iterdir()) == []


def test_a_port_in_use_is_one_line_and_exit_2():
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "netsim", "teach", "--port", str(port)], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 2 and done.stdout == ""
    fix = "pick another port, or --port 0 for any free one"
    assert done.stderr.strip() == f"error: --port {port}: cannot listen on 127.0.0.1:{port} (Address already in use); {fix}"
