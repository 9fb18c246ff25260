"""The student's side of grading: runs answer cells and calls answer functions, inside the sandbox.

This file is started as ``python -I -S runner.py`` inside the sandbox (:mod:`fp8lab.labs.sandbox`)
and needs only the standard library and numpy: fp8lab itself is not importable there in the labs
whose allowlist leaves it out. It reads one request per line on fd 3 and answers one line on fd 4:

* ``{"op": "run", "code": ...}`` runs one cell's code (plain Python; IPython magics and shell
  lines are replaced by ``pass``) and answers its printed output, cut at the cap the grader sent;
* ``{"op": "call", "name": f, "args": [...], "kwargs": {...}}`` calls a function the cells
  defined with arguments decoded by :func:`decode` and answers the value encoded by :func:`encode`,
  or the exception's type name and message; ``{"op": "map", "name": f, "calls": [(args, kwargs), ...]}``
  makes the calls in order, stopping at the first exception, and answers the values so far (one
  round trip for a test's list comprehension).

Nothing this process says is trusted: the grader (``fp8lab.labs.harness``) checks every value it
gets back against the reference, and caps what it reads. The wire format is JSON with tagged numpy
arrays and scalars, tuples, big integers and non-finite floats; no pickle on either side.

Its messages (what the wire does not carry, a name that is no function) come from the table of
:mod:`fp8lab.labs.messages`, in English and Chinese; inside the sandbox, where fp8lab cannot be
imported, that module is loaded from the runner's own folder (``/harness/messages.py``).

>>> decode(encode((1, 2.5, float("nan"), "a", [True, None], 2**80)))
(1, 2.5, nan, 'a', [True, None], 1208925819614629174706176)
>>> import numpy as np
>>> a = decode(encode(np.arange(6, dtype=np.uint8).reshape(2, 3)))
>>> a.dtype, a.shape, int(a.sum())
(dtype('uint8'), (2, 3), 15)
>>> decode(encode(np.float32(0.1))).dtype
dtype('float32')
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import math
import os
import re
import sys
import traceback
from typing import Any

try:
    from .messages import phrase, say, text_of
except ImportError:  # started as a script inside the sandbox: the table of messages lies beside this file
    def _load_messages() -> Any:
        import importlib.util

        spec = importlib.util.spec_from_file_location("fp8lab_grading_messages", os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "messages.py"))
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        sys.modules[spec.name] = module  # type: ignore[union-attr]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        return module

    _messages = _load_messages()
    phrase, say, text_of = _messages.phrase, _messages.say, _messages.text_of

__all__ = ["encode", "decode", "WireError", "serve", "strip_magics"]

#: numpy dtype kinds a value may carry over the wire: bool, ints, floats, complex (no objects, no strings)
_KINDS = "biufc"
_MAX_DEPTH = 20


class WireError(ValueError):
    """A value that the wire format does not carry (an object, a function, a too-deep nesting)."""


def _np():
    import numpy

    return numpy


def _tag(v: Any, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise WireError(phrase("wire_too_deep", depth=_MAX_DEPTH))
    np = sys.modules.get("numpy")
    if np is not None and isinstance(v, (np.ndarray, np.generic)):  # first: np.float64 is a float too
        a = np.asarray(v)
        if a.dtype.kind not in _KINDS or a.dtype.names is not None:
            raise WireError(phrase("wire_numpy_dtype", dtype=a.dtype))
        tag = "$scalar" if isinstance(v, np.generic) else "$array"
        data = base64.b64encode(np.ascontiguousarray(a).tobytes()).decode("ascii")
        return {tag: {"dtype": a.dtype.str, "shape": list(a.shape), "data": data}}
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return v if -(2**53) < v < 2**53 else {"$int": str(int(v))}
    if isinstance(v, float):
        return v if math.isfinite(v) else {"$float": repr(v)}
    if isinstance(v, complex):
        return {"$complex": [repr(v.real), repr(v.imag)]}
    if isinstance(v, tuple):
        return {"$tuple": [_tag(x, depth + 1) for x in v]}
    if isinstance(v, list):
        return [_tag(x, depth + 1) for x in v]
    if isinstance(v, dict):
        if not all(isinstance(k, str) for k in v):
            raise WireError(phrase("wire_dict_keys"))
        return {"$dict": {k: _tag(x, depth + 1) for k, x in v.items()}}
    raise WireError(phrase("wire_type", type=type(v).__name__))


def encode(v: Any) -> str:
    """One JSON line for a plain value (numbers, strings, None, tuples, lists, str-keyed dicts, numpy).

    >>> encode((1, "x"))
    '{"$tuple": [1, "x"]}'
    >>> encode(object())
    Traceback (most recent call last):
    ...
    fp8lab.labs.runner.WireError: a object, which the grader does not read back (send numbers, strings, tuples, lists, dicts or numpy arrays) / object 类型的值，评分程序不会读回（请发回数、字符串、元组、列表、字典或 numpy 数组）
    """
    return json.dumps(_tag(v, 0), allow_nan=False)


def _untag(v: Any, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        raise WireError(phrase("wire_too_deep", depth=_MAX_DEPTH))
    if v is None or isinstance(v, (bool, str, int, float)):
        return v
    if isinstance(v, list):
        return [_untag(x, depth + 1) for x in v]
    if not isinstance(v, dict) or len(v) != 1:
        raise WireError(phrase("wire_not_value", text=str(v)[:80]))
    (tag, body), = v.items()
    if tag == "$int":
        if not (isinstance(body, str) and re.fullmatch(r"-?\d{1,4000}", body)):
            raise WireError(phrase("wire_bad_int"))
        return int(body)
    if tag == "$float":
        if body not in ("nan", "inf", "-inf"):
            raise WireError(phrase("wire_bad_float"))
        return float(body)
    if tag == "$complex":
        return complex(float(body[0]), float(body[1]))
    if tag == "$tuple":
        return tuple(_untag(x, depth + 1) for x in body)
    if tag == "$dict":
        return {str(k): _untag(x, depth + 1) for k, x in body.items()}
    if tag in ("$array", "$scalar"):
        np = _np()
        dtype = np.dtype(str(body["dtype"]))
        if dtype.kind not in _KINDS or dtype.names is not None:
            raise WireError(phrase("wire_dtype_not_carried", dtype=dtype))
        shape = tuple(int(n) for n in body["shape"])
        raw = base64.b64decode(body["data"], validate=True)
        if any(n < 0 for n in shape) or len(raw) != math.prod(shape) * dtype.itemsize:
            raise WireError(phrase("wire_bad_array"))
        a = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
        return a[()] if tag == "$scalar" else a
    raise WireError(phrase("wire_unknown_tag", tag=repr(tag)))


def decode(text: str | bytes) -> Any:
    """The value of one line written by :func:`encode`; WireError for anything else (never unpickles).

    >>> decode('{"$float": "-inf"}')
    -inf
    >>> decode('{"$code": "import os"}')
    Traceback (most recent call last):
    ...
    fp8lab.labs.runner.WireError: unknown wire tag '$code' / 未知的传输标记 '$code'
    """
    try:
        return _untag(json.loads(text), 0)
    except WireError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError, IndexError, RecursionError) as err:
        raise WireError(phrase("wire_not_value_because", error=f"{type(err).__name__}: {err}")) from None


_MAGIC = re.compile(r"^(\s*)[%!].*$")


def strip_magics(code: str) -> str:
    """Replace IPython magic (``%...``) and shell (``!...``) lines by ``pass``: grading runs plain Python.

    >>> strip_magics("%timeit f(1)\\nx = 1\\n  !ls")
    'pass  # magic not run when graded\\nx = 1\\n  pass  # magic not run when graded'
    """
    return "\n".join(_MAGIC.sub(r"\1pass  # magic not run when graded", ln) if _MAGIC.match(ln)
                     and not ln.lstrip().startswith("!=") else ln for ln in code.split("\n"))


class _Capped(io.TextIOBase):
    """A text stream that keeps the first ``cap`` characters written to it and counts the rest."""

    def __init__(self, cap: int) -> None:
        self.cap, self.parts, self.kept, self.dropped = cap, [], 0, 0

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        s = str(s)
        room = self.cap - self.kept
        if room > 0:
            self.parts.append(s[:room])
            self.kept += min(len(s), room)
        self.dropped += max(0, len(s) - max(room, 0))
        return len(s)

    def take(self) -> tuple[str, int]:
        text, dropped = "".join(self.parts), self.dropped
        self.parts, self.kept, self.dropped = [], 0, 0
        return text, dropped


def _error(err: BaseException, code_name: str) -> dict:
    tb = traceback.format_exception(type(err), err, err.__traceback__)
    keep = [ln for ln in tb if "runner.py" not in ln]  # the student's own frames, not the runner's
    return {"ok": False, "ename": type(err).__name__, "evalue": str(err)[:2000], "traceback": [t[:2000] for t in keep[-12:]]}


def serve(rfd: int = 3, wfd: int = 4) -> None:
    """Answer the grader's requests on ``rfd`` / ``wfd`` until the grader closes ``rfd``."""
    import warnings

    warnings.simplefilter("ignore")
    reader = os.fdopen(rfd, "rb", buffering=0)
    out = os.fdopen(wfd, "wb", buffering=0)
    ns: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    cap = 1 << 20
    stream = _Capped(cap)
    sys.stdout = sys.stderr = stream

    def answer(msg: dict) -> None:
        out.write((json.dumps(msg, allow_nan=False) + "\n").encode())

    while True:
        line = reader.readline()
        if not line:
            return
        req = json.loads(line)
        sys.stdout = sys.stderr = stream
        if req["op"] == "run":
            stream.cap = int(req.get("cap", cap))
            try:
                code = compile(strip_magics(req["code"]), f"<cell {req.get('name', '?')}>", "exec")
                exec(code, ns)  # noqa: S102 - the student's own cell, inside the sandbox
                msg: dict = {"ok": True}
            except BaseException as err:  # noqa: BLE001 - SystemExit and KeyboardInterrupt are the cell's result too
                msg = _error(err, req.get("name", "?"))
            text, dropped = stream.take()
            msg.update(stdout=text, dropped=dropped)
            answer(msg)
        elif req["op"] in ("call", "map"):
            fn = ns.get(req["name"])
            done: list = []
            try:
                if not callable(fn):
                    raise NameError(say("not_a_function", name=repr(req["name"])))
                calls = decode(req["calls"]) if req["op"] == "map" else [(decode(req["args"]), decode(req["kwargs"]))]
                guard = req.get("guard")
                with contextlib.ExitStack() as stack:
                    g = fn
                    if guard is not None and guard.get("available"):
                        from fp8lab.labs.guard import no_shortcut  # second layer where the lab allows fp8lab

                        g = stack.enter_context(no_shortcut(fn, forbid=guard.get("forbid"), allow=guard.get("allow", ())))
                    for args, kwargs in calls:
                        done.append(g(*args, **kwargs))
                msg = {"ok": True}
            except BaseException as err:  # noqa: BLE001
                msg = {"ok": False, "ename": type(err).__name__, "evalue": str(err)[:2000]}
            try:
                if req["op"] == "map":
                    msg["values"] = encode(done)
                elif msg["ok"]:
                    msg["value"] = encode(done[0])
            except WireError as err:
                msg = {"ok": False, "ename": "TypeError", "evalue": say("returned_wire", name=req["name"], what=text_of(err))}
            stream.take()
            answer(msg)
        elif req["op"] == "names":
            answer({"ok": True, "names": sorted(k for k, v in ns.items() if callable(v) and not k.startswith("__"))})


if __name__ == "__main__":  # pragma: no cover - started inside the sandbox as: runner.py RFD WFD SITE
    sys.path.append(sys.argv[3])  # the folder holding only the lab's allowed packages
    serve(int(sys.argv[1]), int(sys.argv[2]))
