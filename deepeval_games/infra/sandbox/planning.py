"""Test plans: what the parent evaluates itself, and which sub-expressions the child must report.

Each ``assert`` test is parsed here with :mod:`ast`. Literals (``ast.literal_eval``), comparisons, ``not``,
``and``/``or`` and calls to a few pure functions (``sorted``, ``set``, ``len``, ``math.isclose``, ...; only
if the program never binds the name) become a :data:`Plan` the parent evaluates itself; every other
sub-expression (in MBPP, the call to the candidate's function) becomes a slot the child must fill. So for
``lhs == <literal>`` tests the expected value never enters the sandbox.
"""

from __future__ import annotations

import ast
import math
import operator
import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

__all__ = ["Plan", "bound_names", "evaluate", "literal_eval", "parse_python", "plan_test"]

_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], object]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: operator.contains(b, a),
    ast.NotIn: lambda a, b: not operator.contains(b, a),
}
_PURE_FUNCTIONS = (abs, all, any, bool, dict, float, frozenset, int, len, list, max, min, round, set, sorted)
_PURE_BUILTINS: dict[str, Callable[..., object]] = {f.__name__: f for f in (*_PURE_FUNCTIONS, str, sum, tuple)}
_PURE_MATH: dict[str, Callable[..., object]] = {
    f.__name__: f for f in (math.isclose, math.fabs, math.floor, math.ceil, math.sqrt)
}


@dataclass(frozen=True)
class _Lit:
    value: object


@dataclass(frozen=True)
class _Child:
    slot: int


@dataclass(frozen=True)
class _Compare:
    operands: tuple[Plan, ...]
    ops: tuple[Callable[[object, object], object], ...]


@dataclass(frozen=True)
class _Not:
    operand: Plan


@dataclass(frozen=True)
class _BoolOp:
    is_and: bool
    values: tuple[Plan, ...]


@dataclass(frozen=True)
class _Call:
    function: Callable[..., object]
    args: tuple[Plan, ...]
    kwargs: tuple[tuple[str, Plan], ...]


Plan = Union[_Lit, _Child, _Compare, _Not, _BoolOp, _Call]  # noqa: UP007 - a runtime alias on 3.10
"""What the parent computes for one test; a :class:`_Child` leaf is a value the child reports."""


_AST_LOCK = threading.Lock()


def parse_python(source: str) -> ast.Module:
    """``ast.parse`` behind a lock.

    CPython 3.11's AST builder keeps its recursion depth in module state shared by all threads; when a
    garbage collection inside one parse lets another thread parse too, the first fails with
    ``SystemError: AST constructor recursion depth mismatch`` (seen in the full test suite, where the 500
    reference solutions are sandboxed from a thread pool; several matches scored at once do the same).
    """
    with _AST_LOCK:
        return ast.parse(source)


def literal_eval(text: str) -> object:
    """``ast.literal_eval`` behind the same lock as :func:`parse_python`."""
    with _AST_LOCK:
        return ast.literal_eval(text)


def bound_names(sources: Sequence[str]) -> frozenset[str]:
    """Every name the program might bind (over-approximated; ``import math`` does not count for math)."""
    names: set[str] = set()
    for source in sources:
        try:
            with warnings.catch_warnings():  # e.g. invalid escape sequences: the child will warn, if anyone
                warnings.simplefilter("ignore")
                tree = parse_python(source)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            return frozenset(_PURE_BUILTINS) | {"math"}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                names.add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                names.update(node.names)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    if not (isinstance(node, ast.Import) and bound == alias.name == "math"):
                        names.add(bound)
    return frozenset(names)


@dataclass
class _Planner:
    bound: frozenset[str]
    sources: list[str] = field(default_factory=list)

    def plan(self, node: ast.expr) -> Plan:
        try:
            return _Lit(ast.literal_eval(node))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
            operands = tuple(self.plan(n) for n in (node.left, *node.comparators))
            return _Compare(operands, tuple(_COMPARE[type(op)] for op in node.ops))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return _Not(self.plan(node.operand))
        if isinstance(node, ast.BoolOp):
            return _BoolOp(isinstance(node.op, ast.And), tuple(self.plan(v) for v in node.values))
        function = self._pure_function(node)
        if isinstance(node, ast.Call) and function is not None:
            args = tuple(self.plan(a) for a in node.args)
            kwargs = tuple((k.arg, self.plan(k.value)) for k in node.keywords if k.arg is not None)
            return _Call(function, args, kwargs)
        self.sources.append(ast.unparse(node))
        return _Child(len(self.sources) - 1)

    def _pure_function(self, node: ast.expr) -> Callable[..., object] | None:
        if not isinstance(node, ast.Call) or any(isinstance(a, ast.Starred) for a in node.args):
            return None
        if any(k.arg is None for k in node.keywords):
            return None
        func = node.func
        if isinstance(func, ast.Name) and func.id not in self.bound:
            return _PURE_BUILTINS.get(func.id)
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "math"
            and "math" not in self.bound
        ):
            return _PURE_MATH.get(func.attr)
        return None


def plan_test(test: str, bound: frozenset[str]) -> tuple[Plan, list[str]]:
    """Parse ``assert <expr>``; return the parent's plan and the sources the child must evaluate."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            statements = parse_python(test).body
    except SyntaxError as exc:
        raise ValueError(f"test is not valid Python: {test!r}") from exc
    if len(statements) != 1 or not isinstance(statements[0], ast.Assert):
        raise ValueError(f"a test must be a single assert statement: {test!r}")
    planner = _Planner(bound)
    return planner.plan(statements[0].test), planner.sources


def evaluate(plan: Plan, values: list[object]) -> object:
    """The value of a test's plan, given the child's values of its slots (in slot order)."""
    if isinstance(plan, _Lit):
        return plan.value
    if isinstance(plan, _Child):
        return values[plan.slot]
    if isinstance(plan, _Not):
        return not evaluate(plan.operand, values)
    if isinstance(plan, _BoolOp):
        result: object = plan.is_and
        for sub in plan.values:
            result = evaluate(sub, values)
            if bool(result) is not plan.is_and:
                break
        return result
    if isinstance(plan, _Compare):
        left = evaluate(plan.operands[0], values)
        for op, sub in zip(plan.ops, plan.operands[1:], strict=True):
            right = evaluate(sub, values)
            if not op(left, right):
                return False
            left = right
        return True
    args = [evaluate(a, values) for a in plan.args]
    return plan.function(*args, **{k: evaluate(v, values) for k, v in plan.kwargs})
