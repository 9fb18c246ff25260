"""The declared table of quantize_tensor's paths (fp8lab/scaling/paths.py): which path serves which call, the
switches (force_path, disable_paths), and that every path gives the general path's QTensor field for field."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

import fp8lab as fl
from fp8lab.codec import ckernels
from fp8lab.scaling import paths as sp
from fp8lab.scaling.recipes import AxisScaling, BlockScaling, PercentileScaling, TensorScaling
from fp8lab.scaling.mx import MXScaling
from fp8lab.scaling.delayed import DelayedScaling

from .test_scaling_fast import _assert_same

KERNELS = ckernels.available()
E4 = "e4m3"


def _expected(x, fmt: str, recipe) -> str:
    """The path the table's rules should pick, derived here from what each path is documented to need."""
    f = fl.get_format(fmt)
    if not torch.is_tensor(x) or x.dtype != torch.float32 or x.ndim == 0 or x.numel() == 0 or x.device.type == "meta":
        return "general"
    if type(recipe) not in (TensorScaling, AxisScaling, BlockScaling, MXScaling, DelayedScaling):
        return "general"
    if f.name not in ("float8_e4m3fn", "float8_e5m2"):  # the formats with a torch cast on every torch here
        return "general"
    block = recipe.block_for(tuple(x.shape))
    if any(n % b for n, b in zip(x.shape, block)):
        return "general"
    if x.ndim != 2 or not KERNELS:
        return "torch"
    rule = (type(recipe) is MXScaling and recipe.scale_rounding == "rceil") or \
        type(recipe) in (TensorScaling, AxisScaling, BlockScaling)  # float or power-of-two scales, any block
    return "fused_band" if rule else "ckernel"


CASES = [
    (torch.randn(8, 128), E4, TensorScaling()),
    (torch.randn(8, 128), "e5m2", TensorScaling(pow2=True)),
    (torch.randn(8, 128), E4, AxisScaling(pow2=True)),
    (torch.randn(8, 128), E4, AxisScaling(axis=0)),
    (torch.randn(8, 128).t(), E4, AxisScaling(pow2=True)),
    (torch.randn(8, 256), E4, BlockScaling((1, 128))),
    (torch.randn(8, 256), E4, BlockScaling((1, 128), pow2=True)),
    (torch.randn(128, 256), E4, BlockScaling((128, 128), pow2=True)),
    (torch.randn(8, 100), E4, BlockScaling((1, 128))),
    (torch.randn(4, 64), E4, MXScaling()),
    (torch.randn(4, 64), E4, MXScaling(scale_rounding="rceil")),
    (torch.randn(64, 4).t(), E4, MXScaling(scale_rounding="rceil", axis=0)),
    (torch.randn(2, 4, 64), E4, MXScaling(scale_rounding="rceil")),
    (torch.randn(4, 64), "fp4", MXScaling()),
    (torch.randn(4, 64), "int8", TensorScaling()),
    (torch.randn(4, 64).double(), E4, TensorScaling()),
    (torch.randn(4, 64).half(), E4, TensorScaling()),
    (torch.tensor(3.0), E4, TensorScaling()),
    (torch.zeros(0, 64), E4, TensorScaling()),
    (np.ones((4, 64), np.float32), E4, TensorScaling()),
    (torch.randn(4, 64), E4, PercentileScaling()),
    (torch.randn(4, 64), E4, DelayedScaling()),
]


@pytest.mark.parametrize("i", range(len(CASES)))
def test_which_path_follows_the_rules_each_path_states(i):
    x, fmt, recipe = CASES[i]
    assert fl.which_scaling_path(x, fmt, recipe) == _expected(x, fmt, recipe)
    req = sp.request_for(x, fmt, recipe)
    for p in sp.SCALING_PATHS:  # every path before the chosen one says why it does not apply
        if p.name == sp.select(req).name:
            break
        assert isinstance(p.applies(req), str) and p.applies(req)


@pytest.mark.parametrize("i", [k for k, c in enumerate(CASES) if _expected(*c) != "general"])
@pytest.mark.parametrize("forced", ["fused_band", "ckernel", "torch"])
def test_every_forced_path_gives_the_general_paths_qtensor(i, forced):
    x, fmt, recipe = CASES[i]
    x = x * 7.0
    fresh = lambda: DelayedScaling() if isinstance(recipe, DelayedScaling) else recipe  # noqa: E731
    with fl.force_scaling_path("general"):
        r = fresh()
        ref = fl.quantize_tensor(x, fmt, r, state=r.new_state() if r.stateful else None)
    with fl.force_scaling_path(forced):
        r = fresh()
        got_path = fl.which_scaling_path(x, fmt, r)
        q = fl.quantize_tensor(x, fmt, r, state=r.new_state() if r.stateful else None)
    assert got_path in (forced, "general")
    _assert_same(q, ref)


