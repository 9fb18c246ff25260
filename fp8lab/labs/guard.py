"""No shortcut: while a task's tests call the student's function, the reference it re-implements cannot run.

``no_shortcut(fn)`` is a context manager that the lab tests wrap around calls of a student's
function. It works in two ways, so that neither binding a reference at import time, nor importing
inside the function, nor reaching it by a detour gets past it:

1. **Before the calls**, it walks the function's code objects (nested functions, lambdas and
   comprehensions too), the globals, closure cells and default values they use, and every function
   or class of the notebook they reach, and refuses forbidden references: a forbidden module
   (``fp8lab``, ``ml_dtypes``, ...), any object defined in one, a forbidden attribute such as
   ``torch.float8_e4m3fn`` (also as an attribute name or a dtype string), and the tools that could
   hide one (``eval``, ``__import__``, ``sys.modules``, ``__code__``, ...).
2. **During the calls**, a profile hook fails the block when any Python function of a forbidden
   module runs (however the student's code found it), and a torch function mode refuses torch
   calls that take a forbidden dtype. ``ml_dtypes`` casts are C code that no hook sees: rule 1 and
   the grader's source scan (``fp8lab.labs.scan``) catch references to its dtypes, and during the
   calls the names ml_dtypes registers with numpy (``np.dtype("float8_" + "e4m3fn")``) are taken
   out of ``np.sctypeDict``, so a dtype name built at run time is "not understood".

Warnings and stderr are swallowed inside the block: nbgrader gives zero points to a test cell that
writes to stderr, and a correct answer may trigger a harmless numpy warning.

Forbidden and allowed names: ``"fp8lab"`` is a module and everything in it; ``"torch:float8_*"``
is attributes of a module (``*`` matches any ending); ``allow=("fp8lab:quantize",)`` exempts one
object, and whatever it calls internally.

Its messages are in English and Chinese in one string (:mod:`fp8lab.labs.messages`).

>>> def double(x):
...     return 2 * x
>>> with no_shortcut(double) as f:
...     f(21)
42
>>> import fp8lab as fl
>>> def cheat(x):
...     return fl.quantize(x, "e4m3")
>>> with no_shortcut(cheat) as f:  # doctest: +ELLIPSIS
...     f(0.3)
Traceback (most recent call last):
...
fp8lab.labs.guard.ShortcutError: cheat may not use fp8lab (through the global name 'fl'); ...
"""

from __future__ import annotations

import contextlib
import dis
import fnmatch
import io
import sys
import threading
import types
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from .messages import Text, joined, noted, phrase, say

__all__ = ["no_shortcut", "ShortcutError", "Policy", "DEFAULT_FORBID", "TAMPER_NAMES", "find_shortcuts"]

#: What no lab answer may use: the reference library, the other codec libraries, torch's FP8/FP4 dtypes.
DEFAULT_FORBID: tuple[str, ...] = (
    "fp8lab", "ml_dtypes", "gfloat", "qtorch", "torchao", "transformer_engine",
    "torch:float8_*", "torch:float4_*",
)

#: Names that reach code or objects without naming them; no lab answer needs them.
TAMPER_NAMES: frozenset[str] = frozenset({
    "eval", "exec", "compile", "__import__", "import_module", "importlib", "__builtins__", "builtins",
    "modules", "setprofile", "settrace", "_getframe", "f_back", "f_globals", "f_locals",
    "__code__", "__globals__", "__closure__", "__dict__", "__subclasses__", "__getattribute__",
    "__wrapped__", "get_ipython", "ctypes", "gc", "inspect",
})

_HARNESS = "fp8lab.labs"  # never forbidden: the tests themselves run it


class ShortcutError(AssertionError):
    """A student's function uses (or ran) what its task asks them to implement."""


