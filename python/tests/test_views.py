# SPDX-License-Identifier: GPL-2.0-only
"""The expression language and the view files."""

import numpy as np
import pytest

import warmcore
from warmcore import expr as E
from warmcore import views as V

from conftest import MS

ENV = {"a": np.array([1, 2, 3, 4], dtype=np.uint32), "b": np.array([10, 0, 10, 0], dtype=np.uint32),
       "comm": np.array(["sh", "cc1", "ld", "sh"], dtype=object), "FMAX": 5}


def ev(text):
    return list(E.parse(text).eval(ENV))


def test_comparisons_boolean_arithmetic_membership():
    assert ev("a > 2") == [False, False, True, True]
    assert ev("a >= 2 and b == 0") == [False, True, False, True]
    assert ev("a == 1 or not b") == [True, True, False, True]
    assert ev("1 < a <= 3") == [False, True, True, False]
    assert ev("a * 10 - b == 0") == [True, False, False, False]
    assert ev("a in [2, 4]") == [False, True, False, True]
    assert ev("comm not in ('sh', 'ld')") == [False, True, False, False]
    assert ev("comm == 'sh'") == [True, False, False, True]
    assert ev("(a + FMAX) % 2 == 0") == [True, False, True, False]
    # Unsigned columns do not wrap when subtracted.
    assert list(E.parse("a - 3").eval(ENV)) == [-2, -1, 0, 1]


@pytest.mark.parametrize("text, found", [
    ("__import__('os').system('true')", "a function call"),
    ("len(comm) > 2", "a function call"),
    ("a.__class__", "an attribute access"),
    ("comm[0] == 's'", "a subscript"),
    ("(lambda: 1)()", "a function call"),
    ("[x for x in a]", "a comprehension"),
    ("a if b else 1", "a conditional expression"),
    ("a in b", "`in` over something other than a literal list"),
    ("a is None", "`is`"),
    ("~a", "the operator ~"),
    ("a ** 2", "the operator Pow"),
])
def test_code_is_rejected(text, found):
    with pytest.raises(E.ExprError) as e:
        E.parse(text)
    assert e.value.msg.startswith(found + " is not allowed: expected")


def test_unknown_columns_and_syntax():
    with pytest.raises(E.ExprError, match="unknown column 'c'"):
        E.parse("a + c", known={"a", "b"})
    with pytest.raises(E.ExprError, match="expected an expression"):
        E.parse("a >")


def write(tmp_path, text, name="v.toml"):
    p = tmp_path / name
    p.write_text(text)
    return p


GOOD = '''name = "t"
events = ["CTX_SWITCH"]
begin = "ts"
end = "end"

[[derive]]
name = "end"
next = "ts"

[[category]]
label = "x"
query = "a != 0"
'''


def test_view_file_that_calls_a_function_is_rejected_with_file_and_line(tmp_path):
    p = write(tmp_path, GOOD + '\n[[category]]\nlabel = "evil"\nquery = "open(\'/etc/passwd\')"\n')
    with pytest.raises(V.ViewError) as e:
        V.load(str(p))
    msg = str(e.value)
    assert msg.startswith(f"{p}:16: category 'evil' query:")
    assert "a function call is not allowed: expected" in msg and "\n" not in msg


def test_view_file_that_reaches_an_attribute_or_subscript_is_rejected(tmp_path):
    p = write(tmp_path, GOOD.replace('query = "a != 0"', 'query = "a.real != 0"'))
    with pytest.raises(V.ViewError, match=r":12: category 'x' query: 'a.real != 0': an attribute access is not allowed"):
        V.load(str(p))
    p = write(tmp_path, '{"name": "j", "events": ["TICK"], "shape": "marks",\n "category": [\n {"label": "x", "query": "a[0] > 1"}]}', "v.json")
    with pytest.raises(V.ViewError, match=r"v.json:3: category 'x' query: 'a\[0\] > 1': a subscript is not allowed"):
        V.load(str(p))


def test_view_file_errors_name_line_and_expectation(tmp_path):
    p = write(tmp_path, GOOD.replace('next = "ts"', 'next = "nope"'))
    with pytest.raises(V.ViewError, match=r"v.toml:8: derive 'end': next = 'nope': expected a column"):
        V.load(str(p))
    p = write(tmp_path, GOOD.replace('query = "a != 0"', 'query = "a != zz"'))
    with pytest.raises(V.ViewError, match=r":12: category 'x' query: 'a != zz': unknown column 'zz'"):
        V.load(str(p))
    p = write(tmp_path, GOOD.replace('begin = "ts"', 'bogus = 1'))
    with pytest.raises(V.ViewError, match=r"v.toml:3: unknown setting 'bogus'"):
        V.load(str(p))
    p = write(tmp_path, 'name = "x"\nevents = [\n')
    with pytest.raises(V.ViewError, match=r"v.toml:\d+: expected TOML"):
        V.load(str(p))
    with pytest.raises(V.ViewError, match="no such view: expected a file or one of .*freq"):
        V.load("nonesuch")


