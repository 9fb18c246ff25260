"""LossScaler against the real ``torch.amp.GradScaler("cpu")`` driven by the same gradient sequence."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fp8lab.scaling import LossScaler, has_inf_or_nan


def gradscaler_trajectory(bad_steps: set[int], steps: int, **kw) -> tuple[list[float], list[bool], list[float]]:
    """Train one parameter with SGD under GradScaler; poison the gradient with inf/NaN on ``bad_steps``."""
    p = torch.nn.Parameter(torch.ones(4))
    opt = torch.optim.SGD([p], lr=0.01)
    scaler = torch.amp.GradScaler("cpu", **kw)
    scales, stepped, unscaled = [], [], []
    for i in range(steps):
        opt.zero_grad()
        before = p.detach().clone()
        loss = (p * torch.arange(1.0, 5.0)).sum() * 1e-3
        scaler.scale(loss).backward()
        if i in bad_steps:
            p.grad[i % 4] = float("inf") if i % 2 else float("nan")
        scaler.unscale_(opt)
        unscaled.append(float(p.grad[0]))
        scaler.step(opt)
        scaler.update()
        stepped.append(not torch.equal(before, p.detach()))
        scales.append(scaler.get_scale())
    return scales, stepped, unscaled


def lossscaler_trajectory(bad_steps: set[int], steps: int, **kw) -> tuple[list[float], list[bool], list[float]]:
    """The same sequence with LossScaler on numpy gradients (d loss / d p = scale * [1, 2, 3, 4] * 1e-3)."""
    s = LossScaler(**kw)
    scales, stepped, unscaled = [], [], []
    for i in range(steps):
        scaled_loss_grad = s.scale_loss(np.float32(1e-3))  # backward of (p * c).sum() * loss_scale
        g = (np.arange(1.0, 5.0, dtype=np.float32) * np.float32(scaled_loss_grad)).astype(np.float32)
        if i in bad_steps:
            g[i % 4] = np.inf if i % 2 else np.nan
        found = s.unscale_([g])
        unscaled.append(float(g[0]))
        stepped.append(s.update(found))
        scales.append(s.scale)
    return scales, stepped, unscaled


@pytest.mark.parametrize("kw,bad", [
    (dict(init_scale=2.0**16, growth_interval=3), {2, 3, 9, 10, 11, 20}),
    (dict(init_scale=1024.0, growth_factor=1.7, backoff_factor=0.3, growth_interval=2), {0, 5, 6, 13}),
    (dict(init_scale=3.0e38, growth_factor=2.0, growth_interval=1), {4}),  # growth would overflow float32: kept
    (dict(), {1, 7}),  # GradScaler's defaults
])
def test_matches_torch_gradscaler(kw, bad):
    steps = 25
    ref_scales, ref_stepped, ref_unscaled = gradscaler_trajectory(bad, steps, **kw)
    scales, stepped, unscaled = lossscaler_trajectory(bad, steps, **kw)
    assert scales == ref_scales
    assert stepped == ref_stepped == [i not in bad for i in range(steps)]
    np.testing.assert_allclose(unscaled, ref_unscaled, rtol=1e-6)


def test_trajectory_by_hand():
    s = LossScaler(init_scale=8.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2)
    seq = [False, False, False, True, False, False, True, True]
    got = [(s.update(f), s.scale, s.growth_tracker) for f in seq]
    assert got == [(True, 8.0, 1), (True, 16.0, 0), (True, 16.0, 1), (False, 8.0, 0),
                   (True, 8.0, 1), (True, 16.0, 0), (False, 8.0, 0), (False, 4.0, 0)]
    assert s.skipped_steps == 3


def test_helpers_numpy_and_torch():
    s = LossScaler(init_scale=512.0)
    assert s.scale_loss(2.0) == 1024.0
    t = s.scale_loss(torch.tensor(2.0))
    assert isinstance(t, torch.Tensor) and t.item() == 1024.0
    grads = [torch.full((3,), 1024.0), None, np.full(2, 256.0, np.float32)]
    assert s.unscale_(grads) is False
    assert grads[0].tolist() == [2.0] * 3 and grads[2].tolist() == [0.5, 0.5]
    assert has_inf_or_nan([torch.tensor([1.0, float("nan")])]) and not has_inf_or_nan(grads)
    assert s.step([np.array([np.inf], np.float32)]) is False and s.scale == 256.0
    with pytest.raises(TypeError, match="in place"):
        s.unscale_([[1.0, 2.0]])
    state = s.state_dict()
    s2 = LossScaler()
    s2.load_state_dict(state)
    assert s2.scale == 256.0 and s2.growth_tracker == 0
    ref = torch.amp.GradScaler("cpu", init_scale=4.0)
    s3 = LossScaler()
    s3.load_state_dict(ref.state_dict())
    assert s3.scale == 4.0


@pytest.mark.parametrize("kw", [dict(growth_factor=1.0), dict(backoff_factor=1.0), dict(backoff_factor=0.0),
                                dict(growth_interval=0), dict(init_scale=0.0), dict(init_scale=float("inf"))])
def test_bad_settings(kw):
    with pytest.raises(ValueError):
        LossScaler(**kw)
