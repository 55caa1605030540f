# SPDX-License-Identifier: GPL-2.0-only
"""Headless Debian Chromium driven by Selenium, for the viewer's end-to-end
tests and its benchmark (the time to a first picture a person would see)."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from contextlib import contextmanager

CHROMIUM = "/usr/bin/chromium"
DRIVER = "/usr/bin/chromedriver"

# All text of the page, through Bokeh's shadow roots.
DEEP_TEXT = """
function walk(n) {
  let s = '';
  if (n.shadowRoot) s += walk(n.shadowRoot);
  for (const c of n.childNodes) {
    if (c.nodeType === 3) s += c.textContent + ' ';
    else s += walk(c);
  }
  return s;
}
return walk(document.body);
"""


def available() -> bool:
    return os.path.exists(CHROMIUM) and os.path.exists(DRIVER)


@contextmanager
def chromium(width=1400, height=1500):
    """A headless Chromium with a throw-away profile."""
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="warmcore-chromium-")
    o = Options()
    o.binary_location = CHROMIUM
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
              "--disable-background-networking", "--disable-component-update", "--disable-sync",
              f"--window-size={width},{height}", f"--user-data-dir={profile}"):
        o.add_argument(a)
    d = webdriver.Chrome(service=Service(DRIVER), options=o)
    d.set_page_load_timeout(60)
    try:
        yield d
    finally:
        d.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_text(d, pred, timeout=90, poll=0.25):
    """The page's text once `pred` holds for it; AssertionError after `timeout` s."""
    deadline = time.monotonic() + timeout
    text = ""
    while time.monotonic() < deadline:
        text = d.execute_script(DEEP_TEXT)
        if pred(text):
            return text
        time.sleep(poll)
    raise AssertionError(f"timed out; the page says: {text[:2000]}")


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Served:
    """A `warmcore view` started by `view_process`: its URL, its process and
    what it wrote to stderr so far."""

    def __init__(self, url, process, err):
        self.url, self.process, self._err = url, process, err

    def stderr(self):
        return _read(self._err)


@contextmanager
def view_process(binary, trace, *extra, timeout=120, env=None):
    """`warmcore view TRACE` on a free port (in the environment `env`, else
    this one's): yields it (`Served`) once it has printed its URL, and ends
    it afterwards if it still runs."""
    import signal
    import subprocess
    import threading

    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    # Its output in files, read at will: a pipe nobody reads once the URL
    # is out would stop the server when its logs fill it, and a read of a
    # pipe waits past any deadline for a line that does not come.
    with tempfile.TemporaryDirectory(prefix="warmcore-view-") as d:
        out, err = os.path.join(d, "stdout"), os.path.join(d, "stderr")
        # The server starts with SIGINT delivered and at its default action,
        # as from a terminal, whatever this process inherited: an ignored or
        # a blocked signal stays so in the programs it starts, and a Python
        # started with SIGINT ignored never raises KeyboardInterrupt (a
        # process started in the background by a script, as make test's
        # lanes are, ignores SIGINT). A handled signal takes its default
        # action again in the new program; only the main thread may set a
        # handler, and the mask is the starting thread's own.
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGINT, signal.default_int_handler) if main else None
        mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        try:
            with open(out, "w") as o, open(err, "w") as e:
                p = subprocess.Popen([str(binary), "view", str(trace), "--port", str(port), *extra],
                                     stdout=o, stderr=e, env=env)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            if main:
                signal.signal(signal.SIGINT, previous)
        try:
            deadline = time.monotonic() + timeout
            while url not in _read(out) and p.poll() is None and time.monotonic() < deadline:
                time.sleep(0.1)
            if url not in _read(out):
                raise AssertionError(f"warmcore view printed {_read(out)!r} (status {p.poll()}); "
                                     f"stderr: {_read(err)!r}")
            yield Served(url, p, err)
        finally:
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@contextmanager
def view_server(binary, trace, *extra, timeout=120, env=None):
    """`view_process`'s URL."""
    with view_process(binary, trace, *extra, timeout=timeout, env=env) as served:
        yield served.url


def _read(path):
    with open(path) as f:
        return f.read()