def test_builtin_views_load():
    assert {"freq", "process", "runqueue", "nest", "smove"} <= set(V.builtin_names())
    for n in V.builtin_names():
        assert V.load(n).categories


def seg(layer, cpu):
    f = layer.frame[layer.frame["cpu"] == cpu]
    return [(int(r.begin), int(r.end), str(r.cat)) for r in f.itertuples()]


def test_frequency_bands_on_the_known_trace(known_trace):
    d = V.TraceData(warmcore.open(known_trace))
    L = V.apply(V.load("freq"), d)
    # FMIN 1.0, FBASE 2.0, FMAX 3.0 GHz: make at 1.1 GHz is lowest band,
    # cc1 at 1.1 GHz until its 12 ms tick reports 2.9 GHz (frequency at the
    # switch, 10 ms, is still 1.1), then idle to the end.
    assert seg(L, 0) == [(1 * MS, 10 * MS, "lowest band (min to mid-base)"),
                         (10 * MS, 60 * MS, "lowest band (min to mid-base)"),
                         (60 * MS, 100 * MS, "idle")]
    # ld at base frequency: "above base" starts at FBASE.
    assert seg(L, 1) == [(50_500_000, 50_700_000, "above base"), (50_700_000, 100 * MS, "idle")]
    assert "comm" not in L.frame  # hover-only: computed for the rows in view
    full = V.complete(L, d, L.frame)
    row = full[(full["cpu"] == 1) & (full["task"] == 103)].iloc[0]
    assert (row["comm"], row["freq"], row["pid"]) == ("ld", 2_000_000, 0)


def test_process_runqueue_nest_and_pairs(known_trace):
    d = V.TraceData(warmcore.open(known_trace))
    L = V.apply(V.load("process"), d)
    assert [c for _, _, c in seg(L, 0)] == ["make", "cc1", "idle"]
    assert L.colors["make"] != L.colors["cc1"]
    rq = V.apply(V.load("runqueue"), d)
    assert seg(rq, 0) == [(20 * MS, 30 * MS, "2 tasks"), (30 * MS, 100 * MS, "1 task")]
    nest = V.apply(V.load("nest"), d)
    assert seg(nest, 2) == [(3 * MS, 40 * MS, "primary nest"), (40 * MS, 100 * MS, "reserve nest")]
    sm = V.apply(V.load("smove"), d)
    assert seg(sm, 2) == [(41 * MS, 42 * MS, "S_move timer")]
    # A window keeps segments that reach into it.
    w = V.apply(V.load("freq"), d, start=20 * MS, end=30 * MS)
    assert seg(w, 0) == [(10 * MS, 60 * MS, "lowest band (min to mid-base)")]


def test_user_view_with_comm_where_and_membership(known_trace, tmp_path):
    p = write(tmp_path, '''
name = "compilers"
events = ["CTX_SWITCH", "WAKEUP"]
shape = "marks"
where = "event == 'CTX_SWITCH'"
hover = ["next_comm"]

[[derive]]
name = "next_comm"
comm_of = "a"

[[category]]
label = "to a compiler"
query = "next_comm in ['cc1', 'as'] and b == 1"
color = "#ff0000"
''')
    L = V.apply(V.load(str(p)), V.TraceData(warmcore.open(known_trace)))
    assert [(int(r.cpu), int(r.begin)) for r in L.frame.itertuples()] == [(0, 10 * MS)]


def test_runqueue_is_derived_when_the_trace_has_no_rq_size(tmp_path):
    from warmcore import EVENT_IDS as ID

    # CPU 0 runs 10 from 1 ms and wakes 20 and 30 onto CPU 1 at 2 and 3 ms;
    # CPU 1 runs 20 from 4 ms, 30 waiting; 20 blocks at 6 ms, 30 runs to 8 ms.
    path = tmp_path / "norq.wct"
    w = warmcore.Writer(str(path), 2)
    w.push(0, 1 * MS, 0, ID["CTX_SWITCH"], 10, 0)
    w.push(0, 2 * MS, 20, ID["WAKEUP"], 1, 10)
    w.push(0, 3 * MS, 30, ID["WAKEUP"], 1, 10)
    w.push(0, 9 * MS, 10, ID["CTX_SWITCH"], 0, 1)
    w.push(1, 4 * MS, 0, ID["CTX_SWITCH"], 20, 0)
    w.push(1, 6 * MS, 20, ID["CTX_SWITCH"], 30, 1)
    w.push(1, 8 * MS, 30, ID["CTX_SWITCH"], 0, 1)
    w.finish()
    data = V.TraceData(warmcore.open(path))
    assert not data.has("RQ_SIZE") and data.runqueue_derived
    f = V.apply(V.load("runqueue"), data).frame
    cpu1 = f[f["cpu"] == 1]
    # 1 task from 2 ms, 2 from 3 ms, 1 from 6 ms, 0 from 8 ms (times from the first event).
    got = list(zip((cpu1["begin"] / MS).round(3), cpu1["nr_running"]))
    assert got == [(1.0, 1), (2.0, 2), (5.0, 1), (7.0, 0)], got
    cpu0 = f[f["cpu"] == 0]
    assert list(cpu0["nr_running"]) == [1, 0]
