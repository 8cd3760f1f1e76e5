"""Take docs/teaching.md's two pictures of ``netsim teach`` in Debian's headless chromium.

Needs the teaching and browser-test extras (``pip install -e ".[dev]"``) and chromium
(``apt-get install chromium``). The page is set up as the lesson plan's first step: a ring
of 8, ``all_gather`` with netsim's default algorithm (``bidirectional_ring``), 64 KiB per
device; run, and stepped to its third step:

- ``docs/images/teach.png``: the whole page, 1280 px wide;
- ``docs/images/teach_sweep.png``: the size sweep of the same setup, cut to the chart and its
  title (the chart is at most 900 px wide: the panel beside it is empty).

    python scripts/shoot_teach.py                 # writes both
    python scripts/shoot_teach.py --out /tmp/look # somewhere else
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"]
MARGIN = 12
"""Pixels kept around the sweep's title and chart."""


def shoot(out: Path) -> None:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("chromium was not found: apt-get install chromium")
    with tempfile.TemporaryDirectory() as folder:
        server = subprocess.Popen(
            [sys.executable, "-c", "import netsim.cli; netsim.cli.main()", "teach", "--port", "0"], stdout=subprocess.PIPE, text=True, cwd=folder
        )
        try:
            match = re.search(r"http://127\.0\.0\.1:\d+/", server.stdout.readline())
            if match is None:
                raise SystemExit("netsim teach printed no address")
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium, args=ARGS)
                page = browser.new_page(viewport={"width": 1280, "height": 800})
                page.goto(match.group(0))
                page.wait_for_selector("body[data-ready=true]", timeout=30_000)
                form = page.locator("#setup-a")
                form.locator("select[name=topology]").select_option("ring")
                form.locator("input[name=n]").fill("8")
                form.locator("select[name=op]").select_option("all_gather")
                form.locator("input[name=size]").fill("16")  # 2**16 bytes: 64 KiB
                page.click("#run")
                page.wait_for_selector(".run", timeout=30_000)
                for _ in range(2):  # (into its third step)
                    page.click('[data-role="nextstep"]')
                page.wait_for_timeout(500)
                page.screenshot(path=str(out / "teach.png"), full_page=True)
                page.click("#sweep")
                for _ in range(300):  # (the page's policy runs no evaluated script: polled from here)
                    if page.locator("#sweep-chart circle").count() >= 6:
                        break
                    page.wait_for_timeout(200)
                title = page.locator("#sweep-panel h2").bounding_box()  # (a block as wide as the page: its left and top only)
                boxes = [b for b in (e.bounding_box() for e in page.locator("#sweep-chart *").all()) if b and b["width"] * b["height"]]
                left, top = min(title["x"], *(b["x"] for b in boxes)) - MARGIN, title["y"] - MARGIN
                right, bottom = max(b["x"] + b["width"] for b in boxes) + MARGIN, max(b["y"] + b["height"] for b in boxes) + MARGIN
                left, top = max(left, 0), max(top, 0)
                page.screenshot(path=str(out / "teach_sweep.png"), full_page=True, clip={"x": left, "y": top, "width": right - left, "height": bottom - top})
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "images"), help="the folder the two PNGs go to")
    out = Path(parser.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    shoot(out)
    print(f"wrote {out / 'teach.png'} and {out / 'teach_sweep.png'}")


if __name__ == "__main__":
    main()
