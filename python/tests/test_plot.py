# SPDX-License-Identifier: GPL-2.0-only
"""`warmcore plot`, through the Rust CLI that runs the package."""

import os
import random
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from PIL import Image

from conftest import BIN, MS

pytestmark = pytest.mark.usefixtures("needs_binary")


def run(*args, cwd=None, env=None):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env)


def test_png_shows_the_frequency_bands(known_trace, tmp_path):
    out = tmp_path / "f.png"
    r = run("plot", known_trace, "--view", "freq", "-o", out)
    assert r.returncode == 0, r.stderr
    assert "raster" in r.stdout and "5 segments" in r.stdout
    img = np.asarray(Image.open(out).convert("RGB"))
    # The plot area only (4 CPUs of 24 px under a 30 px title), not the legend.
    colors = {tuple(int(x) for x in c) for c in img[31:30 + 4 * 24, 61:1400 - 260].reshape(-1, 3)}
    # The lowest band's blue, base band's orange and idle's grey are drawn.
    for hexc in ("#2c7bb6", "#fdae61", "#e8e8e8"):
        assert tuple(int(hexc[i:i + 2], 16) for i in (1, 3, 5)) in colors, hexc
    # The highest band is not: nothing ran above 2.5 GHz at a switch.
    assert (0xd7, 0x19, 0x1c) not in colors


def test_html_zoomed_in_has_exact_segments_with_hover(known_trace, tmp_path):
    out = tmp_path / "z.html"
    r = run("plot", known_trace, "--view", "process", "--from", "50ms", "--to", "51ms", "-o", out)
    assert r.returncode == 0, r.stderr
    assert "exact segments" in r.stdout
    html = out.read_text()
    assert "HoverTool" in html and '"ld"' in html
    # Self-contained: the page does not load Bokeh from elsewhere.
    assert "<script src=\"http" not in html


def test_bad_inputs_give_one_line(known_trace, tmp_path):
    bad = tmp_path / "bad.wct"
    bad.write_bytes(b"\0" * 100)
    r = run("plot", bad, "-o", tmp_path / "x.png")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and str(bad) in r.stderr
    r = run("plot", known_trace, "--view", "nope", "-o", tmp_path / "x.png")
    assert r.returncode == 2 and "no such view" in r.stderr and r.stderr.count("\n") == 1
    r = run("plot", known_trace, "-o", tmp_path / "x.jpg")
    assert r.returncode == 2 and "expected an output ending in .png or .html" in r.stderr
    r = run("plot", known_trace, "--from", "5ms", "--to", "1ms", "-o", tmp_path / "x.png")
    assert r.returncode == 2 and "is not before" in r.stderr
    v = tmp_path / "evil.toml"
    v.write_text('name = "e"\nshape = "marks"\n[[category]]\nlabel = "x"\nquery = "__import__(\'os\').system(\'touch pwned\')"\n')
    r = run("plot", known_trace, "--view", v, "-o", tmp_path / "x.png", cwd=tmp_path)
    assert r.returncode == 2 and f"{v}:5: category 'x' query" in r.stderr and "function call" in r.stderr
    assert not (tmp_path / "pwned").exists()


def test_empty_trace_says_so(tmp_path):
    import warmcore

    p = tmp_path / "empty.wct"
    warmcore.Writer(str(p), 2).finish()
    r = run("plot", p, "-o", tmp_path / "x.png")
    assert r.returncode == 2 and r.stderr == f"warmcore: {p}: the trace has no events: nothing to plot\n"


def test_missing_venv_says_how_to_get_the_python_package(tmp_path, known_trace):
    b = tmp_path / "bin" / "warmcore"
    b.parent.mkdir()
    shutil.copy(BIN, b)
    env = {"PATH": "/usr/bin:/bin"}
    r = subprocess.run([str(b), "plot", str(known_trace), "-o", "x.png"], capture_output=True, text=True,
                       cwd=tmp_path, env=env)
    assert r.returncode == 1
    assert "pip install 'warmcore[viewer]'" in r.stderr and "make build" in r.stderr and r.stderr.count("\n") == 1


