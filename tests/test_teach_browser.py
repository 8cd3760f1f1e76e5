"""``netsim teach`` in a real browser: Debian's headless chromium, driven by playwright, runs a 4x4 torus psum.

The page's simulated time and closed form must be ``netsim run``'s for the same scenario;
stepping, scrubbing and comparing two algorithms on one clock must work without a
JavaScript error; screenshots at a laptop's and a phone's size are written (docs/teaching.md's
pictures are taken by scripts/shoot_teach.py). Skipped where chromium or playwright is missing.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from netsim.network.units import format_seconds

pytest.importorskip("starlette", reason="netsim teach needs the teaching extra (starlette, uvicorn)")
sync_api = pytest.importorskip("playwright.sync_api", reason="the browser test needs the playwright package (pip install 'netsim[browser-tests]')")

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]
ARGS += ["--disable-background-networking", "--disable-component-update", "--disable-sync"]
SCENARIO = """name: psum_torus4x4_64k
topology: {kind: torus, dims: [4, 4], link: {bandwidth: 45 GB/s, latency: 1 us}}
mesh: {x: 4, y: 4}
collective: {op: psum, axes: [x, y]}
input: {bytes_per_device: 64 KiB, dtype: float32}
"""


def _chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    if Path("/usr/bin/chromium").exists():
        return "/usr/bin/chromium"
    pytest.skip("Chromium was not found (apt-get install chromium); the teaching page was not opened in a browser")


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    process = subprocess.Popen(
        [sys.executable, "-c", "import netsim.cli; netsim.cli.main()", "teach", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path_factory.mktemp("teach"),
    )  # fmt: skip
    match = re.search(r"http://127\.0\.0\.1:\d+/", process.stdout.readline())
    assert match, process.stderr.read() if process.poll() is not None else "no address printed"
    yield match.group(0)
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    scenario = tmp_path_factory.mktemp("scenario") / "psum.yaml"
    scenario.write_text(SCENARIO)
    done = subprocess.run([sys.executable, "-m", "netsim", "run", str(scenario), "--json"], capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(done.stdout)


def _open(browser, url: str, width: int, height: int, errors: list[str]):
    page = browser.new_page(viewport={"width": width, "height": height})
    page.on("pageerror", lambda error: errors.append(f"page error: {error}"))
    page.on("console", lambda message: errors.append(f"console {message.type}: {message.text}") if message.type == "error" else None)
    page.goto(url)
    page.wait_for_selector("body[data-ready=true]", timeout=30_000)
    return page


def _text(page, role: str, run: int = 0) -> str:
    return page.locator(f'[data-role="{role}"]').nth(run).inner_text()


def test_a_4x4_torus_psum_in_the_browser_matches_netsim_run(url, ran, tmp_path_factory):
    shots = tmp_path_factory.mktemp("screenshots")  # kept with pytest's temporary folders, to look at
    errors: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=_chromium(), args=ARGS)
        try:
            page = _open(browser, url, 1280, 800, errors)
            form = page.locator("#setup-a")
            form.locator("select[name=topology]").select_option("torus")
            form.locator("input[name=dims]").fill("4x4")
            form.locator("select[name=op]").select_option("psum")
            form.locator("input[name=size]").fill("16")  # 2**16 bytes: 64 KiB
            assert form.locator(".sizelabel").inner_text() == "64 KiB"
            page.click("#run")
            page.wait_for_selector("body[data-ran='1']", timeout=30_000)
            run = page.locator(".run").first
            steps = len(ran["steps"])
            while run.get_attribute("data-step") != str(steps // 2):  # to the middle, step by step
                page.click('[data-role="nextstep"]')
            assert _text(page, "caption").startswith(f"step {steps // 2}/{steps}")
            assert _text(page, "simulated") == format_seconds(ran["time_s"])
            formula = _text(page, "formula")
            assert formula.startswith(ran["formula"].split(",")[0]) and formula.endswith(f"= {format_seconds(ran['estimate_s'])}")
            assert _text(page, "kind").startswith(ran["estimate_kind"])
            assert int(run.get_attribute("data-moving")) > 0  # chunks on the links mid-run
            page.focus(".nsp")  # the keyboard: Home to the start, ] a step on
            page.keyboard.press("Home")
            assert page.locator(".nsp").get_attribute("data-time") == "0"
            page.keyboard.press("]")  # to the first moment a step starts or ends after 0
            assert 0 < float(page.locator(".nsp").get_attribute("data-time")) <= ran["steps"][0]["end_s"]
            page.keyboard.press("[")
            assert page.locator(".nsp").get_attribute("data-time") == "0"
            page.focus('[data-role="slider"]')
            page.keyboard.press("End")  # scrub to the end
            assert page.locator(".nsp").get_attribute("data-at-end") == "true"
            assert _text(page, "caption") == f"done: {steps} steps in {format_seconds(ran['time_s'])}"
            page.screenshot(path=str(shots / "teach-1280.png"), full_page=False)

            page.check("#compare")  # ring-like multiaxis against one axis after the other, on one clock
            page.locator("#setup-b select[name=algorithm]").select_option("dimension_ordered")
            page.click("#run")
            page.wait_for_selector("body[data-ran='2']", timeout=30_000)
            assert page.locator(".run").count() == 2
            page.click('[data-role="nextstep"]')
            clocks = [_text(page, "clock", k) for k in range(2)]
            assert clocks[0].split(" of ")[0] == clocks[1].split(" of ")[0]  # the same moment in both
            assert "dimension_ordered" in page.locator(".run").nth(1).locator(".runtitle").inner_text()
            page.click("#sweep")
            page.wait_for_selector("body[data-swept=true]", timeout=60_000)
            assert page.locator("#sweep-chart circle").count() >= 2 * 6
            page.screenshot(path=str(shots / "teach-compare.png"), full_page=True)

            phone = _open(browser, url, 390, 844, errors)
            phone.check("#compare")
            phone.click("#run")
            phone.wait_for_selector("body[data-ran='2']", timeout=30_000)
            phone.click("#sweep")
            phone.wait_for_selector("body[data-swept=true]", timeout=60_000)
            phone.screenshot(path=str(shots / "teach-390.png"), full_page=True)
            overflow = phone.evaluate("() => document.documentElement.scrollWidth")
            assert overflow <= 390, f"the page is {overflow} px wide on a 390 px screen"
        finally:
            browser.close()
    assert errors == []
