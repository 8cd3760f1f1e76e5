"""``netsim teach``: the server's time for a 64-device run and for a request over the page's limits.

    PYTHONPATH=$PWD python bench/teach.py              # 5 rounds, about half a minute
    PYTHONPATH=$PWD python bench/teach.py --repeat 9

Starts ``netsim teach --port 0`` as a user would, waits for it to answer one small run
(the fast player compiled, the modules imported), then times each case round after
round. *server* is the ``Server-Timing`` the app adds: from the request's arrival to its
answer, parsing, checking, simulating and building the page's data included, the
network and the browser not; *wall* is the client's whole request over loopback.
Targets: a 64-device run at most 1 s of server time; a run over the limits refused in
at most 0.2 s. Each answer is checked (the run's time, the error's text).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request

CASES = [
    ("64 devices: psum over tpu-v5e:8x8 (x, y), 64 KiB", {"topology": "tpu", "preset": "tpu-v5e:8x8", "op": "psum", "bytes": 65536}, 200, 1.0),
    ("64 devices: all_gather on an 8x8 torus, 1 MiB", {"topology": "torus", "dims": "8x8", "op": "all_gather", "bytes": 1 << 20}, 200, 1.0),
    ("over the limits: psum over tpu-v5e:16x16", {"topology": "tpu", "preset": "tpu-v5e:16x16", "op": "psum"}, 400, 0.2),
    ("over the limits: all_to_all direct on a ring of 64", {"topology": "ring", "n": 64, "op": "all_to_all", "algorithm": "direct"}, 400, 0.2),
]


def request(url: str, body: dict) -> tuple[int, dict, float, float]:
    data = json.dumps(body).encode()
    began = time.perf_counter()
    try:
        with urllib.request.urlopen(urllib.request.Request(url + "api/run", data=data, method="POST"), timeout=120) as response:
            status, text, timing = response.status, response.read(), response.headers["Server-Timing"]
    except urllib.error.HTTPError as error:
        status, text, timing = error.code, error.read(), error.headers["Server-Timing"]
    wall = time.perf_counter() - began
    server = float(re.search(r"dur=([0-9.]+)", timing).group(1)) / 1e3
    return status, json.loads(text), server, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    process = subprocess.Popen([sys.executable, "-m", "netsim", "teach", "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        found = re.search(r"http://\S+/", process.stdout.readline())
        if found is None:
            raise SystemExit(f"netsim teach did not start: {process.stderr.read()}")
        url = found.group(0)
        status, _, _, _ = request(url, {"topology": "ring", "n": 4, "op": "psum"})
        assert status == 200
        for _, body, _, _ in CASES:  # a warm-up round, not counted
            request(url, body)
        figures: dict[str, list[tuple[float, float]]] = {name: [] for name, *_ in CASES}
        for _ in range(args.repeat):
            for name, body, expected, _ in CASES:
                status, answer, server, wall = request(url, body)
                assert status == expected, (name, status, answer)
                assert (answer["time_s"] > 0 and answer["n_devices"] == 64) if status == 200 else answer["error"].startswith("page: topology: ")
                figures[name].append((server, wall))
        print(f"load average {os.getloadavg()[0]:.1f}, {args.repeat} rounds")
        print("| case | server min | server median | wall median | target | |")
        print("|---|---|---|---|---|---|")
        for name, _, _, target in CASES:
            servers = [s for s, _ in figures[name]]
            median = statistics.median(servers)
            verdict = "met" if median <= target else "missed"
            print(f"| {name} | {min(servers):.3f} s | {median:.3f} s | {statistics.median(w for _, w in figures[name]):.3f} s | <= {target} s | {verdict} |")
    finally:
        process.terminate()
        process.wait(timeout=10)


if __name__ == "__main__":
    main()
