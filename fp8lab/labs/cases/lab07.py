"""Random cases of lab 07_loss_scaler: fresh inputs from a seed, fp8lab's answer, the comparison.

One function per task, named by its id and called as ``task(fn, rng)``: it draws the cases from
``rng``, computes what fp8lab says, calls ``fn`` (the submission's function) and raises
AssertionError with the input, the expected value and what came back at the first difference.

>>> import numpy as np
>>> has_inf_or_nan(lambda *args, **kwargs: 0, np.random.default_rng(0))  # answers 0: refused
Traceback (most recent call last):
...
AssertionError: has_inf_or_nan([-inf]): expected True, got 0 (expected a bool, got int) / has_inf_or_nan([-inf])：期望 True，得到 0（期望布尔值（bool），得到 int）
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from fp8lab.scaling.loss_scaler import has_inf_or_nan as reference
from fp8lab.labs import DEFAULT_FORBID, expect_close, expect_equal, no_shortcut
import fp8lab as fl

__all__ = ['has_inf_or_nan', 'fp16_flush', 'unscale', 'update_scale', 'run_scaler']


def has_inf_or_nan(has_inf_or_nan: Callable[..., Any], rng: np.random.Generator) -> None:
    """-inf, NaN in the last element of a large array, float16 and float32 arrays, 0-d arrays, Python floats, empty arrays, lists of None, random lists; against fp8lab."""
    big = rng.standard_normal(100_000).astype(np.float32)
    big_nan = big.copy(); big_nan[-1] = np.nan
    cases = {
        "[-inf]": [np.array([-np.inf])],
        "[big, big with NaN last]": [big, big_nan],
        "[big]": [big],
        "[float16 65504, float16 inf]": [np.array([65504.0], np.float16), np.array([np.inf], np.float16)],
        "[float16 65504]": [np.array([65504.0], np.float16)],
        "[0-d 3.0, 0-d nan]": [np.array(3.0), np.array(np.nan)],
        "[1.5, 2.5] (Python floats)": [1.5, 2.5],
        "[1.5, inf] (Python floats)": [1.5, float("inf")],
        "[empty array, None]": [np.array([], np.float32), None],
        "[None, None]": [None, None],
        "[float32 max, -float32 max]": [np.array([3.4028235e38], np.float32), np.array([-3.4028235e38], np.float32)],
    }
    for i in range(40):  # random lists of ragged gradients, some with one inf or NaN
        grads = [rng.standard_normal(tuple(int(n) for n in rng.integers(1, 6, int(rng.integers(1, 4))))).astype(np.float32)
                 for _ in range(int(rng.integers(1, 6)))]
        if rng.random() < 0.5:
            g = grads[int(rng.integers(len(grads)))]
            g.flat[int(rng.integers(g.size))] = rng.choice([np.inf, -np.inf, np.nan])
        if rng.random() < 0.3:
            grads.insert(int(rng.integers(len(grads) + 1)), None)
        cases[f"random list {i} (shapes {[None if g is None else g.shape for g in grads]})"] = grads
    want = {k: reference(v) for k, v in cases.items()}
    with no_shortcut(has_inf_or_nan, forbid=DEFAULT_FORBID + ("torch.amp", "torch.cuda.amp", "torch:_amp_*")) as check:
        got = {k: check(v) for k, v in cases.items()}
    for k in cases:
        expect_equal(got[k], want[k], what=f"has_inf_or_nan({k})")


def fp16_flush(fp16_flush: Callable[..., Any], rng: np.random.Generator) -> None:
    """The FP16 thresholds and their ties (2^-25, 65504, 65519.996, 65520), negative values, inf/NaN/zero inputs (not counted), float32 overflow of the product, empty and 2-D arrays, random log-normal gradients at many scales; against fp8lab.quantize(..., "fp16")."""
    def reference(g, scale):
        g = np.asarray(g, dtype=np.float32)
        counted = np.isfinite(g) & (g != 0)
        n = int(counted.sum())
        if n == 0:
            return (0.0, 0.0)
        with np.errstate(over="ignore"):
            stored = fl.quantize(g * np.float32(scale), "fp16")
        return (float((counted & (stored == 0)).sum()) / n, float((counted & np.isinf(stored)).sum()) / n)

    f32 = np.float32
    cases = [
        (np.array([2.0**-25, -2.0**-25, np.nextafter(f32(2.0**-25), f32(1)), 2.0**-24, 2.0**-26], np.float32), 1.0),
        (np.array([65504.0, 65519.996, 65520.0, -65520.0, 1e5], np.float32), 1.0),
        (np.array([1.0, 2.0, 4.0], np.float32), 2.0**14),
        (np.array([0.0, -0.0, np.inf, -np.inf, np.nan], np.float32), 1.0),
        (np.array([0.0, np.nan, 1e-30, 3.0e38], np.float32), 65536.0),
        (np.array([], np.float32), 8.0),
        (rng.standard_normal((7, 5)).astype(np.float32) * f32(1e-6), 1024.0),
    ]
    for _ in range(40):  # gradients spread over 16 decades, as in a real network
        g = (np.exp(rng.normal(-14.0, 4.0, int(rng.integers(1, 3000)))) * rng.choice([-1.0, 1.0])).astype(np.float32)
        g[rng.random(g.size) < 0.05] = rng.choice([0.0, np.inf, np.nan])
        cases.append((g, float(2.0 ** int(rng.integers(-4, 40)))))
    want = [reference(g, s) for g, s in cases]
    with no_shortcut(fp16_flush, forbid=DEFAULT_FORBID + ("torch.amp", "torch.cuda.amp", "torch:_amp_*")) as flush:
        got = [flush(g.copy(), s) for g, s in cases]
    for (g, s), gw, w in zip(cases, got, want):
        label = f"fp16_flush({np.array2string(g, threshold=6)}, {s})"
        try:
            under, over = gw
        except (TypeError, ValueError):
            raise AssertionError(f"{label}: expected a pair (underflow, overflow) like {w}, got {gw!r}") from None
        expect_close(under, w[0], rel=1e-12, what=label + "[0] (underflow)")
        expect_close(over, w[1], rel=1e-12, what=label + "[1] (overflow)")


def unscale(unscale: Callable[..., Any], rng: np.random.Generator) -> None:
    """Scales that are not powers of two (3, 1000, 65535, 0.75), huge and tiny scales, inf/NaN/-0.0 gradients, empty and 2-D arrays, random gradients; against fp8lab.LossScaler.unscale_."""
    cases = [
        ([np.array([3.0, 6.0, 9.0, -0.0, 1e-45], np.float32)], 3.0),
        ([np.array([1000.0, 7.0, 123456.0], np.float32), np.array([[np.nan, 1.0]], np.float32)], 1000.0),
        ([np.array([65535.0, 1.0, -2.0], np.float32)], 65535.0),
        ([np.array([0.75, 3.0e38], np.float32)], 0.75),
        ([np.array([1.0, -np.inf], np.float32), np.array([], np.float32)], 2.0**100),
        ([np.array([1e-30, 5.0], np.float32)], 2.0**-100),
    ]
    for _ in range(30):
        grads = [(rng.standard_normal(tuple(int(n) for n in rng.integers(1, 9, int(rng.integers(1, 3))))) * 10.0 ** rng.integers(-8, 8)).astype(np.float32)
                 for _ in range(int(rng.integers(1, 5)))]
        if rng.random() < 0.3:
            g = grads[0]
            g.flat[int(rng.integers(g.size))] = rng.choice([np.inf, -np.inf, np.nan])
        scale = float(np.float32(rng.uniform(1.0, 2.0) * 2.0 ** int(rng.integers(-10, 30))))
        cases.append((grads, scale))
    want = []
    for grads, scale in cases:
        copies = [g.copy() for g in grads]
        with np.errstate(over="ignore"):  # 3e38 / 0.75 overflows to inf, as it should
            found = fl.LossScaler(init_scale=scale).unscale_(copies)
        want.append((copies, found))
    with no_shortcut(unscale, forbid=DEFAULT_FORBID + ("torch.amp", "torch.cuda.amp", "torch:_amp_*")) as un:
        got = [un([g.copy() for g in grads], scale) for grads, scale in cases]
    for (grads, scale), g, (w_grads, w_found) in zip(cases, got, want):
        label = f"unscale({[np.array2string(x, threshold=4) for x in grads]}, {scale!r})"
        try:
            g_grads, g_found = g
            g_grads = list(g_grads)
        except (TypeError, ValueError):
            raise AssertionError(f"{label}: expected a pair (list of arrays, bool), got {g!r}") from None
        expect_equal(g_found, w_found, what=label + "[1] (found_inf)")
        expect_equal(len(g_grads), len(w_grads), what=f"{label}: the number of arrays")
        for i, (a, b) in enumerate(zip(g_grads, w_grads)):
            expect_equal(a, b, what=f"{label}[0][{i}]", inputs=grads[i], exact_dtype=True)


def update_scale(update_scale: Callable[..., Any], rng: np.random.Generator) -> None:
    """Growth next to float32's maximum (no growth to inf), backoff into subnormals and to zero, growth_interval 1, factors whose products round in float32, random states; against fp8lab.LossScaler.update."""
    def reference(scale, tracker, found_inf, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
        s = fl.LossScaler(growth_factor=growth_factor, backoff_factor=backoff_factor, growth_interval=growth_interval)
        s.load_state_dict({"scale": scale, "_growth_tracker": tracker})
        applied = s.update(found_inf)
        return (s.scale, s.growth_tracker, applied)

    f32max = float(np.finfo(np.float32).max)
    cases = [
        (2.0**127, 1999, False, {}), (2.0**126, 1999, False, {}), (f32max, 0, False, {"growth_interval": 1}),
        (2.0**-149, 0, True, {}), (2.0**-148, 5, True, {}), (0.0, 1999, False, {}), (0.0, 0, True, {}),
        (1.0, 0, False, {"growth_interval": 1}), (3.0, 6, False, {"growth_interval": 7, "growth_factor": 1.1}),
        (65536.0, 10, True, {"backoff_factor": 0.9}), (12345.0, 2, False, {"growth_interval": 3, "growth_factor": 1.7}),
    ]
    for _ in range(300):
        interval = int(rng.choice([1, 2, 3, 10, 2000]))
        kw = {"growth_interval": interval, "growth_factor": float(rng.choice([2.0, 1.5, 1.001, 3.7])),
              "backoff_factor": float(rng.choice([0.5, 0.25, 0.3, 0.999]))}
        scale = float(np.float32(rng.uniform(1.0, 2.0) * 2.0 ** int(rng.integers(-149, 128))))
        cases.append((scale, int(rng.integers(0, interval)), bool(rng.random() < 0.5), kw))
    want = [reference(s, t, f, **kw) for s, t, f, kw in cases]
    with no_shortcut(update_scale, forbid=DEFAULT_FORBID + ("torch.amp", "torch.cuda.amp", "torch:_amp_*")) as upd:
        got = [upd(s, t, f, **kw) for s, t, f, kw in cases]
    for (s, t, f, kw), g, w in zip(cases, got, want):
        args = ", ".join([repr(s), str(t), str(f)] + [f"{k}={v!r}" for k, v in kw.items()])
        expect_equal(g, w, what=f"update_scale({args})")


def run_scaler(run_scaler: Callable[..., Any], rng: np.random.Generator) -> None:
    """Random runs of thousands of steps with rare and frequent overflows and bursts, 200 overflows in a row (the scale reaches 0), growth up to float32's maximum, non-default factors and intervals; against fp8lab.LossScaler."""
    def reference(found_infs, init_scale=65536.0, **kw):
        s = fl.LossScaler(init_scale=init_scale, **kw)
        scales = []
        for f in found_infs:
            s.update(bool(f))
            scales.append(s.scale)
        return scales, s.skipped_steps

    cases = [([True] * 200, {}), ([False] * 30, {"init_scale": 2.0**120, "growth_interval": 2}),
             ([False] * 4001 + [True] + [False] * 1999, {})]
    for _ in range(12):
        n = int(rng.integers(100, 6000))
        p = float(rng.choice([0.0005, 0.01, 0.2]))
        flags = rng.random(n) < p
        if rng.random() < 0.5:  # a burst of overflows, as after a loss spike
            start = int(rng.integers(n))
            flags[start:start + int(rng.integers(5, 40))] = True
        kw = {"init_scale": float(2.0 ** int(rng.integers(0, 24))), "growth_interval": int(rng.choice([1, 7, 100, 2000])),
              "growth_factor": float(rng.choice([2.0, 1.5])), "backoff_factor": float(rng.choice([0.5, 0.3]))}
        cases.append(([bool(f) for f in flags], kw))
    want = [reference(flags, **kw) for flags, kw in cases]
    with no_shortcut(run_scaler, forbid=DEFAULT_FORBID + ("torch.amp", "torch.cuda.amp", "torch:_amp_*")) as run:
        got = [run(list(flags), **kw) for flags, kw in cases]
    for (flags, kw), g, (w_scales, w_skipped) in zip(cases, got, want):
        label = f"run_scaler(<{len(flags)} steps, {sum(flags)} overflows>, {', '.join(f'{k}={v!r}' for k, v in kw.items())})"
        try:
            g_scales, g_skipped = g
        except (TypeError, ValueError):
            raise AssertionError(f"{label}: expected a pair (scales, skipped), got {type(g).__name__}") from None
        expect_equal(g_skipped, w_skipped, what=label + "[1] (skipped steps)")
        expect_equal(np.asarray(g_scales, dtype=np.float64), np.asarray(w_scales, dtype=np.float64),
                     what=label + "[0] (scale after each step)", inputs=[f"step {i} (overflow {f})" for i, f in enumerate(flags)])
