"""The grader's source scan: shortcuts and tampering found in a submission's own cells, outside the sandbox.

Shortcuts are refused by construction (the sandbox offers only the lab's allowed packages,
:mod:`fp8lab.labs.sandbox`); this scan reports what a submission *tried*, so the instructor sees it.
It runs in the grading process on the graded notebook (the exercise with the student's answer
cells, :func:`fp8lab.labs.harness.normalise`), so nothing the student writes can switch it off.
It reads every cell the student controls (answer cells and cells they added), parses it (magics
included, through IPython's transformer) and reports:

* **shortcuts**: a use of what a task's tests forbid (``fp8lab``, ``ml_dtypes``, the float8
  dtypes, ... as named in that task's ``no_shortcut(...)`` calls), through any import alias. In a
  task's answer cell inside a function body it costs that task; anywhere else (a precomputed table
  at cell level, a cell the student added) it costs every task that forbids it.
* **tampering**: tools that could disable the checks or reach code without naming it (``eval``,
  ``exec``, ``__import__``, ``importlib``, ``sys``, ``os``, ``builtins``, ``getattr`` with a computed
  or dunder name, dunder attributes such as ``__code__``, magics and shell escapes, the
  ``fp8lab.labs`` harness as a module, assignments to attributes of an imported module). These cost
  every task.

``fp8lab labs autograde`` lists the findings in the instructor's report (``fp8lab labs report``)
and flags the submission (status ``flagged`` in the export); they never change a score.
``fp8lab.labs.preprocess.ShortcutScan`` (no longer in ``nbgrader_config.py``) would instead turn
them into failing test cells, for a course that wants the scan to score.

>>> cells = [Cell("setup", "import numpy as np\\nimport fp8lab as fl", trusted=True),
...          Cell("decode", "def decode(c):\\n    return float(fl.decode(c, 'e4m3'))", task="decode"),
...          Cell("test_decode", "with no_shortcut(decode) as f: f(1)", trusted=True, test_of="decode")]
>>> [f.text for f in scan(cells)]
['fl.decode (fp8lab.decode): not allowed in this task']
"""

from __future__ import annotations

import ast
import fnmatch
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from .guard import DEFAULT_FORBID, Policy

__all__ = ["Cell", "Finding", "scan", "policies_from_tests", "TAMPER_MODULES", "TAMPER_CALLS"]

#: modules whose import or use voids a submission: they reach the interpreter, the kernel or the files
TAMPER_MODULES = frozenset({
    "sys", "os", "builtins", "importlib", "inspect", "gc", "ctypes", "subprocess", "signal", "threading",
    "multiprocessing", "concurrent", "asyncio", "types", "marshal", "pickle", "dill", "runpy", "code", "codeop",
    "IPython", "ipykernel", "jupyter_client", "traitlets", "nbgrader", "pathlib", "shutil", "tempfile",
    "socket", "resource", "pdb", "operator",
})

#: builtins whose use voids a submission (getattr only with a computed or dunder name)
TAMPER_CALLS = frozenset({
    "eval", "exec", "compile", "__import__", "globals", "locals", "vars", "setattr", "delattr", "open",
    "breakpoint", "get_ipython", "__builtins__",
})

#: dunder attributes an answer may use; any other (``__code__``, ``__globals__``, ``__dict__``, ...) voids it
SAFE_DUNDERS = frozenset({
    "__init__", "__name__", "__doc__", "__len__", "__call__", "__repr__", "__str__", "__iter__", "__next__",
    "__getitem__", "__setitem__", "__contains__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__",
    "__hash__", "__add__", "__sub__", "__mul__", "__truediv__", "__floordiv__", "__mod__", "__pow__",
    "__neg__", "__pos__", "__abs__", "__float__", "__int__", "__index__", "__bool__", "__enter__", "__exit__",
    "__post_init__", "__array__", "__and__", "__or__", "__xor__", "__lshift__", "__rshift__", "__invert__",
})

HARNESS = "fp8lab.labs"


@dataclass(frozen=True)
class Cell:
    """One code cell: its grade id (or position), source, and role.

    ``trusted``: restored from the gradebook (locked and test cells), so not the student's code;
    ``task``: the task whose answer cell this is; ``test_of``: the task a test cell belongs to.
    """

    name: str
    source: str
    trusted: bool = False
    task: str | None = None
    test_of: str | None = None


@dataclass(frozen=True)
class Finding:
    """Something the scan refuses: where, what, and which tasks it costs (``None``: every task)."""

    cell: str
    line: int
    text: str
    tasks: tuple[str, ...] | None = field(default=None)

    def describe(self) -> str:
        """One line for the feedback: cell, line and what was found.

        >>> Finding("decode", 3, "fl.decode: not allowed in this task", ("decode",)).describe()
        "cell 'decode', line 3: fl.decode: not allowed in this task"
        """
        return f"cell {self.cell!r}, line {self.line}: {self.text}"