@dataclass(frozen=True)
class Policy:
    """Forbidden modules (``"fp8lab"``) and module attributes (``"torch:float8_*"``), minus allowed ones.

    >>> p = Policy.of(allow=("fp8lab:quantize",))
    >>> p.module_forbidden("fp8lab.codec.api"), p.module_forbidden("numpy"), p.module_forbidden("fp8lab.labs")
    (True, False, False)
    """

    modules: tuple[str, ...]
    attributes: tuple[tuple[str, str], ...]
    allow_modules: tuple[str, ...]
    allow_attributes: tuple[tuple[str, str], ...]

    @staticmethod
    def of(forbid: Sequence[str] | None = None, allow: Sequence[str] = ()) -> "Policy":
        """Parse ``forbid`` (default :data:`DEFAULT_FORBID`) and ``allow`` lists of names.

        >>> Policy.of(["fp8lab", "torch:bfloat16"]).attributes
        (('torch', 'bfloat16'),)
        """
        if isinstance(forbid, str) or isinstance(allow, str):
            raise TypeError("forbid and allow are sequences of names such as ('fp8lab', 'torch:float8_*'), not one string")
        forbid = DEFAULT_FORBID if forbid is None else tuple(forbid)
        mods, attrs = _split(forbid)
        amods, aattrs = _split(allow)
        return Policy(mods, attrs, amods, aattrs)

    def module_forbidden(self, name: str) -> bool:
        """Whether objects of module ``name`` are forbidden (the harness never is)."""
        if not name or _within(name, _HARNESS):
            return False
        return any(_within(name, m) for m in self.modules) and not any(_within(name, m) for m in self.allow_modules)

    def attribute_forbidden(self, attr: str) -> str | None:
        """The forbidden ``module:pattern`` an attribute name matches, if any."""
        for mod, pat in self.attributes:
            if fnmatch.fnmatchcase(attr, pat):
                return f"{mod}.{attr}"
        return None

    def forbidden_text(self) -> str:
        """The policy in words, for messages (a :class:`~fp8lab.labs.messages.Text` when something is allowed).

        >>> Policy.of(["fp8lab"], allow=["fp8lab:quantize"]).forbidden_text().zh
        'fp8lab（允许：fp8lab.quantize）'
        """
        parts = list(self.modules) + [f"{m}.{p}" for m, p in self.attributes]
        text = ", ".join(parts)
        if self.allow_modules or self.allow_attributes:
            allowed = ", ".join(list(self.allow_modules) + [f"{m}.{p}" for m, p in self.allow_attributes])
            return phrase("policy_allowed", forbidden=text, allowed=allowed)
        return text


