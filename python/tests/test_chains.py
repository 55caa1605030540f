# SPDX-License-Identifier: GPL-2.0-only
"""Wake-up chains in Python and in the viewer's document: the links the
Rust analysis gives, the waker each segment's hover names, and the arrows a
click or a pid draws."""

import threading

import numpy as np
import pytest
from bokeh.document import Document

import warmcore
from warmcore import _native, chains, server
from warmcore import EVENT_IDS as ID

from conftest import MS


@pytest.fixture(scope="module")
def configure_trace(tmp_path_factory):
    p = tmp_path_factory.mktemp("chains") / "configure.wct"
    warmcore.sim("configure", machine="default", policy="cfs", governor="powersave", trace=str(p))
    return p


def test_links_of_the_known_trace(known_trace):
    t = warmcore.open(known_trace)
    f = t.links().to_pandas()
    # make (101) on CPU 0 at 1.1 GHz wakes cc1 (102) at 5 ms; cc1 runs on
    # CPU 0 from 10 ms (1.1 GHz, then 2.9 GHz from 12 ms) until it blocks at
    # 60 ms: 50 ms, none of it below 1.1 GHz.
    assert len(f) == 1
    k = f.iloc[0]
    assert (k["waker"], k["waker_cpu"], k["waker_khz"], k["wakee"], k["target_cpu"]) == (101, 0, 1_100_000, 102, 1)
    assert (k["cpu"], k["start"], k["khz"], k["end"]) == (0, 10 * MS, 1_100_000, 60 * MS)
    assert (k["run_ns"], k["below_ns"], k["fork"]) == (50 * MS, 0, False)
    assert np.isnan(k["parent"])

    ch = chains.Chains(t)
    assert ch.error is None
    # cc1's segments at 10 and 30 ms are link 0's; make's at 2 ms has none;
    # cc1 after its link ended (70 ms) has none either.
    assert ch.link_of([102, 102, 101, 102], [10 * MS, 30 * MS, 2 * MS, 70 * MS]).tolist() == [0, 0, -1, -1]
    assert ch.describe([0, -1]) == ["make (101) on CPU 0 at 1100 MHz (woken at 5.000 ms)", "not woken in the trace"]
    src = ch.hover({"task": np.array([102, 0, 101]), "left": np.array([10.0, 0.0, 2.0])})
    assert src["waker"] == [ch.describe([0])[0], "", "not woken in the trace"]
    assert ch.tasks([0, 103, 999]) == ["<idle>", "ld.gold (103)", "- (999)"]
    a = ch.arrows([0])
    assert (a["x0"][0], a["y0"][0], a["x1"][0], a["y1"][0]) == (5.0, 0.0, 10.0, 0.0)
    assert a["label"] == ["1100\u21921100 MHz"]


def test_without_frequencies_the_links_say_unknown(tmp_path):
    # A recording without FREQ_CHANGE or TICK frequencies (perf's, often):
    # 10 on CPU 0 wakes 20, which runs on CPU 1 from 3 to 6 ms.
    path = tmp_path / "nofreq.wct"
    w = warmcore.Writer(str(path), 2)
    w.note_process(10, 1, "make", 0)
    w.push(0, 1 * MS, 0, ID["CTX_SWITCH"], 10, 0)
    w.push(0, 2 * MS, 20, ID["WAKEUP"], 1, 10)
    w.push(1, 3 * MS, 0, ID["CTX_SWITCH"], 20, 0)
    w.push(1, 6 * MS, 20, ID["CTX_SWITCH"], 0, 1)
    w.finish()
    t = warmcore.open(path)
    b = t.links()
    assert b.column("waker_khz").null_count == b.column("khz").null_count == b.column("below_ns").null_count == 1
    assert b.column("run_ns").to_pylist() == [3 * MS]
    ch = chains.Chains(t)
    assert ch.describe([0]) == ["make (10) on CPU 0 at ? MHz (woken at 1.000 ms)"]
    a = ch.arrows([0])
    assert a["label"] == ["?\u2192? MHz"] and (a["y0"][0], a["y1"][0]) == (0, 1)
    assert "no frequency data" in ch.summary([0])


def test_chain_is_the_rust_traversal():
    # 0 <- 1 <- 2, 1 <- 3; 4 alone (no parent: None or negative).
    parents = [None, 0, 1, 1, -1]
    assert _native.chain(parents, [2]) == [0, 1, 2]
    assert _native.chain(parents, [1]) == [0, 1, 2, 3]
    assert _native.chain(parents, [4]) == [4]
    assert _native.chain(parents, [9]) == []