def test_an_interrupted_plot_leaves_the_older_picture_or_the_whole_new_one(tmp_path):
    """SIGINT or SIGTERM at random moments (seeded: every run tries the same)
    of `warmcore plot`: the picture is the older one or the whole new one, no
    temporary file is left, and a plot interrupted while it draws says so in
    its last line and exits 130 or 143 (docs/conventions.md)."""
    t = tmp_path / "t.wct"
    r = run("trace", "synth", "-o", t, "--events", "300000", "--cpus", "8")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "p.png"
    rng = random.Random(33)
    for sig in (signal.SIGINT, signal.SIGTERM):
        for _ in range(2):
            out.write_bytes(b"old")
            p = subprocess.Popen([str(BIN), "plot", str(t), "-o", str(out)], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True)
            time.sleep(rng.uniform(0, 3))
            p.send_signal(sig)
            _, err = p.communicate(timeout=300)
            # Done before the signal, interrupted, or killed before Python
            # set its handler.
            assert p.returncode in (0, 128 + sig, -sig), (p.returncode, err)
            if p.returncode == 128 + sig:
                assert err.strip().splitlines()[-1].startswith("warmcore: interrupted"), err
            data = out.read_bytes()
            assert data == b"old" or (data[:8] == b"\x89PNG\r\n\x1a\n" and data.endswith(b"IEND\xaeB`\x82")), data[:16]
            assert not [x.name for x in tmp_path.iterdir() if ".part" in x.name]


# `python -m warmcore.run ARGS...` as the Rust CLI runs it, but that SIGNAL
# is raised as MODULE is looked for: inside the import of whatever imports
# it. Arguments: MODULE SIGNAL ARGS...
SIGNAL_IN_IMPORT = """
import runpy, signal, sys

module, sig = sys.argv[1], int(sys.argv[2])


class Finder:
    def find_spec(self, name, path=None, target=None):
        if name == module:
            sys.meta_path.remove(self)
            signal.raise_signal(sig)
        return None


sys.meta_path.insert(0, Finder())
sys.argv = ["warmcore.run", *sys.argv[3:]]
runpy.run_module("warmcore.run", run_name="__main__", alter_sys=True)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_plot_interrupted_inside_numbas_import_says_so(known_trace, tmp_path, sig):
    """numba's C extension module imports numba._devicearray and reports
    any failure of that import as its own ImportError ("numba._devicearray
    failed to import"): a signal there still ends the plot as interrupted,
    in one line, the picture left as it was. The PNG's raster imports
    numba (through datashader) inside the plot: were it not imported, the
    plot would end by itself, 0."""
    out = tmp_path / "p.png"
    out.write_bytes(b"old")
    r = subprocess.run([sys.executable, "-c", SIGNAL_IN_IMPORT, "numba._devicearray", str(int(sig)),
                        "warmcore.view", "plot", str(known_trace), "-o", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert (r.returncode, r.stderr) == (128 + sig, f"warmcore: interrupted: not written, left as they were: {out}\n")
    assert out.read_bytes() == b"old" and [x.name for x in tmp_path.iterdir()] == ["p.png"]


def test_a_closed_stdout_ends_plot_as_it_ends_the_other_commands(known_trace, tmp_path):
    """Standard output closed before the summary line: killed by SIGPIPE (141
    in a shell), as `warmcore trace info` is, with nothing on stderr and the
    picture in place (docs/conventions.md, Pipes)."""
    out = tmp_path / "x.png"
    for args in (["plot", known_trace, "-o", out], ["trace", "info", known_trace]):
        # The pipe's reading end is closed before the command starts: its
        # first write finds no reader, however soon it writes.
        r, w = os.pipe()
        os.close(r)
        p = subprocess.Popen([str(BIN), *map(str, args)], stdout=w, stderr=subprocess.PIPE)
        os.close(w)
        err = p.stderr.read()
        assert p.wait(timeout=300) == -signal.SIGPIPE and err == b"", (args, p.returncode, err)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