def _split(names: Sequence[str]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    mods, attrs = [], []
    for n in names:
        if not isinstance(n, str) or not n:
            raise TypeError(f"expected names such as 'fp8lab' or 'torch:float8_*', got {n!r}")
        if ":" in n:
            mod, _, pat = n.partition(":")
            attrs.append((mod, pat))
        else:
            mods.append(n)
    return tuple(mods), tuple(attrs)


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


# ------------------------------------------------------------------------------------------------
# 1. the static walk over the function's code and what it refers to
def _attribute_objects(policy: Policy, attrs: tuple[tuple[str, str], ...]) -> dict[int, str]:
    """id -> dotted name of the objects matching ``module:pattern`` names, for modules already imported."""
    found: dict[int, str] = {}
    for mod, pat in attrs:
        m = sys.modules.get(mod)
        if m is None:
            continue
        for key, val in list(vars(m).items()):
            if fnmatch.fnmatchcase(key, pat):
                found[id(val)] = f"{mod}.{key}"
    return found


def _object_module(obj: Any) -> str:
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    if isinstance(obj, np.dtype):
        return getattr(obj.type, "__module__", "") or ""
    mod = getattr(obj, "__module__", None)
    if isinstance(mod, str):
        return mod
    return getattr(type(obj), "__module__", "") or ""


def _object_name(obj: Any) -> str:
    if isinstance(obj, types.ModuleType):
        return obj.__name__
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    mod = _object_module(obj)
    return f"{mod}.{name}" if name else phrase("object_from", type=type(obj).__name__, module=mod)


class _Walker:
    """Collects the forbidden references reachable from one student function."""

    def __init__(self, policy: Policy, home: dict) -> None:
        self.policy = policy
        self.home = home  # the student's globals (the notebook namespace)
        self.bad_ids = _attribute_objects(policy, policy.attributes)
        self.ok_ids = set(_attribute_objects(policy, policy.allow_attributes))
        self.findings: list[Text] = []
        self.seen: set[int] = set()

    def add(self, text: Text) -> None:
        if text not in self.findings:
            self.findings.append(text)

    def forbidden_object(self, obj: Any) -> str | None:
        if id(obj) in self.ok_ids:
            return None
        if id(obj) in self.bad_ids:
            return self.bad_ids[id(obj)]
        mod = _object_module(obj)
        if self.policy.module_forbidden(mod):
            return _object_name(obj)
        return None

    def value(self, obj: Any, via: Text, depth: int = 0) -> None:
        """Check one referenced value; recurse into the notebook's own functions and classes."""
        bad = self.forbidden_object(obj)
        if bad:
            self.add(noted(bad, via))
            return
        if depth > 2 or id(obj) in self.seen:
            return
        if isinstance(obj, (tuple, list, set, frozenset)):
            self.seen.add(id(obj))
            for item in list(obj)[:64]:
                self.value(item, via, depth + 1)
        elif isinstance(obj, dict):
            self.seen.add(id(obj))
            for item in list(obj.values())[:64]:
                self.value(item, via, depth + 1)
        elif hasattr(obj, "func") and hasattr(obj, "args") and callable(obj):  # functools.partial and friends
            self.seen.add(id(obj))
            self.value(obj.func, via, depth + 1)
            for item in tuple(obj.args) + tuple(getattr(obj, "keywords", {}).values()):
                self.value(item, via, depth + 1)
        else:
            self.callable(obj)

    def callable(self, obj: Any) -> None:
        """Walk a function of the notebook (or a class, a bound method, a callable instance)."""
        if id(obj) in self.seen:
            return
        self.seen.add(id(obj))
        if isinstance(obj, types.MethodType):
            self.value(obj.__func__, phrase("via_bound_method"))
            return
        if isinstance(obj, types.FunctionType):
            if obj.__globals__ is not self.home:
                return  # a library function (numpy, math, ...): not the student's code
            self.function(obj)
            return
        if isinstance(obj, type):
            if obj.__module__ != self.home.get("__name__", "__main__"):
                return
            for attr in vars(obj).values():
                inner = getattr(attr, "__func__", attr)
                if isinstance(attr, property):
                    for acc in (attr.fget, attr.fset, attr.fdel):
                        if acc is not None:
                            self.callable(acc)
                elif isinstance(inner, types.FunctionType):
                    self.callable(inner)
            return
        call = getattr(type(obj), "__call__", None)
        if isinstance(call, types.FunctionType) and getattr(type(obj), "__module__", None) == self.home.get("__name__"):
            self.callable(call)

    def function(self, fn: types.FunctionType) -> None:
        name = fn.__qualname__
        g = fn.__globals__
        for code in _codes(fn.__code__):
            ins = list(dis.get_instructions(code))
            for i, op in enumerate(ins):
                if op.opname not in ("LOAD_GLOBAL", "LOAD_NAME") or op.argval not in g:
                    continue
                val = g[op.argval]
                nxt = ins[i + 1] if i + 1 < len(ins) else None
                if (isinstance(val, types.ModuleType) and nxt is not None and nxt.opname in ("LOAD_ATTR", "LOAD_METHOD")
                        and id(getattr(val, str(nxt.argval), None)) in self.ok_ids):
                    continue  # an allowed attribute of a forbidden module, such as fl.quantize
                self.value(val, phrase("via_global", name=repr(op.argval)))
            for n in code.co_names:
                self.name(n, name, imported=n not in g)
            for const in code.co_consts:
                if isinstance(const, str):
                    self.string(const, name)
        for i, cell in enumerate(fn.__closure__ or ()):
            try:
                val = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            self.value(val, phrase("via_closure", var=repr(fn.__code__.co_freevars[i]), function=name))
        for val in list(fn.__defaults__ or ()) + list((fn.__kwdefaults__ or {}).values()):
            self.value(val, phrase("via_default", function=name))

    def name(self, n: str, where: str, imported: bool) -> None:
        """Check a name the code uses as an attribute, an import or a global (globals are resolved above)."""
        if n in TAMPER_NAMES:
            self.add(phrase("found_tamper", name=repr(n), function=where))
            return
        attr = self.policy.attribute_forbidden(n)
        if attr:
            self.add(phrase("found_name", ref=attr, name=repr(n), function=where))
            return
        if imported and self.policy.module_forbidden(n):
            self.add(phrase("found_import", ref=n, function=where))

    def string(self, s: str, where: str) -> None:
        if len(s) > 64:
            return
        for mod in self.policy.modules:
            if s == mod or s.startswith(mod + "."):
                if self.policy.module_forbidden(s):
                    self.add(phrase("found_string", ref=s, text=repr(s), function=where))
        attr = self.policy.attribute_forbidden(s)
        if attr:
            self.add(phrase("found_string", ref=attr, text=repr(s), function=where))


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def find_shortcuts(fn: Callable[..., Any], policy: Policy | None = None) -> list[Text]:
    """The forbidden references reachable from ``fn``, in words (empty when there are none), each in
    English and Chinese (a :class:`~fp8lab.labs.messages.Text`: ``.en``, ``.zh``).

    >>> import math
    >>> find_shortcuts(lambda x: math.floor(x))
    []
    >>> import ml_dtypes, numpy as np
    >>> [(f.en, f.zh) for f in find_shortcuts(lambda x: np.float32(x).astype(ml_dtypes.bfloat16))]
    [("ml_dtypes (through the global name 'ml_dtypes')", "ml_dtypes（通过全局名称 'ml_dtypes'）")]
    """
    policy = policy or Policy.of()
    home = getattr(fn, "__globals__", None)
    for inner in (getattr(fn, "__func__", None), getattr(type(fn), "__call__", None)):
        if home is None:
            home = getattr(inner, "__globals__", None)
    if home is None:
        home = sys.modules["__main__"].__dict__
    w = _Walker(policy, home)
    w.value(fn, phrase("via_itself"))
    return w.findings


# ------------------------------------------------------------------------------------------------
# 2. the hooks that run during the calls
def _forbidden_codes(policy: Policy) -> tuple[set[types.CodeType], set[types.CodeType]]:
    """Code objects of every Python function in forbidden modules, and of the allowed ones."""
    bad: set[types.CodeType] = set()
    ok: set[types.CodeType] = set()
    allowed_ids = set(_attribute_objects(policy, policy.allow_attributes))
    for name, mod in list(sys.modules.items()):
        if mod is None or not policy.module_forbidden(name):
            continue
        for obj in list(vars(mod).values()):
            target = ok if id(obj) in allowed_ids else bad
            for fn in _functions_of(obj, name):
                target.update(_codes(fn.__code__))
    return bad - ok, ok


def _functions_of(obj: Any, modname: str) -> Iterator[types.FunctionType]:
    inner = getattr(obj, "__wrapped__", obj)
    if isinstance(inner, types.FunctionType) and inner.__module__ == modname:
        yield inner
    elif isinstance(obj, type) and obj.__module__ == modname:
        for attr in vars(obj).values():
            if isinstance(attr, property):
                yield from (a for a in (attr.fget, attr.fset, attr.fdel) if isinstance(a, types.FunctionType))
                continue
            attr = getattr(attr, "__func__", attr)
            attr = getattr(attr, "func", attr) if hasattr(attr, "attrname") else attr  # cached_property
            attr = getattr(attr, "__wrapped__", attr)
            if isinstance(attr, types.FunctionType):
                yield attr


class _Watch:
    """The profile hook: records (and raises at) the first call of a forbidden function."""

    def __init__(self, bad: set[types.CodeType], ok: set[types.CodeType]) -> None:
        self.bad, self.ok = bad, ok
        self.hit: str | None = None

    def __call__(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if event != "call" or frame.f_code not in self.bad:
            return
        f = frame.f_back
        while f is not None:
            if f.f_code in self.ok:
                return
            f = f.f_back
        code = frame.f_code
        mod = frame.f_globals.get("__name__", "?")
        self.hit = self.hit or f"{mod}.{code.co_name}"
        raise ShortcutError(say("called_forbidden", ref=f"{mod}.{code.co_name}"))


@contextlib.contextmanager
def _torch_mode(policy: Policy) -> Iterator[list[str]]:
    """Refuse torch calls that take a forbidden dtype (``torch:float8_*`` and friends) while active."""
    hits: list[str] = []
    torch = sys.modules.get("torch")
    names = {i: n for i, n in _attribute_objects(policy, tuple(a for a in policy.attributes if a[0] == "torch")).items()}
    if torch is None or not names:
        yield hits
        return
    from torch.overrides import TorchFunctionMode

    def scan(values: Any) -> str | None:
        for v in values:
            if id(v) in names:
                return names[id(v)]
            if isinstance(v, (list, tuple)):
                found = scan(v)
                if found:
                    return found
        return None

    class Refuse(TorchFunctionMode):
        def __torch_function__(self, func, types_, args=(), kwargs=None):
            kwargs = kwargs or {}
            bad = scan(args) or scan(kwargs.values())
            if bad:
                hits.append(bad)
                raise ShortcutError(say("cast_forbidden", func=getattr(func, "__name__", func), ref=bad))
            return func(*args, **kwargs)

    with Refuse():
        yield hits


@contextlib.contextmanager
def _hidden_dtype_names(policy: "Policy") -> Iterator[None]:
    """Take the dtype names that forbidden modules registered with numpy out of ``np.sctypeDict`` (put back after).

    >>> import ml_dtypes
    >>> with _hidden_dtype_names(Policy.of(["ml_dtypes"])):
    ...     "bfloat16" in np.sctypeDict
    False
    >>> "bfloat16" in np.sctypeDict
    True
    """
    table = np.sctypeDict
    hidden = {k: v for k, v in list(table.items())
              if policy.module_forbidden(str(getattr(v, "__module__", "") or ""))}
    for k in hidden:
        del table[k]
    try:
        yield
    finally:
        table.update(hidden)


class no_shortcut(contextlib.AbstractContextManager):  # noqa: N801 - used like a function
    """Guard calls of a student's ``fn``: refuse it up front if it refers to a forbidden reference, fail
    the block if one runs during the calls (see the module docstring).

    ``with no_shortcut(fn) as f:`` yields ``fn`` itself; compute the expected values *before* the
    block (fp8lab cannot run inside it) and compare them after it.

    >>> with no_shortcut(abs, forbid=["fp8lab"]) as f:
    ...     f(-3)
    3
    """

    def __init__(self, fn: Callable[..., Any], *, forbid: Sequence[str] | None = None, allow: Sequence[str] = ()) -> None:
        if not callable(fn):
            raise TypeError(f"no_shortcut expects the function to test, got {type(fn).__name__}")
        self.fn = fn
        self.policy = Policy.of(forbid, allow)
        self._forbid, self._allow = (list(forbid) if forbid is not None else None), list(allow)
        self.name = getattr(fn, "__name__", None) or phrase("an_object", type=type(fn).__name__)
        self._stack: contextlib.ExitStack | None = None

    def __enter__(self) -> Callable[..., Any]:
        if getattr(self.fn, "fp8lab_remote", False):  # the grader's stand-in: the sandbox runs the guard
            self._stack = None
            return self.fn.guarded(self._forbid, self._allow)
        found = find_shortcuts(self.fn, self.policy)
        if found:
            raise ShortcutError(say("may_not_use", name=self.name, found=joined(found),
                                    policy=self.policy.forbidden_text()))
        bad, ok = _forbidden_codes(self.policy)
        self._watch = _Watch(bad, ok)
        stack = contextlib.ExitStack()
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore")
        stack.enter_context(np.errstate(all="ignore"))
        stack.enter_context(contextlib.redirect_stderr(io.StringIO()))
        self._torch_hits = stack.enter_context(_torch_mode(self.policy))
        stack.enter_context(_hidden_dtype_names(self.policy))
        self._previous = (sys.getprofile(), threading.getprofile() if hasattr(threading, "getprofile") else None)
        sys.setprofile(self._watch)
        threading.setprofile(self._watch)
        self._stack = stack
        return self.fn

    def __exit__(self, exc_type, exc, tb) -> bool:
        if self._stack is None:  # a remote stand-in: nothing was installed here
            return False
        sys.setprofile(self._previous[0])
        threading.setprofile(self._previous[1])
        assert self._stack is not None
        self._stack.__exit__(None, None, None)
        hit = self._watch.hit or (self._torch_hits[0] if self._torch_hits else None)
        if hit:
            raise ShortcutError(say("called_while_tests_ran" if self._watch.hit else "used_while_tests_ran",
                                    name=self.name, ref=hit, policy=self.policy.forbidden_text()))
        return False
