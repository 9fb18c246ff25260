"""The labs' checks without nbgrader: the no-shortcut guard, the grader's source scan, feedback, seeds, limits.

The cheating functions are defined at module level, as a student's are in a notebook: the guard
follows the names a function uses through the globals it shares with them.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap

import ml_dtypes
import nbformat
import numpy as np
import pytest
import torch

import fp8lab as fl
from fp8lab import decode as bound_decode
from fp8lab.labs import ShortcutError, expect_close, expect_equal, expect_raises, grading_rng, grading_seed, no_shortcut
from fp8lab.labs import guard as guard_module
from fp8lab.labs.preprocess import mark_shortcuts, notebook_cells
from fp8lab.labs.scan import Cell, scan

F8 = torch.float8_e4m3fn
helper = lambda c: fl.decode(np.uint8(c), "e4m3")  # noqa: E731 - a student's helper
partial_decode = functools.partial(fl.decode, fmt="e4m3")


def honest(c):
    sign = -1.0 if c & 0x80 else 1.0
    return sign * float(c & 0x7F)


def direct(c):
    return float(fl.decode(np.uint8(c), "e4m3"))


def bound(c):
    return float(bound_decode(np.uint8(c), "e4m3"))


def inside(c):
    import fp8lab

    return float(fp8lab.decode(np.uint8(c), "e4m3"))


def via_default(c, _f=bound_decode):
    return float(_f(np.uint8(c), "e4m3"))


def via_helper(c):
    return float(helper(c))


def via_partial(c):
    return float(partial_decode(np.uint8(c)))


def detour(c):
    m = __import__("fp8" + "lab")
    return float(getattr(m, "dec" + "ode")(np.uint8(c), "e4m3"))


def ml_cast(x):
    return float(np.float32(x).astype(ml_dtypes.float8_e4m3fn).astype(np.float32))


def dtype_string(x):
    return float(np.float32(x).astype("float8_e4m3fn").astype(np.float32))


def torch_cast(x):
    return float(torch.tensor([x]).to(torch.float8_e4m3fn).float())


def torch_bound(x):
    return float(torch.tensor([x]).to(F8).float())


def caught(c):
    try:
        return float(fl.decode(np.uint8(c), "e4m3"))
    except Exception:  # noqa: BLE001 - the cheat swallows the guard's error and tries again
        return float(fl.decode(np.uint8(c), "e4m3"))


def quantize_allowed(x):
    return float(fl.quantize(x, "e4m3", saturate=True))


def encode_not_allowed(x):
    return int(fl.encode(x, "e4m3"))


class Callable:
    def __call__(self, c):
        return float(fl.decode(np.uint8(c), "e4m3"))


STATIC_CHEATS = [direct, bound, inside, via_default, via_helper, via_partial, detour, ml_cast, dtype_string,
                 torch_cast, torch_bound, caught, Callable()]


def test_an_honest_function_passes_and_the_hooks_are_removed_afterwards():
    before = sys.getprofile()
    with no_shortcut(honest) as f:
        assert f(0x85) == -5.0
    assert sys.getprofile() is before


@pytest.mark.parametrize("fn", STATIC_CHEATS, ids=lambda f: getattr(f, "__name__", type(f).__name__))
def test_a_function_that_refers_to_the_reference_is_refused_before_it_runs(fn):
    with pytest.raises(ShortcutError, match="may not use"):
        with no_shortcut(fn) as f:
            f(56)


@pytest.mark.parametrize("fn", [direct, detour, torch_cast, caught, via_helper], ids=lambda f: f.__name__)
def test_the_runtime_hooks_catch_what_the_static_walk_misses(fn, monkeypatch):
    monkeypatch.setattr(guard_module, "find_shortcuts", lambda *a, **k: [])
    with pytest.raises(ShortcutError, match="while its tests ran|this task asks you"):
        with no_shortcut(fn) as f:
            f(56)


def test_a_caught_guard_error_still_fails_the_block(monkeypatch):
    monkeypatch.setattr(guard_module, "find_shortcuts", lambda *a, **k: [])
    with pytest.raises(ShortcutError, match="called fp8lab.codec.api.decode"):
        with no_shortcut(caught) as f:
            assert f(56) == 1.0  # the second call ran after the profile hook was unset; the block still fails


def test_allow_exempts_one_reference_and_what_it_calls_but_nothing_else():
    with no_shortcut(quantize_allowed, allow=("fp8lab:quantize",)) as f:
        assert f(500.0) == 448.0
    with pytest.raises(ShortcutError):
        with no_shortcut(encode_not_allowed, allow=("fp8lab:quantize",)) as f:
            f(1.0)


def test_reference_values_can_be_computed_outside_the_block_but_not_inside():
    want = float(fl.decode(np.uint8(0x38), "e4m3"))
    with no_shortcut(honest) as f:
        got = f(1)
    assert want == 1.0 and got == 1.0
    with pytest.raises(ShortcutError):
        with no_shortcut(honest):
            fl.decode(np.uint8(0x38), "e4m3")


def test_warnings_and_stderr_inside_the_block_do_not_reach_stderr(capfd):
    def noisy(x):
        print("debug", file=sys.stderr)
        return np.float32(x) * np.float32(1e38) * np.float32(10)  # overflow warning

    with no_shortcut(noisy) as f:
        assert np.isinf(f(1.0))
    assert capfd.readouterr().err == ""


def test_the_policy_is_validated():
    with pytest.raises(TypeError, match="sequences of names"):
        no_shortcut(honest, forbid="fp8lab")
    with pytest.raises(TypeError, match="function to test"):
        no_shortcut(42)


# ------------------------------------------------------------------------------------------------
TESTS = Cell("test_dec", "from fp8lab.labs import no_shortcut\nwith no_shortcut(dec) as f: f(1)", True, test_of="dec")
OTHER = Cell("test_other", "with no_shortcut(other, forbid=['fp8lab', 'torch:bfloat16'], allow=['fp8lab:quantize']) as f: f(1)",
             True, test_of="other")
SETUP = Cell("setup", "import numpy as np", True)

SCAN_CASES = {
    # name: (answer cell of task "dec", the tasks that must lose their points; None = every task)
    "honest": ("def dec(c):\n    return float(c) * 2", ()),
    "direct": ("import fp8lab as fl\ndef dec(c):\n    return fl.decode(c, 'e4m3')", ("dec",)),
    "bound": ("from fp8lab import decode as d\ndef dec(c):\n    return d(c, 'e4m3')", ("dec",)),
    "inside": ("def dec(c):\n    import fp8lab\n    return fp8lab.decode(c, 'e4m3')", ("dec",)),
    "table": ("import fp8lab as fl, numpy as np\nT = fl.decode(np.arange(256, dtype=np.uint8), 'e4m3')\ndef dec(c):\n    return T[c]",
              ("dec", "other")),
    "detour": ("def dec(c):\n    m = __import__('fp8' + 'lab')\n    return getattr(m, 'dec' + 'ode')(c)", None),
    "ml_dtypes": ("import ml_dtypes\ndef dec(c):\n    return np.float32(c).astype(ml_dtypes.float8_e4m3fn)", ("dec",)),
    "dtype_string": ("def dec(c):\n    return np.float32(c).astype('float8_e4m3fn')", ("dec",)),
    "magic": ("%time x = 1\ndef dec(c):\n    return c", None),
    "shell": ("!ls\ndef dec(c):\n    return c", None),
    "patch_reference": ("import fp8lab\nfp8lab.decode = lambda *a: 0\ndef dec(c):\n    return 0", None),
    "patch_harness": ("import fp8lab.labs.guard as g\ng.no_shortcut = None", None),
    "harness_module": ("from fp8lab import labs", None),
    "harness_checks_ok": ("from fp8lab.labs import expect_equal\nexpect_equal(1, 1)", ()),
    "dunder": ("def dec(c):\n    return ().__class__.__base__.__subclasses__()", None),
    "sys_modules": ("import sys\ndef dec(c):\n    return sys.modules['fp8lab'].decode(c)", None),
    "signal": ("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)", None),
}


@pytest.mark.parametrize("name", list(SCAN_CASES))
def test_the_source_scan_costs_exactly_the_right_tasks(name):
    source, lost = SCAN_CASES[name]
    findings = scan([SETUP, Cell("dec", source, task="dec"), TESTS, OTHER])
    if lost == ():
        assert findings == [], [f.describe() for f in findings]
    elif lost is None:
        assert any(f.tasks is None for f in findings), [f.describe() for f in findings]
    else:
        assert findings and all(f.tasks is not None for f in findings)
        assert set().union(*(f.tasks for f in findings)) == set(lost), [f.describe() for f in findings]


def test_the_scan_honours_a_tasks_allow_list_and_extra_forbidden_names():
    allowed = Cell("other", "import fp8lab as fl\ndef other(x):\n    return fl.quantize(x, 'e4m3')", task="other")
    assert scan([SETUP, allowed, TESTS, OTHER]) == []
    bf16 = Cell("other", "import torch\ndef other(x):\n    return torch.tensor(x).to(torch.bfloat16)", task="other")
    assert [f.tasks for f in scan([SETUP, bf16, TESTS, OTHER])] == [("other",)]


def _graded_nb(answer: str) -> nbformat.NotebookNode:
    meta = lambda gid, **kw: {"nbgrader": {"grade_id": gid, "schema_version": 3, **kw}}  # noqa: E731
    return nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import numpy as np", metadata=meta("setup", grade=False, solution=False, locked=True)),
        nbformat.v4.new_code_cell(answer, metadata=meta("dec", grade=False, solution=True, locked=False)),
        nbformat.v4.new_code_cell("from fp8lab.labs import no_shortcut\nwith no_shortcut(dec) as f: f(1)",
                                  metadata=meta("test_dec", grade=True, solution=False, locked=True, points=1)),
        nbformat.v4.new_code_cell("import fp8lab", metadata={"nbgrader": {"locked": True, "schema_version": 3}}),
    ])


def test_the_preprocessor_makes_the_tasks_test_cells_fail_with_the_finding():
    nb, findings = mark_shortcuts(_graded_nb("import fp8lab\ndef dec(c):\n    return fp8lab.decode(c, 'e4m3')"))
    assert findings
    first = nb.cells[2].source.splitlines()
    assert first[0].startswith("# fp8lab grader") and any(line.startswith("raise AssertionError(") for line in first)
    nb, findings = mark_shortcuts(_graded_nb("def dec(c):\n    return c"))
    assert findings == [] and nb.cells[2].source.startswith("from fp8lab.labs")


def test_a_cell_with_made_up_metadata_is_not_trusted():
    cells = notebook_cells(_graded_nb("def dec(c):\n    return c"))
    assert [c.trusted for c in cells] == [True, False, True, False]  # the last cell lost its grade id


# ------------------------------------------------------------------------------------------------
def test_feedback_says_what_was_expected_and_what_came_back():
    with pytest.raises(AssertionError, match=r"f\(1\): expected 2.0, got 3.0"):
        expect_equal(3.0, 2.0, what="f(1)")
    with pytest.raises(AssertionError, match="expected nan, got 0.0"):
        expect_equal(0.0, float("nan"), what="f(nan)")
    expect_equal(float("nan"), float("nan"))
    with pytest.raises(AssertionError, match="the sign of zero differs"):
        expect_equal(0.0, -0.0, what="f(0x80)")
    with pytest.raises(AssertionError, match=r"(?s)1 of 3 values differ.*at \[2\] for input 0x03: expected 3.0, got 4.0"):
        expect_equal([1.0, 2.0, 4.0], np.array([1.0, 2.0, 3.0]), what="f(c)", inputs=["0x01", "0x02", "0x03"])
    with pytest.raises(AssertionError, match="expected shape"):
        expect_equal(np.zeros(2), np.zeros(3))
    with pytest.raises(AssertionError, match="expected numbers, got None"):
        expect_equal([None, 1.0], np.array([0.0, 1.0]))
    with pytest.raises(AssertionError, match=r"expected 3 items, got tuple of 2"):
        expect_equal((1, 2), (1, 2, 3))
    with pytest.raises(AssertionError, match=r"expected an integer, got str"):
        expect_equal("7", 7)
    with pytest.raises(AssertionError, match="within"):
        expect_close(1.1, 1.0, rel=0.01)
    expect_close([1.0, np.inf], [1.0 + 1e-9, np.inf], rel=1e-6)
    with pytest.raises(AssertionError, match="expected ValueError, but it returned 3"):
        expect_raises(ValueError, lambda: 3, what="g()")


def test_the_grading_seed_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("FP8LAB_GRADING_SEED", "42")
    a = grading_rng("t").integers(0, 2**32, 5)
    assert grading_seed() == 42 and (a == grading_rng("t").integers(0, 2**32, 5)).all()
    assert not (a == grading_rng("u").integers(0, 2**32, 5)).all()
    monkeypatch.setenv("FP8LAB_GRADING_SEED", "not a number")
    with pytest.raises(ValueError, match="must be an integer"):
        grading_seed()
    monkeypatch.delenv("FP8LAB_GRADING_SEED")
    assert grading_seed() != grading_seed()  # fresh each time without the grader


def test_the_kernel_launcher_caps_memory_so_an_allocation_bomb_gets_a_memory_error():
    code = textwrap.dedent("""
        from fp8lab.labs.kernel import apply_limits
        apply_limits(1 << 30, 60, 1 << 20)
        try:
            hog = [bytearray(1 << 26) for _ in range(64)]
        except MemoryError:
            print("MemoryError")
        try:
            open("big.bin", "wb").write(b"x" * (2 << 20))
        except OSError as err:
            print("file", type(err).__name__)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=os.environ.get("TMPDIR", "/tmp"))
    assert "MemoryError" in out.stdout, out.stderr
    assert "file" in out.stdout, out.stderr


_ML_DTYPE_NAMES = sorted(k for k, v in np.sctypeDict.items() if getattr(v, "__module__", "") == "ml_dtypes")


@pytest.mark.parametrize("name", _ML_DTYPE_NAMES)
def test_a_dtype_name_built_at_run_time_is_not_understood_inside_the_block(name):
    """Every name ml_dtypes registers with numpy, spelled so no static scan sees it, fails inside the block."""
    head, tail = name[: len(name) // 2], name[len(name) // 2:]

    def sneaky(x):
        return np.asarray(x, np.float32).astype(head + tail).astype(np.float32)

    assert np.dtype(name)  # understood before the block
    with pytest.raises(TypeError, match="not understood"):
        with no_shortcut(sneaky, forbid=["ml_dtypes"]) as f:
            f([1.5])
    assert np.dtype(name) and name in np.sctypeDict  # and restored after it, also after an error


def test_dtype_names_stay_when_ml_dtypes_is_allowed():
    with no_shortcut(lambda x: np.asarray(x).astype("bfloat16"), forbid=["fp8lab"]) as f:
        assert f([1.0]).dtype.name == "bfloat16"
