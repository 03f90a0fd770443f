#!/usr/bin/env python3
"""The bus's page in a real browser: Debian's Chromium, headless, driven
through Debian's chromedriver with Selenium (python3-selenium).

    page_test.py HOST ARTIFACTS CASE

HOST is dashboard_host (tests/dashboard/dashboard_host.cpp); ARTIFACTS a
directory for screenshots; CASE one of:

  operate   the page shows the endpoints, the open breaker and the failed
            group, which opens to its messages and its policy's plan drawn;
            a POST without the token is refused; with the token typed
            in, "replay all" sends the group back and the page shows it handled;
            a screenshot is taken, checked to be non-blank and kept.
  large     50 endpoints and 10,000 failed messages: the time to the first
            render is measured in the browser and reported (not asserted).
  picture   not a test: the README's picture of the page (scripts/doc-pictures.sh).
"""
import contextlib
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zlib

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

TOKEN = "page-test-token"


class Host:
    """dashboard_host as a child: started, its address read, stopped."""

    def __init__(self, path, *args):
        self.process = subprocess.Popen([path, *args], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line.startswith("listening on "):
            self.process.kill()
            raise SystemExit(f"dashboard_host did not start: {line!r}")
        self.url = "http://" + line.split()[-1]

    def stop(self):
        self.process.stdin.close()
        if self.process.wait(timeout=60) != 0:
            raise SystemExit(f"dashboard_host ended with {self.process.returncode}")


@contextlib.contextmanager
def session(host_path, *args):
    """dashboard_host started with `args` and a browser, both ended after."""
    host = Host(host_path, *args)
    try:
        driver = browser()
        try:
            yield host, driver
        finally:
            driver.quit()
    finally:
        host.stop()


def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    # Root in a container needs --no-sandbox; the rest keeps Chromium from
    # calling Google's hosts on a machine without internet.
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1400,1000",
                 # A container's /dev/shm is often too small for Chromium's
                 # shared memory: it would crash a tab, not fail a check.
                 "--disable-dev-shm-usage",
                 "--user-data-dir=" + tempfile.mkdtemp(prefix="bus-page-chromium-")):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def wait_for(driver, what, condition, seconds=30):
    try:
        return WebDriverWait(driver, seconds, poll_frequency=0.1).until(lambda d: condition(d))
    except Exception:
        raise AssertionError(f"the page never showed {what}; it shows:\n"
                             + driver.execute_script("return document.body.innerText"))


def click(driver, css, seconds=30):
    """Clicks the element `css` finds, finding it again if the page re-drew it."""
    until = time.monotonic() + seconds
    while True:
        try:
            return driver.find_element(By.CSS_SELECTOR, css).click()
        except (StaleElementReferenceException, NoSuchElementException):
            if time.monotonic() > until:
                raise
            time.sleep(0.05)


def text_of(driver, css):
    """The text of the first element `css` finds, None if none: read in the
    page in one step, as the page re-draws its rows every second."""
    return driver.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.textContent : null;", css)


def texts_of(driver, css):
    return driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0]), e => e.textContent);", css)


def post(url, body, token=None):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    if token is not None:
        request.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as e:
        return e.code


def failed_total(url):
    with urllib.request.urlopen(url + "/api/failed", timeout=10) as answer:
        return json.load(answer)["total"]


