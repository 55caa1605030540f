# SPDX-License-Identifier: GPL-2.0-only
"""The views' small, safe expression language.

An expression is parsed with Python's ``ast`` module and then checked against
an allow-list of node types; nothing is ever passed to ``eval``. What is
allowed: column names and named constants, numbers, strings, ``True`` and
``False``; arithmetic (``+ - * / // %``, unary ``-``); comparisons (``== !=
< <= > >=``, chained as in ``1 <= a < 4``); ``and``, ``or``, ``not``;
membership ``x in [1, 2, 3]`` and ``x not in ("sh", "cc1")`` over a literal
list, tuple or set. Anything else, a function call, an attribute, a
subscript, a lambda, a comprehension, is rejected with a message that names
what was found and what was expected; so is an expression that nests more
than ``MAX_DEPTH`` deep (each ``+`` of a chain such as ``a + b + c`` is one
level).

Evaluation is vectorised: names are bound to numpy arrays or pandas Series
(one value per row) or to scalars, and ``and``/``or``/``not`` become the
element-wise ``&``/``|``/``~``, so that a query over ten million rows is a few
numpy passes.
"""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import pandas as pd

_CMP = {
    ast.Eq: np.equal, ast.NotEq: np.not_equal, ast.Lt: np.less, ast.LtE: np.less_equal,
    ast.Gt: np.greater, ast.GtE: np.greater_equal,
}
_ARITH = {
    ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.true_divide,
    ast.FloorDiv: np.floor_divide, ast.Mod: np.mod,
}

# The deepest expression tree accepted: far past any query a person writes,
# far inside Python's recursion limit for checking and evaluating it.
MAX_DEPTH = 100

_EXPECTED = ("expected a column, a number, a string, arithmetic, a comparison, "
             "and/or/not or `in [...]`")

# What a person wrote, named in the error.
_FOUND = {
    ast.Call: "a function call", ast.Attribute: "an attribute access", ast.Subscript: "a subscript",
    ast.Lambda: "a lambda", ast.ListComp: "a comprehension", ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension", ast.GeneratorExp: "a comprehension", ast.Dict: "a dict",
    ast.IfExp: "a conditional expression", ast.NamedExpr: "an assignment", ast.Starred: "a starred value",
    ast.JoinedStr: "an f-string", ast.Await: "await", ast.Yield: "yield", ast.YieldFrom: "yield",
    ast.Slice: "a slice",
}


class ExprError(ValueError):
    """An expression that is not in the language, or names an unknown column.
    ``col`` is the 0-based column inside the expression's text, if known."""

    def __init__(self, msg: str, col: int | None = None):
        super().__init__(msg)
        self.msg = msg
        self.col = col


@dataclass(frozen=True)
class Expr:
    text: str
    tree: ast.Expression
    names: frozenset

    def eval(self, env: Mapping[str, Any]):
        return _eval(self.tree.body, env)


def parse(text: str, known: set[str] | None = None) -> Expr:
    """Parse and check `text`; with `known`, every name must be in it."""
    if not isinstance(text, str):
        raise ExprError(f"expected an expression as a string, found {type(text).__name__}")
    src = text.strip()
    if not src:
        raise ExprError("expected an expression, found nothing")
    if "\n" in src:
        raise ExprError("expected an expression on one line")
    try:
        with warnings.catch_warnings():
            # Python's own warnings ("invalid decimal literal") are not ours to print.
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = ast.parse(src, mode="eval")
    except SyntaxError as e:
        raise ExprError(f"expected an expression: {e.msg}", (e.offset or 1) - 1) from None
    except (RecursionError, MemoryError):
        # Python's parser gives up on deep nesting with these.
        raise ExprError(f"expected an expression nested at most {MAX_DEPTH} deep") from None
    if _depth(tree.body) > MAX_DEPTH:
        raise ExprError(f"expected an expression nested at most {MAX_DEPTH} deep")
    names: set[str] = set()
    _check(tree.body, names, in_list=False)
    if known is not None:
        for n in sorted(names):
            if n not in known:
                raise ExprError(f"unknown column {n!r}: expected one of {', '.join(sorted(known))}",
                                _find_name(tree, n))
    return Expr(src, tree, frozenset(names))


def _depth(root) -> int:
    """How deeply the tree nests, walked without recursion (checking and
    evaluating recurse, so they get only trees of a bounded depth)."""
    deepest, todo = 0, [(root, 1)]
    while todo:
        node, d = todo.pop()
        deepest = max(deepest, d)
        if d <= MAX_DEPTH:
            todo.extend((c, d + 1) for c in ast.iter_child_nodes(node))
    return deepest


