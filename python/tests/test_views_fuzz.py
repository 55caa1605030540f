# SPDX-License-Identifier: GPL-2.0-only
"""View files and the expression language on malformed input: a few hundred
texts mutated from the built-in views (fixed seed, so a failure reproduces),
as TOML text, as JSON text and as JSON whose values are replaced by values of
other types. Each parses to a View or raises ViewError, in one line; an
expression parses or raises ExprError. Anything else (TypeError, KeyError,
RecursionError, ...) is a bug in the parser."""

import json
import random
import tomllib

import pytest

from warmcore import expr as E
from warmcore import views as V

SEED = 20250611
ROUNDS = 600
# Characters that matter to TOML, JSON and the expression language.
ALPHABET = "[]{}()\"'=,.:#\\\n\t -+*/%<>!&|~^_0123456789eaxzTtrueFALSEnotinandor\x00\u00e9\U0001f600"


def _seeds():
    texts = [p.read_text() for p in sorted(V.BUILTIN_DIR.glob("*.toml"))]
    assert texts, "no built-in views to start from"
    return texts


def _mutate_text(rng, text):
    """A few random edits: delete, duplicate or move a span, insert characters."""
    for _ in range(rng.randint(1, 4)):
        n = len(text)
        i, j = sorted((rng.randrange(n + 1), rng.randrange(n + 1)))
        op = rng.randrange(5)
        if op == 0:
            text = text[:i] + text[j:]
        elif op == 1:
            text = text[:j] + text[i:j] + text[j:]
        elif op == 2:
            text = text[:i] + "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 8))) + text[i:]
        elif op == 3:
            lines = text.split("\n")
            rng.shuffle(lines)
            text = "\n".join(lines)
        else:
            k = rng.randrange(n + 1)
            text = text[:k] + text[i:j] + text[k:]
        if not text:
            text = rng.choice(ALPHABET)
    return text


def _value(rng, depth=0):
    """A JSON value of any type."""
    kinds = ["int", "float", "str", "bool", "null", "expr", "col"] + (["list", "dict"] if depth < 3 else [])
    k = rng.choice(kinds)
    if k == "int":
        return rng.choice([0, 1, -1, 2**63, 10**30, rng.randint(-5, 5)])
    if k == "float":
        return rng.choice([0.5, -1e308, 1e308, 1e-320])
    if k == "str":
        return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 10)))
    if k == "bool":
        return rng.random() < 0.5
    if k == "null":
        return None
    if k == "expr":
        return rng.choice(["a > 1", "ts", "end", "freq < FBASE", "a in [1, 2]", "(", "a.b", "x" * 50, "not", "1 <"])
    if k == "col":
        return rng.choice(sorted(V.BASE_COLUMNS | V.CONSTANTS) + ["nest", "end", "zz"])
    if k == "list":
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(["name", "query", "label", "color", "begin", "end", "next", "expr", "pair", "frequency",
                        "comm_of", "color_by", "column", "x"]): _value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def _mutate_tree(rng, node, depth=0):
    """Replace, drop or add a few values anywhere in a parsed view."""
    if isinstance(node, dict) and node:
        k = rng.choice(sorted(node))
        r = rng.random()
        if r < 0.4:
            node[k] = _value(rng)
        elif r < 0.5:
            del node[k]
        elif r < 0.6:
            node[rng.choice(["shape", "events", "where", "hover", "begin", "end", "derive", "category", "bogus"])] = _value(rng)
        else:
            node[k] = _mutate_tree(rng, node[k], depth + 1)
        return node
    if isinstance(node, list) and node:
        i = rng.randrange(len(node))
        r = rng.random()
        if r < 0.3:
            node[i] = _value(rng)
        elif r < 0.4:
            node.append(_value(rng))
        else:
            node[i] = _mutate_tree(rng, node[i], depth + 1)
        return node
    return _value(rng) if rng.random() < 0.7 else node


def _cases():
    rng = random.Random(SEED)
    seeds = _seeds()
    trees = [tomllib.loads(t) for t in seeds]
    out = []
    for n in range(ROUNDS):
        kind = n % 3
        if kind == 0:
            out.append((_mutate_text(rng, rng.choice(seeds)), False))
        elif kind == 1:
            out.append((_mutate_text(rng, json.dumps(rng.choice(trees), indent=1)), True))
        else:
            tree = json.loads(json.dumps(rng.choice(trees)))
            for _ in range(rng.randint(1, 3)):
                tree = _mutate_tree(rng, tree)
            out.append((json.dumps(tree), True))
    # Shapes a mutation rarely reaches: deep nesting, top-level non-tables.
    out += [("[" * 5000 + "]" * 5000, True), ("x = " + "[" * 5000 + "]" * 5000, False),
            ("3", True), ("null", True), ("", False), ("\x00", False), ("{" * 5000, True)]
    return out


def test_view_texts_parse_or_raise_view_error():
    failures = []
    for i, (text, as_json) in enumerate(_cases()):
        path = f"fuzz{i}.json" if as_json else f"fuzz{i}.toml"
        try:
            v = V.parse(text, path, json_format=as_json)
        except V.ViewError as e:
            if "\n" in str(e):
                failures.append(f"{path}: a ViewError of more than one line: {str(e)!r}\n    input: {text!r}")
            continue
        except Exception as e:  # noqa: BLE001: any other exception is the bug looked for
            failures.append(f"{path}: {type(e).__name__}: {e}\n    input: {text[:300]!r}")
            continue
        assert isinstance(v, V.View)
    assert not failures, f"{len(failures)} inputs broke the view parser:\n" + "\n".join(failures[:10])


@pytest.mark.parametrize("seed", range(3))
def test_expressions_parse_or_raise_expr_error(seed):
    rng = random.Random(SEED + seed)
    exprs = ["a > 2 and b == 0", "comm not in ('sh', 'ld')", "(a + FMAX) % 2 == 0", "1 < a <= 3", "freq < FBASE"]
    known = set(V.BASE_COLUMNS) | V.CONSTANTS | {"comm", "freq"}
    failures = []
    for _ in range(ROUNDS):
        text = _mutate_text(rng, rng.choice(exprs))
        for k in (None, known):
            try:
                E.parse(text, k)
            except E.ExprError:
                pass
            except Exception as e:  # noqa: BLE001
                failures.append(f"{type(e).__name__}: {e}: {text!r}")
    for text in ["(" * 5000 + ")" * 5000, "-" * 100000 + "a", "a" + " + a" * 50000, "not " * 20000 + "a"]:
        try:
            E.parse(text, known)
        except E.ExprError:
            pass
        except Exception as e:  # noqa: BLE001
            failures.append(f"{type(e).__name__}: {e}: {text[:60]!r}...")
    assert not failures, f"{len(failures)} expressions broke the parser:\n" + "\n".join(failures[:10])
