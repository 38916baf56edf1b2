"""report.html as a reader sees it, in a real headless Chromium at 1280 and 400 px (issue 46,
item 3): nothing wider than the window (a long command, path or traceback wraps or scrolls in
its own box, the page never scrolls sideways), the text keeps a margin from the window's edge,
every failed case's reason is on screen, and an untested case shows no rate.

Chromium is driven over its DevTools protocol (a websocket, with the `websockets` package
Prefect already installs): the page is the report file as written, unchanged; the
measurements are the browser's own layout, and each width's screenshot is kept beside the
test's temp folder for a person to look at. Without Chromium (Debian's ``chromium``, which
.ci/run installs) the test skips, saying so."""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from aeval.deployments.cli.main import main
from tests.conftest import EXAMPLES

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("prefect_harness")]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class Page:
    """One Chromium tab over the DevTools protocol (only what the test uses)."""

    def __init__(self, ws_url: str) -> None:
        from websockets.sync.client import connect

        self.ws = connect(ws_url, max_size=64 * 2**20, open_timeout=30)
        self.ids = itertools.count(1)

    def call(self, method: str, **params):
        mid = next(self.ids)
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            msg = json.loads(self.ws.recv(timeout=60))
            if msg.get("id") == mid:
                assert "error" not in msg, msg
                return msg["result"]
        raise AssertionError(f"{method}: no answer in 60 s")

    def eval(self, expression: str):
        got = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in got, got
        return got["result"].get("value")

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.ws.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Headless Chromium as root is run: no sandbox of its own, no background networking
    (this machine's network is closed), an empty profile; its DevTools port read from the
    profile's DevToolsActivePort."""
    if CHROMIUM is None:
        pytest.skip("no chromium on PATH (apt-get install chromium): the report's browser "
                    "test needs a real browser")
    profile = tmp_path_factory.mktemp("chromium-profile")
    proc = subprocess.Popen(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--hide-scrollbars", f"--user-data-dir={profile}",
         "--remote-debugging-port=0", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
        start_new_session=True)
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.is_file() and port_file.read_text().strip()):
            assert proc.poll() is None, f"chromium exited {proc.returncode}"
            assert time.monotonic() < deadline, "chromium wrote no DevToolsActivePort in 60 s"
            time.sleep(0.2)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as r:
            tabs = [t for t in json.load(r) if t.get("type") == "page"]
        page = Page(tabs[0]["webSocketDebuggerUrl"])
        yield page
        page.close()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """report.html of a zero-key run of the bundled example marketplace: failed cases with
    long commands and tracebacks, passes, untested doc tests."""
    work = tmp_path_factory.mktemp("report")
    shutil.copytree(EXAMPLES, work / "marketplace")
    out = work / "store"
    assert main(["run", str(work / "marketplace"), "--runtime", "literal", "--out", str(out),
                 "-q"]) == 1
    (run_dir,) = (out / "runs").iterdir()
    return run_dir / "report.html"


def load(page: Page, report: Path, width: int, shots: Path) -> dict:
    page.call("Emulation.setDeviceMetricsOverride", width=width, height=900,
              deviceScaleFactor=1, mobile=False)
    page.call("Page.enable")
    page.call("Page.navigate", url=report.as_uri())
    deadline = time.monotonic() + 30
    while page.eval("document.readyState") != "complete":
        assert time.monotonic() < deadline, "report.html did not load in 30 s"
        time.sleep(0.1)
    shot = page.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
    png = base64.b64decode(shot["data"])
    (shots / f"report-{width}.png").write_bytes(png)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000, "a blank screenshot"
    return page.eval("""(() => {
      const vw = document.documentElement.clientWidth;
      const wide = [];
      for (const el of document.body.querySelectorAll('*')) {
        // a box that scrolls its own overflow (pre, a table's wrapper) is fine; one that
        // sticks out of the window is not
        const r = el.getBoundingClientRect();
        if (r.width && (r.right > vw + 1 || r.left < -1)) wide.push(el.tagName + ': ' +
            (el.textContent || '').trim().slice(0, 60));
      }
      const text = [...document.body.querySelectorAll('p, h1, h2, h3, td, th, li, pre')]
        .filter(e => e.getBoundingClientRect().width > 0);
      const left = Math.min(...text.map(e => e.getBoundingClientRect().left));
      const right = Math.max(...text.map(e => e.getBoundingClientRect().right));
      const failed = [...document.querySelectorAll('td.fail')].map(td => {
        const reason = td.parentElement.lastElementChild.getBoundingClientRect();
        return reason.width > 0 && reason.height > 0;
      });
      const untested = [...document.querySelectorAll('td.untested')].map(
        td => td.nextElementSibling.textContent.trim());
      return {vw, scroll: document.documentElement.scrollWidth, wide: wide.slice(0, 8),
              left, right, failed, untested};
    })()""")


@pytest.mark.parametrize("width", [1280, 400])
def test_the_report_reads_at_desktop_and_phone_width(browser, report, width, tmp_path):
    got = load(browser, report, width, tmp_path)
    # the page never scrolls sideways, and no element sticks out of the window
    assert got["scroll"] <= got["vw"], got
    assert got["wide"] == [], got
    # the text keeps a margin from both edges of the window
    assert got["left"] >= 8 and got["vw"] - got["right"] >= 8, got
    # four cases of the example marketplace fail (two defective skills), each with its reason
    # on screen; the untested doc tests have no rate
    assert len(got["failed"]) == 4 and all(got["failed"]), got
    assert got["untested"] and set(got["untested"]) == {"–"}, got