# ------------------------------------------------------------------------------------------------
def policies_from_tests(cells: Sequence[Cell]) -> dict[str, Policy]:
    """Each task's policy from the literal ``forbid=``/``allow=`` of the ``no_shortcut`` calls in its test cells.

    >>> p = policies_from_tests([Cell("t", "with no_shortcut(f, forbid=['fp8lab', 'torch:bfloat16']) as g: g(1)", True, test_of="f")])
    >>> p["f"].attributes
    (('torch', 'bfloat16'),)
    """
    found: dict[str, tuple[list[str], list[str]]] = {}
    for cell in cells:
        if not cell.test_of:
            continue
        forbid, allow = found.setdefault(cell.test_of, ([], []))
        tree = _parse(cell.source)
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, ast.Call) and _call_name(node.func) == "no_shortcut":
                kw = {k.arg: k.value for k in node.keywords}
                forbid.extend(_literal_names(kw.get("forbid"), DEFAULT_FORBID))
                allow.extend(_literal_names(kw.get("allow"), ()))
    return {task: Policy.of(tuple(dict.fromkeys(f)) or DEFAULT_FORBID, tuple(dict.fromkeys(a))) for task, (f, a) in found.items()}


def _literal_names(node: ast.AST | None, default: Sequence[str]) -> list[str]:
    if node is None:
        return list(default)
    try:
        value = ast.literal_eval(node)
    except ValueError:
        # a computed list (DEFAULT_FORBID + (...)): take the string literals and the default
        return list(DEFAULT_FORBID) + [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return [str(v) for v in value]


def _call_name(func: ast.AST) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _parse(source: str) -> ast.Module | None:
    """Parse a cell as IPython would run it (magics and ``!`` become ``get_ipython()`` calls); None if it cannot."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        source = TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001 - without IPython, parse the plain source
        pass
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None  # a cell that does not parse does not run either


# ------------------------------------------------------------------------------------------------
class _Aliases(ast.NodeVisitor):
    """Names bound to modules or module attributes by imports and plain assignments, over all cells."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if a.asname:
                self.names[a.asname] = a.name
            else:
                top = a.name.split(".")[0]
                self.names[top] = top

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            return
        for a in node.names:
            if a.name != "*":
                self.names[a.asname or a.name] = f"{node.module}.{a.name}"

    def visit_Assign(self, node: ast.Assign) -> None:
        target = _dotted(node.value, self.names)
        if target:
            for t in node.targets:
                if isinstance(t, ast.Name):
                    self.names[t.id] = target
        self.generic_visit(node)


def _dotted(node: ast.AST, names: dict[str, str]) -> str | None:
    """``fl.codec.decode`` -> ``fp8lab.codec.decode`` when ``fl`` is an alias of ``fp8lab``."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in names:
        return ".".join([names[node.id], *reversed(parts)])
    return None


def _forbidden(pol: Policy, dotted: str) -> bool:
    """Whether a reference such as ``fp8lab.decode`` or ``torch.float8_e4m3fn`` breaks a task's policy."""
    if pol.module_forbidden(dotted):
        for mod, pat in pol.allow_attributes:
            rest = dotted[len(mod) + 1:].split(".")[0] if dotted.startswith(mod + ".") else None
            if rest is not None and fnmatch.fnmatchcase(rest, pat):
                return False
        return True
    for mod, pat in pol.attributes:
        if dotted.startswith(mod + ".") and fnmatch.fnmatchcase(dotted[len(mod) + 1:].split(".")[0], pat):
            return True
    return False


class _CellScan(ast.NodeVisitor):
    """Findings in one student cell."""

    def __init__(self, cell: Cell, names: dict[str, str], policies: dict[str, Policy]) -> None:
        self.cell, self.names, self.policies = cell, names, policies
        self.depth = 0  # function nesting: 0 is cell level
        self.out: list[Finding] = []

    # -- reporting ------------------------------------------------------------------------------
    def tamper(self, node: ast.AST, text: str) -> None:
        self.out.append(Finding(self.cell.name, getattr(node, "lineno", 0), text, None))

    def report(self, node: ast.AST, shown: str, hit: list[str]) -> None:
        """A use that the policies of tasks ``hit`` forbid, written as ``shown``."""
        if not hit:
            return
        mine = self.cell.task
        if mine and self.depth > 0:  # inside a function of an answer cell: that task only
            if mine in hit:
                self.out.append(Finding(self.cell.name, node.lineno, f"{shown}: not allowed in this task", (mine,)))
            return
        where = "in this answer cell outside a function" if mine else "in a cell outside the answer cells"
        self.out.append(Finding(self.cell.name, node.lineno, f"{shown} {where}: not allowed in tasks {', '.join(hit)}", tuple(hit)))

    def use(self, node: ast.AST, dotted: str, shown: str) -> None:
        if _within(dotted, HARNESS):
            return
        shown = shown if shown == dotted else f"{shown} ({dotted})"
        self.report(node, shown, [t for t, pol in self.policies.items() if _forbidden(pol, dotted)])

    def use_attribute_name(self, node: ast.AST, name: str, shown: str) -> None:
        self.report(node, shown, [t for t, pol in self.policies.items() if pol.attribute_forbidden(name)])

    # -- scopes ---------------------------------------------------------------------------------
    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        for d in node.decorator_list + node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(d)  # decorators and defaults run at cell level
        self.depth += 1
        for stmt in node.body:
            self.visit(stmt)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for d in node.decorator_list + node.bases:
            self.visit(d)
        self.depth += 1  # a class body runs once, like a function that builds the class
        for stmt in node.body:
            self.visit(stmt)
        self.depth -= 1

    def visit_Lambda(self, node: ast.Lambda) -> None:
        for d in node.args.defaults:
            self.visit(d)
        self.depth += 1
        self.visit(node.body)
        self.depth -= 1

    # -- imports --------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if a.name.split(".")[0] in TAMPER_MODULES:
                self.tamper(node, f"import {a.name}: this module could disable the grader's checks")
            elif _within(a.name, HARNESS):
                self.tamper(node, f"import {a.name}: import the checks by name (from {HARNESS} import expect_equal), not the module")
            elif self.depth > 0:
                self.use(node, a.name, f"import {a.name}")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        mod = node.module or ""
        if node.level:
            self.tamper(node, "a relative import")
            return
        if mod.split(".")[0] in TAMPER_MODULES:
            self.tamper(node, f"from {mod} import ...: this module could disable the grader's checks")
            return
        for a in node.names:
            full = f"{mod}.{a.name}"
            if a.name == "*":
                self.tamper(node, f"from {mod} import *: import names one by one")
            elif _within(full, HARNESS):
                if mod != HARNESS or a.name.startswith("_"):
                    self.tamper(node, f"from {mod} import {a.name}: only the public checks of {HARNESS} may be imported")
            elif self.depth > 0:
                self.use(node, full, f"from {mod} import {a.name}")

    # -- names, attributes, strings -------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if node.id in TAMPER_CALLS:
            self.tamper(node, f"{node.id}: not allowed in a graded notebook (it could hide a call or disable the checks)")
        elif node.id.startswith("__") and node.id.endswith("__") and node.id not in ("__name__", "__doc__"):
            self.tamper(node, f"{node.id}: not allowed in a graded notebook")
        elif node.id in self.names and isinstance(node.ctx, ast.Load):
            self.use(node, self.names[node.id], node.id)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr.startswith("__") and node.attr.endswith("__") and node.attr not in SAFE_DUNDERS:
            self.tamper(node, f".{node.attr}: this attribute could reach code without naming it")
            return
        dotted = _dotted(node, self.names)
        if dotted is None:
            self.use_attribute_name(node, node.attr, f".{node.attr}")
            self.generic_visit(node)
            return
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            self.tamper(node, f"assigning {ast.unparse(node)}: changing an imported module changes what the tests compare against")
        elif _within(dotted, HARNESS):
            self.tamper(node, f"{ast.unparse(node)}: the grading harness is not part of an answer")
        else:
            self.use(node, dotted, ast.unparse(node))
        # the root name is covered by this use

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)) and _dotted(node.value, self.names):
            self.tamper(node, f"assigning into {ast.unparse(node.value)}: changing an imported module changes what the tests compare against")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if isinstance(node.func, ast.Name) and node.func.id == "getattr":
            name = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str) and not name.value.startswith("__")):
                self.tamper(node, "getattr with a computed or dunder name: write the attribute out")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if not isinstance(node.value, str) or len(node.value) > 64:
            return
        s = node.value
        if s.startswith("__") and s.endswith("__") and s not in SAFE_DUNDERS and s != "__main__":
            self.tamper(node, f"the string {s!r}: dunder names could reach code without naming it")
        elif s.replace(".", "").replace("_", "").isalnum() and any(p.module_forbidden(s) for p in self.policies.values()):
            self.use(node, s, repr(s))
        else:
            self.use_attribute_name(node, s, repr(s))


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def scan(cells: Iterable[Cell]) -> list[Finding]:
    """Every shortcut and tampering finding in the student's cells of one notebook.

    >>> [f.text for f in scan([Cell("mine", "import os\\nos.system('ls')")])][:1]
    ["import os: this module could disable the grader's checks"]
    """
    cells = list(cells)
    policies = policies_from_tests(cells)
    aliases = _Aliases()
    for cell in cells:
        tree = _parse(cell.source)
        if tree is not None:
            aliases.visit(tree)
    out: list[Finding] = []
    for cell in cells:
        if cell.trusted:
            continue
        tree = _parse(cell.source)
        if tree is None:
            continue
        v = _CellScan(cell, aliases.names, policies)
        v.visit(tree)
        out.extend(v.out)
    return out