def test_disabled_paths_fall_through_in_order():
    x, r = torch.randn(4, 64), MXScaling(scale_rounding="rceil")
    first = fl.which_scaling_path(x, E4, r)
    with fl.disable_scaling_paths("fused_band"):
        assert fl.which_scaling_path(x, E4, r) == ("ckernel" if KERNELS else "torch")
        with fl.disable_scaling_paths("ckernel"):
            assert fl.which_scaling_path(x, E4, r) == "torch"
            with fl.disable_scaling_paths("torch"):
                assert fl.which_scaling_path(x, E4, r) == "general"
    assert fl.which_scaling_path(x, E4, r) == first


def test_codec_switches_are_seen_by_the_scaling_table():
    x = torch.randn(4, 64)
    with fl.codec.disable_paths("ckernel"):
        assert fl.which_scaling_path(x, E4, MXScaling(scale_rounding="rceil")) == "torch"
    with fl.codec.disable_paths("torch_cast"):
        assert fl.which_scaling_path(x, E4, TensorScaling()) == "general"
    with fl.codec.force_path("bitlevel"):
        assert fl.which_scaling_path(x, E4, TensorScaling()) == "general"


def test_bad_names_and_the_general_path_are_refused():
    with pytest.raises(ValueError, match="unknown scaling path 'fast'"):
        with fl.force_scaling_path("fast"):
            pass
    with pytest.raises(ValueError, match="cannot be disabled"):
        with fl.disable_scaling_paths("general"):
            pass
    with pytest.raises(TypeError, match="Recipe object"):
        fl.which_scaling_path(torch.ones(2, 2), E4, "tensor")


def test_the_switches_hold_per_thread():
    x, seen = torch.randn(8, 128), {}
    with fl.force_scaling_path("general"):
        t = threading.Thread(target=lambda: seen.setdefault("other", fl.which_scaling_path(x, E4, TensorScaling())))
        t.start()
        t.join()
        assert fl.which_scaling_path(x, E4, TensorScaling()) == "general"
    assert seen["other"] == _expected(x, E4, TensorScaling())


def test_the_table_lists_every_path_once_general_last():
    headers, rows = fl.scaling_path_table()
    assert headers == ["path", "what it is"] and [r[0] for r in rows] == list(sp.path_names())
    assert rows[-1][0] == "general" and len(set(sp.path_names())) == len(rows)


LAYOUT_RECIPES = [TensorScaling(), AxisScaling(axis=1), BlockScaling(block=(1, 128)), BlockScaling(block=(128, 128)),
                  MXScaling(scale_rounding="rceil"), MXScaling(), PercentileScaling(), DelayedScaling()]


@pytest.mark.parametrize("ri", range(len(LAYOUT_RECIPES)))
@pytest.mark.parametrize("path", ["fused_band", "ckernel", "torch", "general"])
def test_every_path_lays_the_codes_out_as_the_input(ri, path):
    """Codes of a transposed matrix are a transposed view, of a contiguous one contiguous, whichever path cast them.

    The GEMM reads an operand's values in its codes' layout and a BLAS may sum in a layout-dependent
    order, so a path that laid codes out otherwise would change the product's bits (issue 18 §1).
    Swept over the scaling paths, recipes with per-tensor, per-row, 1x128, 128x128 and MX blocks,
    three shapes (one row, full and partial 128-blocks) and both layouts, and through a transpose.
    """
    from fp8lab.codec.backend import transposed_layout
    recipe = LAYOUT_RECIPES[ri]
    for shape in ((1, 256), (96, 256), (200, 384)):
        base = torch.randn(*shape, generator=torch.Generator().manual_seed(sum(shape)))
        for x in (base, base.t().contiguous().t()):
            fresh = DelayedScaling() if isinstance(recipe, DelayedScaling) else recipe
            with fl.force_scaling_path(path):
                q = fl.quantize_tensor(x, E4, fresh, state=fresh.new_state() if fresh.stateful else None)
            want_t = transposed_layout(x)
            assert transposed_layout(q.codes) == want_t and (want_t or q.codes.is_contiguous()), (path, shape)
            qt = q.transpose()
            assert transposed_layout(qt.codes) == (not want_t and shape[0] > 1), (path, shape)
            assert torch.equal(qt.values(), q.values().t())
            assert transposed_layout(qt.values()) == transposed_layout(qt.codes)