def png_colours(png):
    """The distinct pixel values of an 8-bit, non-interlaced RGB(A) PNG."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height, channels = 8, b"", 0, 0, 0
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos:pos + 8])
        data = png[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", data)
            assert depth == 8 and colour in (2, 6) and interlace == 0, "unexpected PNG kind"
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += data
        pos += 12 + length
    raw, stride = zlib.decompress(idat), width * channels
    previous, colours = bytearray(stride), set()
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up, up_left = previous[i], previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - up_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - up_left)
                nearest = left if pa <= pb and pa <= pc else up if pb <= pc else up_left
                line[i] = (line[i] + nearest) & 0xFF
        for x in range(0, stride, channels * 7):  # a sample of the pixels is enough
            colours.add(bytes(line[x:x + channels]))
        previous = line
    return colours


def operate(host_path, artifacts):
    with session(host_path, "--token", TOKEN, "--failed", "20") as (host, driver):
        driver.get(host.url + "/")
        wait_for(driver, "the billing endpoint", lambda d: text_of(d, "#endpoint-billing"))
        assert text_of(driver, "#endpoint-refunds") is not None
        wait_for(driver, "the payments breaker open",
                 lambda d: text_of(d, "tr[data-breaker=payments] .state") or "")
        state = text_of(driver, "tr[data-breaker=payments] .state")
        assert state.startswith("open"), state
        group = "tr[data-group='billing|shop::card_declined']"
        wait_for(driver, "the failed group", lambda d: text_of(d, group + " .count") == "20")

        # A group opens to its messages and the policy's plan for its exception.
        click(driver, group)
        wait_for(driver, "the group's messages",
                 lambda d: len(texts_of(d, "#messages .message")) == 20)
        wait_for(driver, "the policy's plan drawn", lambda d: d.execute_script(
            "const i = document.querySelector('figure.policy img');"
            "return i && i.complete && i.naturalWidth > 0;"))

        # A write without the token, or with a wrong one, changes nothing.
        body = {"queue": "billing_error", "endpoint": "billing",
                "exception_type": "shop::card_declined"}
        assert post(host.url + "/api/failed/replay", body) == 403
        assert post(host.url + "/api/failed/purge", body, "wrong") == 403
        assert failed_total(host.url) == 20

        # The operator types the token and presses "replay all".
        driver.find_element(By.ID, "token").send_keys(TOKEN)
        click(driver, group + " button.replay")
        wait_for(driver, "the replay done",
                 lambda d: "replayed 20" in (text_of(d, "#notice") or ""))
        wait_for(driver, "the group gone", lambda d: text_of(d, group) is None)
        wait_for(driver, "the replayed messages handled",
                 lambda d: "20 handled" in (text_of(d, "#endpoint-billing .error-queue") or ""))
        assert failed_total(host.url) == 0

        os.makedirs(artifacts, exist_ok=True)
        shot = os.path.join(artifacts, "dashboard.png")
        driver.save_screenshot(shot)
        with open(shot, "rb") as f:
            colours = png_colours(f.read())
        assert len(colours) > 8, f"the screenshot looks blank: {len(colours)} colours"
        print(f"screenshot: {shot} ({len(colours)} colours sampled)")


def large(host_path, artifacts):
    with session(host_path, "--endpoints", "50", "--failed", "10000") as (host, driver):
        started = time.monotonic()
        driver.get(host.url + "/")
        wait_for(driver, "the first render",
                 lambda d: d.execute_script("return document.body.dataset.firstRender"), 60)
        first_render = float(driver.execute_script("return document.body.dataset.firstRender"))
        rows = texts_of(driver, "#endpoints tbody tr")
        assert len(rows) == 53, len(rows)  # billing, refunds, shipping and the 50
        counts = [int(c) for c in texts_of(driver, "#failed .count")]
        assert sum(counts) == 10000, sum(counts)
        print(f"first render with 53 endpoints and 10000 failed messages: {first_render:.0f} ms "
              f"after navigation ({time.monotonic() - started:.2f} s as the test saw it)")


def picture(host_path, artifacts):
    """Not a test: the README's picture of the page, after a minute of traffic."""
    with session(host_path, "--failed", "20", "--traffic", "1") as (host, driver):
        driver.set_window_size(1400, 900)
        driver.get(host.url + "/")
        time.sleep(60)  # the charts fill in over real time: that is what they show
        click(driver, "tr.group")
        wait_for(driver, "a failed message", lambda d: texts_of(d, ".message"))
        os.makedirs(artifacts, exist_ok=True)
        driver.save_screenshot(os.path.join(artifacts, "dashboard.png"))


if __name__ == "__main__":
    host_path, artifacts, case = sys.argv[1:4]
    {"operate": operate, "large": large, "picture": picture}[case](host_path, artifacts)
