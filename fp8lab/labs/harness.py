"""The grader: nbgrader's autograde with the verdict computed where no student code runs.

``nbgrader_config.py`` puts :class:`SandboxedGrading` in ``Autograde.autograde_preprocessors``
where nbgrader's ``Execute`` was. For one notebook it

1. starts a sandbox (:mod:`fp8lab.labs.sandbox`) with the lab's allowlist of packages
   (``packages`` in ``lab.toml``; numpy only by default);
2. runs the locked setup cells there *and* in the grader's own namespace, and the student's answer
   cells there only (their printed output, cut at 1 MiB, goes into the autograded notebook);
3. runs each test cell, visible or hidden, in the grader's namespace, where the answer functions
   (the names the instructor's answer cells define) are :class:`Remote` stand-ins: a call sends
   its arguments to the sandbox and gets back plain values (:mod:`fp8lab.labs.runner`'s wire
   format). The reference (fp8lab) and the hidden inputs (from the per-run secret seed in
   ``FP8LAB_GRADING_SEED``, which the sandbox never sees) live here only, so patching, mocking,
   input transformers or deleted lines in the student's process change nothing but the values it
   sends back;
4. writes each test cell's outcome as nbgrader expects it (an error output fails the cell); the
   message is the check's own (input, expected, got), never a traceback through the test code.

A cell or call past its deadline, an exiting or crashing submission, or an answer over the cap
kills the sandbox, which is then started again and replays the cells that had run to their end,
so the other tasks are still graded. What happened is listed in the notebook's ``metadata.fp8lab.findings``
(the instructor's report reads it). Messages and findings are in English and Chinese in one string
(:mod:`fp8lab.labs.messages`).

>>> answer_names("def f(x):\\n    return x\\nG = 1\\nclass K: pass")
['f', 'G', 'K']
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import time
from typing import Any, Callable, Sequence

from .messages import Text, say, text_of
from .sandbox import CellTimeout, Limits, Sandbox, SandboxDied, UNSAFE_ENV, sandbox_problem

__all__ = ["answer_names", "Remote", "grade_notebook", "SandboxedGrading", "AnswerCellsOnly", "cell_kind", "normalise",
           "MAX_ANSWER_CHARS", "batch_calls", "compile_test"]

#: an answer cell longer than this is cut (a notebook is no place for a 1 MB cell)
MAX_ANSWER_CHARS = 200_000


def _meta(cell: Any) -> dict:
    meta = cell.get("metadata", {}) if isinstance(cell, dict) else {}
    m = meta.get("nbgrader", {}) if isinstance(meta, dict) else {}
    return m if isinstance(m, dict) else {}


def cell_kind(cell: Any) -> str:
    """``answer``, ``test``, ``setup`` (locked code the instructor wrote), ``code`` (other code) or ``text``.

    >>> cell_kind({"cell_type": "code", "metadata": {"nbgrader": {"grade": True, "solution": False}}})
    'test'
    """
    if cell.get("cell_type") != "code":
        return "text"
    m = _meta(cell)
    if m.get("solution"):
        return "answer"
    if m.get("grade"):
        return "test"
    if m.get("locked"):
        return "setup"
    return "code"


def _source(cell: Any) -> str:
    s = cell.get("source", "")
    if isinstance(s, list):
        return "".join(x for x in s if isinstance(x, str))
    return s if isinstance(s, str) else ""


def answer_names(source: str) -> list[str]:
    """The top-level names an (instructor's) answer cell defines: functions, classes, assigned names."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out += [t.id for t in targets if isinstance(t, ast.Name)]
    return out


def normalise(release: Any, submitted: Any) -> tuple[Any, list[str]]:
    """The release notebook with each answer cell's code taken from the student's cell of the same id.

    Everything else of the submission (metadata, invented cells, edited or deleted test cells,
    outputs) is ignored. A notebook saved without cell ids (nbformat before 4.5) is matched by the
    answer cells' grade ids instead: either way only the student's code reaches the student's own
    answer cells. Returns (notebook, notes): a note for each answer cell the submission lacks.

    >>> import nbformat
    >>> rel = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("raise NotImplementedError()", id="a",
    ...     metadata={"nbgrader": {"solution": True, "grade": False, "grade_id": "f", "locked": False}})])
    >>> sub = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("def f(): return 1", id="a", metadata={}),
    ...                                       nbformat.v4.new_code_cell("import os", id="zz")])
    >>> nb, notes = normalise(rel, sub)
    >>> [c.source for c in nb.cells], notes
    (['def f(): return 1'], [])
    >>> odd = {"cells": [{"cell_type": "code", "metadata": [], "source": {"x": 1}}, "junk", {"cell_type": "code",
    ...        "source": ["def f():\\n", 7, "    return 2"], "metadata": {"nbgrader": {"grade_id": "f"}}}]}
    >>> [c.source for c in normalise(rel, odd)[0].cells]  # no ids: matched by the answer's grade id
    ['def f():\\n    return 2']
    """
    import copy

    nb = copy.deepcopy(release)
    theirs: dict[str, str] = {}
    by_grade_id: dict[str, str] = {}  # notebooks saved without cell ids (nbformat < 4.5): the answer's grade id
    for c in submitted.get("cells", []) if isinstance(submitted, dict) else []:
        if isinstance(c, dict) and c.get("cell_type") == "code":
            if isinstance(c.get("id"), str):
                theirs.setdefault(c["id"], _source(c))
            gid = _meta(c).get("grade_id")
            if isinstance(gid, str):
                by_grade_id.setdefault(gid, _source(c))
    notes = []
    for c in nb.cells:
        if cell_kind(c) != "answer":
            continue
        cid = c.get("id")
        text = theirs.get(cid) if cid in theirs else by_grade_id.get(_meta(c).get("grade_id"))
        if text is not None:
            if len(text) > MAX_ANSWER_CHARS:
                notes.append(say("answer_cut", cell=cid, n=MAX_ANSWER_CHARS))
                text = text[:MAX_ANSWER_CHARS]
            c.source = text
        else:
            notes.append(say("no_answer_cell", cell=repr(cid)))
        c.outputs, c.execution_count = [], None
    return nb, notes


class Remote:
    """A stand-in for the student's function ``name`` in the grader: calls go to the sandbox, values come back.

    ``no_shortcut(remote, forbid=..., allow=...)`` returns a guarded copy: the sandbox applies the
    runtime guard as a second layer where the lab's allowlist holds the library it guards.
    """

    fp8lab_remote = True

    def __init__(self, name: str, grader: "_Grader", guard: dict | None = None) -> None:
        self.__name__ = self.name = name
        self._grader = grader
        self._guard = guard

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._grader.call(self.name, args, kwargs, self._guard)

    def map(self, calls: list[tuple[tuple, dict]]) -> list:
        """The values of ``self(*args, **kwargs)`` for each call, in one round trip."""
        return self._grader.call(self.name, None, None, self._guard, batch=calls)

    def guarded(self, forbid: Sequence[str] | None, allow: Sequence[str]) -> "Remote":
        """This function with the runtime guard's policy attached to every call."""
        guard = {"forbid": list(forbid) if forbid is not None else None, "allow": list(allow),
                 "available": "fp8lab" in self._grader.packages}
        return Remote(self.name, self._grader, guard)

    def __repr__(self) -> str:
        return f"<the submission's {self.name}>"


def _error(ename: str, evalue: str, traceback: Sequence[str] | None = None) -> dict:
    import nbformat

    evalue = evalue if len(evalue) <= 20_000 else evalue[:20_000] + " " + say("message_cut")
    return nbformat.v4.new_output("error", ename=ename, evalue=evalue,
                                  traceback=list(traceback) if traceback else [f"{ename}: {evalue}"])


def _stream(text: str) -> dict:
    import nbformat

    return nbformat.v4.new_output("stream", name="stdout", text=text)


class _Grader:
    """The state of grading one notebook: the sandbox, the cells replayed after a restart, the findings."""

    def __init__(self, packages: Sequence[str], timeout: float, unsafe: bool, limits: Limits) -> None:
        self.packages = tuple(packages)
        self.timeout = float(timeout)
        self.box = Sandbox(packages, limits=limits, unsafe=unsafe)
        self.replay: list[tuple[str, str]] = []
        self.findings: list[str] = []  # each in English and Chinese
        self.budget = self.timeout
        self.alive = False
        self.cell_errors: dict[str, Text] = {}  # answer cell -> the error it ended with
        self.defined_in: dict[str, str] = {}  # answer function -> its answer cell

    def ensure(self) -> None:
        """A running sandbox that has run every cell that worked so far."""
        if self.alive and self.box.proc is not None:
            return
        self.box.start()
        self.alive = True
        for code, name in self.replay:
            try:
                self.box.run(code, name, timeout=self.timeout)
            except (CellTimeout, SandboxDied) as err:
                self.findings.append(say("replay_failed", cell=name, error=text_of(err)))
                self.alive = False
                raise SandboxDied(say("restart_failed", error=text_of(err))) from None

    def run_cell(self, code: str, name: str) -> tuple[list[dict], bool]:
        try:
            self.ensure()
            res = self.box.run(code, name, timeout=self.timeout)
        except CellTimeout as err:
            self.alive = False
            self.findings.append(say("cell_problem", cell=name, problem=text_of(err)))
            return [_error("TimeoutError", say("this_cell_problem", problem=text_of(err)))], False
        except SandboxDied as err:
            self.alive = False
            self.findings.append(say("cell_died", cell=name, error=text_of(err)))
            self.cell_errors[name] = text_of(err)
            return [_error("SandboxDied", str(err))], False
        outs = []
        if res.stdout:
            outs.append(_stream(res.stdout))
        if res.dropped:
            self.findings.append(say("cell_output_over", cell=name, n=res.dropped))
            outs.append(_stream("\n" + say("output_cut", n=res.dropped, mib=self.box.limits.output // 2**20) + "\n"))
        self.replay.append((code, name))  # it ran to its end (an error included): a restart runs it again
        if not res.ok:
            outs.append(_error(res.ename or "Error", res.evalue, res.traceback))
            error = text_of(res.evalue)
            self.cell_errors[name] = Text(f"{res.ename}: {error.en}", f"{res.ename}: {error.zh}")
        return outs, res.ok

    def call(self, name: str, args: tuple | None, kwargs: dict | None, guard: dict | None,
             batch: list | None = None) -> Any:
        if self.budget <= 0:
            raise CellTimeout(say("timeout", seconds=f"{self.timeout:.0f}"))
        try:
            self.ensure()
        except SandboxDied as err:
            raise CellTimeout(text_of(err)) from None
        start = time.monotonic()
        try:
            if batch is not None:
                return self.box.map(name, batch, timeout=self.budget, guard=guard)
            return self.box.call(name, args or (), kwargs or {}, timeout=self.budget, guard=guard)
        except CellTimeout:
            self.alive = False
            self.budget = 0
            raise
        except SandboxDied as err:
            self.alive = False
            self.findings.append(say("calling_died", name=name, error=text_of(err)))
            raise
        except NameError as err:
            cell = self.defined_in.get(name)
            if cell in self.cell_errors:  # say why it is missing: its answer cell failed
                raise NameError(say("answer_cell_failed", error=text_of(err), cell=repr(cell),
                                    cell_error=self.cell_errors[cell])) from None
            raise
        finally:
            self.budget -= time.monotonic() - start


class _Batch(ast.NodeTransformer):
    """``[f(a, k=b) for x in xs]`` -> ``__fp8lab_batch__(f, (((a,), {"k": b}) for x in xs))``."""

    def visit_ListComp(self, node: ast.ListComp) -> ast.AST:
        self.generic_visit(node)
        call = node.elt
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
            return node
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            return node
        bound = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        if call.func.id in bound:
            return node
        pair = ast.Tuple([ast.Tuple(list(call.args), ast.Load()),
                          ast.Dict([ast.Constant(k.arg) for k in call.keywords], [k.value for k in call.keywords])],
                         ast.Load())
        gen = ast.GeneratorExp(elt=pair, generators=node.generators)
        return ast.copy_location(ast.Call(ast.Name("__fp8lab_batch__", ast.Load()), [call.func, gen], []), node)


def batch_calls(fn: Callable[..., Any], calls: Any) -> list:
    """``[fn(*a, **k) for a, k in calls]``, in one round trip when ``fn`` is a :class:`Remote`.

    >>> batch_calls(divmod, [((7, 2), {}), ((9, 4), {})])
    [(3, 1), (2, 1)]
    """
    if getattr(fn, "fp8lab_remote", False):
        return fn.map(list(calls))
    return [fn(*a, **k) for a, k in calls]


def compile_test(code: str, name: str) -> Any:
    """Compile a test cell with its list comprehensions of calls batched (:func:`batch_calls`): the same calls
    in the same order, one round trip to the sandbox each instead of one per element.

    >>> scope = {"__fp8lab_batch__": batch_calls}
    >>> exec(compile_test("out = [abs(x) for x in (-1, 2, -3)]", "t"), scope); scope["out"]
    [1, 2, 3]
    """
    tree = ast.fix_missing_locations(_Batch().visit(ast.parse(code)))
    return compile(tree, f"<test {name}>", "exec")


def grade_notebook(nb: Any, names: Sequence[str] | dict[str, str], *, packages: Sequence[str] = ("numpy",), timeout: float = 60,
                   unsafe: bool = False, limits: Limits = Limits()) -> tuple[Any, list[str]]:
    """Run ``nb`` the graded way (see the module doc) and return it with outputs, plus the findings.

    ``names`` are the answer functions that the test cells call (from the instructor's answer cells),
    or a dict of them to the grade id of the answer cell that defines each (for clearer messages).
    """
    grader = _Grader(packages, timeout, unsafe, limits)
    if isinstance(names, dict):
        grader.defined_in = dict(names)
    trusted: dict[str, Any] = {"__name__": "__grader__"}
    try:
        for cell in nb.cells:
            kind = cell_kind(cell)
            if kind == "text":
                continue
            code = _source(cell)
            name = str(_meta(cell).get("grade_id") or cell.get("id") or "?")
            cell.outputs = []
            if kind in ("answer", "code", "setup"):
                outs, _ok = grader.run_cell(code, name)
                cell.outputs = outs
                if kind == "setup":
                    with contextlib.redirect_stdout(io.StringIO()):
                        exec(compile(code, f"<setup {name}>", "exec"), trusted)  # noqa: S102 - the instructor's cell
                continue
            # a test cell: the instructor's code, here, with the answers as remote stand-ins
            scope = dict(trusted)
            scope.update({n: Remote(n, grader) for n in names})
            scope["__fp8lab_batch__"] = batch_calls
            grader.budget = grader.timeout
            try:
                exec(compile_test(code, name), scope)  # noqa: S102 - the instructor's cell
            except CellTimeout as err:
                cell.outputs = [_error("TimeoutError", say("answer_problem", problem=text_of(err)))]
            except SandboxDied as err:
                cell.outputs = [_error("SandboxDied", str(err))]
            except Exception as err:  # noqa: BLE001 - a failed check: its message is the feedback
                cell.outputs = [_error(type(err).__name__, str(err))]
    finally:
        grader.box.close()
    nb.metadata.setdefault("fp8lab", {})["findings"] = list(grader.findings)
    return nb, grader.findings


def _unsafe() -> bool:
    return os.environ.get(UNSAFE_ENV, "") == "1"


try:
    from nbgrader.preprocessors import NbGraderPreprocessor as _Base
except ImportError:  # pragma: no cover - the learner's tools import this module without nbgrader too
    _Base = object  # type: ignore[assignment,misc]


class SandboxedGrading(_Base):  # type: ignore[misc,valid-type]
    """nbgrader preprocessor in ``Execute``'s place: grades one notebook with :func:`grade_notebook`."""

    def preprocess(self, nb, resources):  # noqa: D102 - nbgrader's interface
        from .catalog import get_lab

        lab = get_lab(resources["nbgrader"]["assignment"])
        if not _unsafe() and sandbox_problem():
            raise RuntimeError(f"grading refused: no sandbox can start ({sandbox_problem()}); "
                               "pass --unsafe-no-sandbox to grade without one")
        source = json.loads(lab.notebook.read_text(encoding="utf-8"))
        names = {n: str(_meta(c).get("grade_id", "")) for c in source["cells"] if cell_kind(c) == "answer"
                 for n in answer_names(_source(c))}
        timeout = self.config.Execute.get("timeout", 60)
        nb, findings = grade_notebook(nb, names, packages=lab.packages, timeout=timeout, unsafe=_unsafe())
        for f in findings:
            self.log.warning("sandbox: %s", f)
        return nb, resources


class AnswerCellsOnly(_Base):  # type: ignore[misc,valid-type]
    """nbgrader sanitize preprocessor (first in ``Autograde.sanitize_preprocessors``): the notebook graded is
    the lab's exercise with the code of the submission's answer cells, by cell id (:func:`normalise`).

    ``fp8lab labs autograde`` stages submissions this way already; this makes nbgrader's own
    ``autograde`` (the formgrader's button, the CLI) grade the same notebook.
    """

    def preprocess(self, nb, resources):  # noqa: D102 - nbgrader's interface
        import nbformat

        from .catalog import get_lab

        lab = get_lab(resources["nbgrader"]["assignment"])
        graded, notes = normalise(nbformat.read(str(lab.exercise), as_version=4), nb)
        for n in notes:
            self.log.warning("submission: %s", n)
        return graded, resources