def test_a_trace_without_wakeups_says_so(tmp_path):
    path = tmp_path / "nowake.wct"
    w = warmcore.Writer(str(path), 2)
    w.push(0, 1_000_000, 0, ID["CTX_SWITCH"], 10, 0)
    w.push(0, 2_000_000, 10, ID["CTX_SWITCH"], 0, 1)
    w.finish()
    with pytest.raises(warmcore.TraceError, match="no WAKEUP, WAKEUP_NEW or FORK events"):
        warmcore.open(path).links()
    model = server.Model(str(path), "freq")
    doc = Document()
    server.make_document(doc, model)
    assert "no WAKEUP, WAKEUP_NEW or FORK events" in doc.get_model_by_name("chain_status").text
    assert doc.get_model_by_name("chain_pid").disabled


def test_clicking_a_segment_draws_its_chain_across_cpus(configure_trace):
    model = server.Model(str(configure_trace), "freq")
    model.warm_up()
    doc = Document()
    refresh, x_range, status = server.make_document(doc, model)
    f = chains.of(model).links
    # The first shell's first child (a fork on another CPU): its first segment.
    k = f.iloc[1]
    assert k["fork"] and k["cpu"] != k["waker_cpu"]
    x_range.start, x_range.end = k["start"] / MS - 0.2, k["start"] / MS + 0.5
    refresh()
    assert "id='mode'>exact" in status.text
    seg = doc.get_model_by_name("segments").data_source
    i = next(j for j, (t, l) in enumerate(zip(seg.data["task"], seg.data["link"])) if t == k["wakee"] and l == 1)
    assert seg.data["waker"][i].startswith(f"sh ({int(k['waker'])}) on CPU {int(k['waker_cpu'])} at ")
    seg.selected.indices = [i]   # what a click does
    arrows = doc.get_model_by_name("chain_arrows").data
    assert 1 in list(arrows["link"]) and 0 in list(arrows["link"])
    cpus = set(arrows["y0"]) | set(arrows["y1"])
    assert len(cpus) >= 3, cpus
    assert all(lab.endswith(" MHz") for lab in arrows["label"])
    # The whole run is one fork/wait chain through the first shell: more
    # links than are drawn, the nearest ones kept.
    text = doc.get_model_by_name("chain_status").text
    assert f"Chain of link 1, sh ({int(k['wakee'])}) by {seg.data['waker'][i]}: " in text
    assert f"<span id='chain-links'>{len(f)}</span> links across" in text
    assert len(arrows["link"]) == chains.ARROWS_MAX and "nearest the followed one" in text
    # The pid box: the same chain through the child, and the view moves to it.
    doc.get_model_by_name("chain_pid").value = str(int(k["wakee"]))
    _click(doc.get_model_by_name("follow_chain"))
    assert list(doc.get_model_by_name("chain_arrows").data["link"])[:2] == [0, 1]
    assert x_range.start == 0.0
    doc.get_model_by_name("chain_pid").value = "x"
    _click(doc.get_model_by_name("follow_chain"))
    assert "expected a pid" in doc.get_model_by_name("chain_status").text


def _click(button):
    from bokeh.events import ButtonClick

    button._trigger_event(ButtonClick(button))


def test_a_large_traces_links_come_on_a_thread(known_trace, monkeypatch):
    monkeypatch.setattr(chains, "SYNC_MAX_EVENTS", 3)
    gate = threading.Event()

    class Slow(chains.Chains):
        def __init__(self, trace):
            gate.wait(60)
            super().__init__(trace)

    monkeypatch.setattr(chains, "Chains", Slow)
    model = server.Model(str(known_trace), "freq")
    doc = Document()
    refresh, x_range, status = server.make_document(doc, model)
    seg = doc.get_model_by_name("segments").data_source
    x_range.start, x_range.end = 9.0, 30.0
    refresh()
    # Until the thread is done, hover says the links are coming; a click too.
    assert set(seg.data["waker"]) == {chains.PENDING}
    seg.selected.indices = [0]
    assert chains.PENDING in doc.get_model_by_name("chain_status").text
    gate.set()
    model._chains_thread.join(60)
    refresh()
    i = list(seg.data["task"]).index(102)
    assert seg.data["waker"][i].startswith("make (101) on CPU 0 at 1100 MHz")


def test_a_trace_drawn_from_its_summary_derives_its_links_only_when_asked(configure_trace, monkeypatch):
    # As if the trace were large: links on a thread. A trace read whole starts
    # that thread with its first page; one drawn from its summary is never
    # read whole unasked, until a click or the pid box asks for a chain.
    monkeypatch.setattr(chains, "SYNC_MAX_EVENTS", 0)
    whole = server.Model(str(configure_trace), "freq")
    assert whole.lod is None
    assert chains.ready(whole) is None and whole._chains_thread is not None
    whole._chains_thread.join(60)

    model = server.Model(str(configure_trace), "freq", lod_events=0)
    assert model.lod is not None
    assert chains.ready(model) is None
    assert getattr(model, "_chains_thread", None) is None
    assert chains.ready(model, asked=True) is None
    model._chains_thread.join(60)
    ch = chains.ready(model)
    assert ch is not None and len(ch.links) > 100