def _find_name(tree, name):
    for n in ast.walk(tree):
        if isinstance(n, ast.Name) and n.id == name:
            return n.col_offset
    return None


def _reject(node, what=None):
    found = what or _FOUND.get(type(node), type(node).__name__)
    raise ExprError(f"{found} is not allowed: {_EXPECTED}", getattr(node, "col_offset", None))


def _check(node, names, in_list):
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or isinstance(node.value, (int, float, str)):
            return
        _reject(node, f"the constant {node.value!r}")
    elif isinstance(node, ast.Name):
        if not isinstance(node.ctx, ast.Load):
            _reject(node, "an assignment")
        names.add(node.id)
    elif isinstance(node, ast.BoolOp):
        if not isinstance(node.op, (ast.And, ast.Or)):
            _reject(node)
        for v in node.values:
            _check(v, names, False)
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, (ast.Not, ast.USub, ast.UAdd)):
            _reject(node, "the operator ~")
        _check(node.operand, names, False)
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _ARITH:
            _reject(node, f"the operator {type(node.op).__name__}")
        _check(node.left, names, False)
        _check(node.right, names, False)
    elif isinstance(node, ast.Compare):
        _check(node.left, names, False)
        for op, right in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                if not isinstance(right, (ast.List, ast.Tuple, ast.Set)):
                    _reject(right, "`in` over something other than a literal list")
                for el in right.elts:
                    if not isinstance(el, ast.Constant) or not isinstance(el.value, (int, float, str)):
                        _reject(el, "a list element that is not a number or string")
            elif type(op) in _CMP:
                _check(right, names, False)
            else:
                _reject(node, "`is`")
    else:
        _reject(node)


def _eval(node, env):
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        try:
            return env[node.id]
        except KeyError:
            raise ExprError(f"unknown column {node.id!r}", node.col_offset) from None
    if isinstance(node, ast.BoolOp):
        vals = [np.asarray(_eval(v, env), dtype=bool) for v in node.values]
        out = vals[0]
        for v in vals[1:]:
            out = (out & v) if isinstance(node.op, ast.And) else (out | v)
        return out
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, env)
        if isinstance(node.op, ast.Not):
            return ~np.asarray(v, dtype=bool)
        return -_num(v) if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        return _ARITH[type(node.op)](_num(_eval(node.left, env)), _num(_eval(node.right, env)))
    if isinstance(node, ast.Compare):
        left = _eval(node.left, env)
        out = None
        for op, right_node in zip(node.ops, node.comparators):
            if isinstance(op, (ast.In, ast.NotIn)):
                items = [e.value for e in right_node.elts]
                if isinstance(left, pd.Categorical):
                    r = np.asarray(left.isin(items), dtype=bool)
                else:
                    r = np.isin(np.asarray(left), np.asarray(items, dtype=object if any(isinstance(i, str) for i in items) else None))
                if isinstance(op, ast.NotIn):
                    r = ~r
                right = None
            else:
                right = _eval(right_node, env)
                if isinstance(left, pd.Categorical) and isinstance(right, str) and type(op) in (ast.Eq, ast.NotEq):
                    r = np.asarray(left == right if isinstance(op, ast.Eq) else left != right, dtype=bool)
                elif isinstance(right, pd.Categorical) and isinstance(left, str) and type(op) in (ast.Eq, ast.NotEq):
                    r = np.asarray(right == left if isinstance(op, ast.Eq) else right != left, dtype=bool)
                else:
                    r = np.asarray(_CMP[type(op)](_cmp(left), _cmp(right)), dtype=bool)
            out = r if out is None else (out & r)
            left = right
        return out
    raise ExprError("unexpected expression")  # unreachable after _check


def _num(v):
    # Unsigned trace columns would wrap on subtraction: compute in signed 64-bit.
    if isinstance(v, np.ndarray) and v.dtype.kind == "u":
        return v.astype(np.int64)
    if hasattr(v, "dtype") and getattr(v.dtype, "kind", "") == "u":
        return np.asarray(v, dtype=np.int64)
    return v


def _cmp(v):
    if isinstance(v, pd.Categorical):
        return np.asarray(v, dtype=object)
    if hasattr(v, "to_numpy") and not isinstance(v, np.ndarray):
        return v.to_numpy()
    return _num(v)
