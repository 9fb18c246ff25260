"""Fp8Linear as a Transformer Engine user would trust it (issue 20, section 2), over every preset.

Checkpoints resume bit for bit (the scaling state travels as torch's extra state); activation
checkpointing advances no history twice; ``convert`` keeps shared modules and tied parameters;
inf/NaN propagate as in ``nn.Linear``; empty batches work; ``torch.autocast`` gives nn.Linear's
dtypes; the weight is cast once per optimizer step under gradient accumulation.
"""

from __future__ import annotations

import copy
import io

import pytest

torch = pytest.importorskip("torch")

import fp8lab as fl  # noqa: E402
from fp8lab.nn import Fp8Linear, LinearRecipe, convert, weight_cache  # noqa: E402
from fp8lab.nn.gpt import GPT, GPTConfig  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402

PRESETS = LinearRecipe.names()
STATEFUL = [n for n in PRESETS if any(getattr(LinearRecipe.from_name(n), r) is not None
                                      and getattr(LinearRecipe.from_name(n), r).stateful
                                      for r in ("input", "weight", "grad_output"))]


def layers(model):
    return {n: m for n, m in model.named_modules() if isinstance(m, Fp8Linear)}


def histories(model):
    return {n: m.state.as_dict() for n, m in layers(model).items()}


def stats(model):
    return {n: copy.deepcopy(m.stats) for n, m in layers(model).items()}


def assert_same(a, b):
    """Bit for bit: tensors with torch.equal (NaN where NaN), everything else with ==."""
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert torch.equal(a.isnan(), b.isnan()) and torch.equal(torch.nan_to_num(a), torch.nan_to_num(b))
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert_same(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same(a[k], b[k])
    else:
        assert repr(a) == repr(b)


# ----- 1. checkpoints -------------------------------------------------------------------------------

CFG = GPTConfig(vocab_size=23, block_size=12, n_layer=2, n_head=2, n_embd=48)


def gpt(recipe, seed):
    torch.manual_seed(seed)
    m = GPT(CFG)
    convert(m, recipe)
    return m


def batch(step, seed=7):
    g = torch.Generator().manual_seed(seed * 1000 + step)
    idx = torch.randint(0, CFG.vocab_size, (3, CFG.block_size), generator=g)
    return idx, torch.roll(idx, -1, 1)


def train_steps(model, opt, steps):
    out = []
    for s in steps:
        opt.zero_grad(set_to_none=True)
        _, loss = model(*batch(s))
        loss.backward()
        out.append((loss.detach().clone(), [p.grad.clone() for p in model.parameters()], histories(model), stats(model)))
        opt.step()
    return out


def adamw(model):
    return torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)


@pytest.mark.slow  # twelve training steps of a GPT per preset, about 3-5 s each: make test runs it, test-fast not
@pytest.mark.parametrize("name", PRESETS)
def test_save_and_load_resumes_bit_for_bit(name):
    k, n = 3, 3
    ref = gpt(name, seed=1)
    opt = adamw(ref)
    whole = train_steps(ref, opt, range(k + n))

    first = gpt(name, seed=1)
    opt1 = adamw(first)
    train_steps(first, opt1, range(k))
    buf = io.BytesIO()
    torch.save({"model": first.state_dict(), "opt": opt1.state_dict()}, buf)
    buf.seek(0)
    ck = torch.load(buf, weights_only=True)  # plain data only: what a real checkpoint file holds

    fresh = gpt(name, seed=2)  # other weights, fresh histories: everything must come from the file
    opt2 = adamw(fresh)
    fresh.load_state_dict(ck["model"])
    opt2.load_state_dict(ck["opt"])
    assert histories(fresh) == histories(first)
    rest = train_steps(fresh, opt2, range(k, k + n))
    for got, want in zip(rest, whole[k:]):
        assert_same(got[:3], want[:3])
    assert_same([p.detach() for p in fresh.parameters()], [p.detach() for p in ref.parameters()])
    keys = {key for key in ck["model"] if key.endswith("_extra_state")}
    assert bool(keys) == (name in STATEFUL)
    if name in STATEFUL:
        assert {key.rsplit(".", 1)[0] for key in keys} == set(layers(fresh))
        assert all(h["steps"] == k + n for hs in histories(fresh).values() for h in hs.values() if h is not None)


@pytest.mark.parametrize("name", STATEFUL)
def test_a_checkpoint_without_extra_state_still_loads(name):
    src = gpt(name, seed=3)
    train_steps(src, adamw(src), range(2))
    old = {k: v for k, v in src.state_dict().items() if not k.endswith("_extra_state")}  # an older checkpoint
    dst = gpt(name, seed=4)
    before = histories(dst)
    res = dst.load_state_dict(old)
    assert not res.missing_keys and not res.unexpected_keys
    assert histories(dst) == before  # nothing to restore: the layer's own (fresh) histories stay
    assert_same(dst.state_dict()["h.0.mlp.c_fc.weight"], src.state_dict()["h.0.mlp.c_fc.weight"])
    lin = torch.nn.Linear(8, 4)
    f = Fp8Linear(8, 4, recipe=name)
    assert not f.load_state_dict(lin.state_dict()).missing_keys  # nn.Linear's checkpoint loads too


def test_extra_state_of_another_recipe_is_refused():
    a = Fp8Linear(8, 4, recipe="fp8-tensorwise-delayed")
    a(torch.randn(5, 8)).sum().backward()
    with pytest.raises(ValueError, match="keeps none"):
        Fp8Linear(8, 4, recipe="fp8-tensorwise-current").load_state_dict(a.state_dict())
    short = LinearRecipe("short", **{r: fl.nn.TensorQuant(getattr(a.recipe, r).format, fl.DelayedScaling(history_len=4))
                                     for r in ("input", "weight", "grad_output")})
    with pytest.raises(ValueError, match="history keeps 1024"):
        Fp8Linear(8, 4, recipe=short).load_state_dict(a.state_dict())


# ----- 2. activation checkpointing --------------------------------------------------------------------

class Net(torch.nn.Module):
    """Pre-norm MLP blocks with residuals, each optionally checkpointed (non-reentrant); ``share`` repeats block 0."""

    def __init__(self, d=40, n=3, share=False):
        super().__init__()
        blocks = [torch.nn.Sequential(torch.nn.LayerNorm(d), torch.nn.Linear(d, 2 * d), torch.nn.GELU(),
                                      torch.nn.Linear(2 * d, d)) for _ in range(n)]
        if share:
            blocks[2] = blocks[0]
        self.blocks = torch.nn.ModuleList(blocks)
        self.head = torch.nn.Linear(d, 5)
        self.ckpt = False

    def forward(self, x):
        for b in self.blocks:
            x = x + (checkpoint(b, x, use_reentrant=False) if self.ckpt else b(x))
        return self.head(x)


def run_net(name, ckpt, share, steps=3, seed=5):
    torch.manual_seed(seed)
    net = Net(share=share)
    convert(net, name)
    net.ckpt = ckpt
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    out = []
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = torch.randn(2, 9, 40, generator=g)
        opt.zero_grad(set_to_none=True)
        y = net(x)
        y.square().mean().backward()
        out.append((y.detach(), [p.grad.clone() for p in net.parameters()], histories(net), stats(net)))
        opt.step()
    return out, net


@pytest.mark.parametrize("share", [False, True], ids=["blocks", "shared-block"])
@pytest.mark.parametrize("name", PRESETS)
def test_checkpointed_blocks_give_the_same_bits_and_histories(name, share):
    plain, _ = run_net(name, ckpt=False, share=share)
    ckpt, net = run_net(name, ckpt=True, share=share)
    assert_same(ckpt, plain)
    if name in STATEFUL:
        for lname, m in layers(net).items():
            calls = 2 if share and lname.startswith("blocks.0.") else 1
            assert m.state.input.steps == m.state.weight.steps == m.state.grad_output.steps == 3 * calls
        assert all(not m._pending for m in layers(net).values())  # no snapshot left waiting


@pytest.mark.parametrize("name", STATEFUL)
def test_reentrant_checkpointing_also_advances_once(name):
    torch.manual_seed(0)
    lin = Fp8Linear(16, 8, recipe=name)
    ref = copy.deepcopy(lin)
    x = torch.randn(4, 16, requires_grad=True)
    checkpoint(lin, x, use_reentrant=True).sum().backward()
    ref(x).sum().backward()
    assert lin.state.as_dict() == ref.state.as_dict() and lin.state.input.steps == 1
    assert torch.equal(lin.weight.grad, ref.weight.grad)


# ----- 3. convert ---------------------------------------------------------------------------------------

class Shared(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(11, 12)
        self.a = torch.nn.Linear(12, 12)
        self.b = self.a  # one module under two names
        self.inner = torch.nn.Sequential(torch.nn.Linear(12, 12), torch.nn.Tanh())
        self.again = self.inner  # a shared container: its Linear under two paths
        self.c = torch.nn.Linear(12, 12)
        self.d = torch.nn.Linear(12, 12)
        self.d.weight = self.c.weight  # two modules, one tied weight
        self.lm_head = torch.nn.Linear(12, 11, bias=False)
        self.lm_head.weight = self.emb.weight

    def forward(self, idx):
        x = self.emb(idx)
        x = self.b(self.a(x))
        x = self.again(self.inner(x))
        return self.lm_head(self.d(self.c(x)))


@pytest.mark.parametrize("name", PRESETS)
def test_convert_keeps_shared_modules_and_tied_parameters(name):
    torch.manual_seed(0)
    m = Shared()
    n_params = len(list(m.parameters()))
    rep = convert(m, name)
    assert set(rep.swapped) == {"a", "b", "inner.0", "again.0", "c", "d"}
    assert m.a is m.b and isinstance(m.a, Fp8Linear) and m.inner[0] is m.again[0] and m.inner is m.again
    assert m.c is not m.d and m.c.weight is m.d.weight and m.lm_head.weight is m.emb.weight
    assert len(list(m.parameters())) == n_params  # no parameter duplicated
    assert "lm_head" in rep.left and "emb" in rep.left
    m(torch.arange(7)).sum().backward()
    assert m.c.weight.grad is m.d.weight.grad


def test_a_shared_linear_skipped_under_one_name_stays_under_all():
    m = Shared()
    rep = convert(m, "mxfp8", skip=("b",))
    assert type(m.a) is torch.nn.Linear and m.a is m.b
    assert rep.left["b"].startswith("skipped") and "shared with b" in rep.left["a"]
    assert "a" not in rep.swapped and "b" not in rep.swapped


# ----- 4. non-finite values and empty batches ------------------------------------------------------------

def grads(layer, x, dy):
    x = x.clone().requires_grad_()
    layer.weight.grad = None
    y = layer(x)
    y.backward(dy)
    return y.detach(), x.grad, layer.weight.grad


@pytest.mark.parametrize("where", ["x", "dy", "w"])
@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan")], ids=["inf", "-inf", "nan"])
@pytest.mark.parametrize("name", PRESETS)
def test_non_finite_values_propagate_as_in_nn_linear(name, value, where):
    torch.manual_seed(11)
    x, dy = torch.randn(37, 150), torch.randn(37, 70) * 1e-3
    ref = torch.nn.Linear(150, 70)
    lay = Fp8Linear(150, 70, recipe=name)
    lay.load_state_dict(ref.state_dict())
    clean = grads(lay, x, dy)
    assert all(bool(t.isfinite().all()) for t in clean)
    if where == "x":
        x[5, 17] = value
    elif where == "dy":
        dy[30, 3] = value
    else:
        with torch.no_grad():
            ref.weight[4, 9] = value
            lay.weight[4, 9] = value
    want, got = grads(ref, x, dy), grads(lay, x, dy)
    assert any(bool((~w.isfinite()).any()) for w in want)
    for w, g in zip(want, got):
        bad = ~w.isfinite()
        assert (~g.isfinite())[bad].all()  # every element nn.Linear makes non-finite is non-finite here
        assert bool(bad.any()) == bool((~g.isfinite()).any())  # and a tensor nn.Linear keeps finite stays finite


@pytest.mark.parametrize("shape", [(0, 24), (3, 0, 24)], ids=["0-rows", "0-tokens"])
@pytest.mark.parametrize("name", PRESETS)
def test_empty_batches(name, shape):
    lay = Fp8Linear(24, 10, recipe=name)
    before = lay.state.as_dict()
    x = torch.randn(*shape, requires_grad=True)
    y = lay(x)
    assert y.shape == (*shape[:-1], 10) and y.dtype == torch.float32
    y.sum().backward()
    assert x.grad.shape == x.shape
    assert torch.equal(lay.weight.grad, torch.zeros(10, 24)) and torch.equal(lay.bias.grad, torch.zeros(10))
    assert lay.state.as_dict() == before
    lay.eval()
    with torch.no_grad():
        assert lay(torch.randn(*shape)).shape == y.shape


# ----- 5. autocast -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("name", PRESETS)
def test_autocast_gives_nn_linears_dtype_and_the_recipes_values(name, dtype):
    torch.manual_seed(2)
    ref = torch.nn.Linear(40, 24)
    lay = Fp8Linear(40, 24, recipe=name)
    lay.load_state_dict(ref.state_dict())
    twin = copy.deepcopy(lay)
    x32 = torch.randn(6, 7, 40)
    for x in (x32, x32.to(dtype)):  # FP32 activations and the autocast dtype's
        xa = x.clone().requires_grad_()
        with torch.autocast("cpu", dtype=dtype):
            want_dtype = ref(x).dtype
            y = lay(xa)
        assert y.dtype == want_dtype == dtype
        y.float().sum().backward()
        assert xa.grad.dtype == x.dtype and lay.weight.grad.dtype == torch.float32
        xt = x.float().requires_grad_()
        if name == "fp32":  # the all-FP32 recipe is nn.Linear itself, autocast included
            with torch.autocast("cpu", dtype=dtype):
                yt = ref(x)
        else:
            yt = twin(xt).to(dtype)
        assert_same(y.detach(), yt.detach())
        if name != "fp32":
            yt.float().sum().backward()
            assert_same(lay.weight.grad, twin.weight.grad)
            assert lay.state.as_dict() == twin.state.as_dict()
        lay.weight.grad = twin.weight.grad = None


def test_non_float32_input_outside_autocast_is_refused():
    with pytest.raises(TypeError, match="float32"):
        Fp8Linear(4, 2, recipe="mxfp8")(torch.ones(3, 4, dtype=torch.bfloat16))


# ----- 6. one weight cast per optimizer step ------------------------------------------------------------

def count_weight_casts(monkeypatch):
    counts = {"weight": 0}
    orig = Fp8Linear._quantize

    def counting(self, role, x, **kw):
        if role == "weight":
            counts["weight"] += 1
        return orig(self, role, x, **kw)

    monkeypatch.setattr(Fp8Linear, "_quantize", counting)
    return counts


def accumulate(layer, xs, dys, flags):
    layer.weight.grad = None
    ys, dxs = [], []
    for x, dy, f in zip(xs, dys, flags):
        x = x.clone().requires_grad_()
        y = layer(x, is_first_microbatch=f) if f != "ctx" else layer(x)
        y.backward(dy)
        ys.append(y.detach())
        dxs.append(x.grad)
    return ys, dxs, layer.weight.grad.clone()


@pytest.mark.parametrize("name", [n for n in PRESETS if n != "fp32"])
def test_the_weight_is_cast_once_per_step_under_gradient_accumulation(name, monkeypatch):
    torch.manual_seed(4)
    base = Fp8Linear(72, 40, recipe=name)
    g = torch.Generator().manual_seed(4)
    steps = [([torch.randn(9, 72, generator=g) for _ in range(3)], [torch.randn(9, 40, generator=g) * 1e-2 for _ in range(3)])
             for _ in range(2)]
    counts = count_weight_casts(monkeypatch)
    plain, cached, ctx = copy.deepcopy(base), copy.deepcopy(base), copy.deepcopy(base)
    wstate = base.state.weight is not None
    per_cast = None
    for xs, dys in steps:
        counts["weight"] = 0
        want = [], [], None
        plain.weight.grad = None
        for i, (x, dy) in enumerate(zip(xs, dys)):  # re-quantizing the weight every micro-batch
            if wstate:  # a stateful weight re-cast with the first micro-batch's history (it advances once per step)
                if i == 0:
                    pre = copy.deepcopy(plain.state.weight)
                else:
                    plain.state.weight = copy.deepcopy(pre)
            xx = x.clone().requires_grad_()
            y = plain(xx)
            y.backward(dy)
            want[0].append(y.detach())
            want[1].append(xx.grad)
        want = (want[0], want[1], plain.weight.grad.clone())
        uncached = counts["weight"]
        counts["weight"] = 0
        got = accumulate(cached, xs, dys, [True, False, False])
        once = counts["weight"]
        counts["weight"] = 0
        with weight_cache(ctx):
            got_ctx = accumulate(ctx, xs, dys, ["ctx"] * 3)
        assert counts["weight"] == once
        per_cast = per_cast or once
        assert uncached == 3 * once and once in (1, 2)  # 2: dgrad reads the weight in other blocks (a second cast)
        assert_same(got, want)
        assert_same(got_ctx, want)
        assert cached.state.as_dict() == plain.state.as_dict() == ctx.state.as_dict()
        for m in (plain, cached, ctx):
            with torch.no_grad():
                m.weight.sub_(1e-2 * m.weight.grad)  # the optimizer step: the next step casts anew
    if wstate:
        assert cached.state.weight.steps == 2 and cached.state.input.steps == 6


def test_a_stale_weight_cast_is_refused():
    lin = Fp8Linear(8, 4, recipe="fp8-rowwise")
    with pytest.raises(ValueError, match="none was kept"):
        lin(torch.randn(2, 8), is_first_microbatch=False)
    lin(torch.randn(2, 8), is_first_microbatch=True).sum().backward()
    with torch.no_grad():
        lin.weight.add_(1.0)
    with pytest.raises(ValueError, match="changed since"):
        lin(torch.randn(2, 8), is_first_microbatch=False)
    with weight_cache(lin):  # inside the context a changed weight is simply cast again
        lin(torch.randn(2, 8))
        assert lin._wcache["version"] == lin.weight._version


# ----- 7. FP8 saved activations ---------------------------------------------------------------------------

def saved_bytes(layer, x):
    """Bytes the layer's graph saves for backward, parameters left out, as saved_tensors_hooks see them."""
    seen = []
    params = {p.data_ptr() for p in layer.parameters()}

    def pack(t):
        if t.data_ptr() not in params:
            seen.append(t.numel() * t.element_size())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = layer(x)
    return y, sum(seen)


@pytest.mark.parametrize("m", [37, 256], ids=["partial-blocks", "whole-blocks"])
@pytest.mark.parametrize("name", PRESETS)
def test_fp8_saved_inputs_keep_the_bits_and_the_bytes_memory_counts(name, m):
    from fp8lab.train.memory import saved_input_bytes

    torch.manual_seed(6)
    k, n = 160, 48
    fp8 = Fp8Linear(k, n, recipe=name)  # FP8 saved inputs are the default
    assert fp8.save_fp8 and Fp8Linear.from_linear(torch.nn.Linear(k, n), name).save_fp8
    plain = copy.deepcopy(fp8)
    plain.save_fp8 = False  # the FP32 input saved, as before
    g = torch.Generator().manual_seed(m)
    for _ in range(3):  # a few steps, so that delayed histories are in play
        x, dy = torch.randn(m, k, generator=g), torch.randn(m, n, generator=g) * 1e-3
        want = grads(plain, x, dy)
        xx = x.clone().requires_grad_()
        fp8.weight.grad = None
        y, nbytes = saved_bytes(fp8, xx)
        y.backward(dy)
        assert_same((y.detach(), xx.grad, fp8.weight.grad), want)
        assert plain.state.as_dict() == fp8.state.as_dict() and plain.stats == fp8.stats
        assert nbytes == saved_input_bytes(name, m, k)
        if name != "fp32":
            assert nbytes < m * k * 4 or LinearRecipe.from_name(name).input is None


@pytest.mark.parametrize("name", ["fp8-tensorwise-current", "mxfp8", "bf16"])
def test_fp8_saved_inputs_still_propagate_non_finite_values(name):
    torch.manual_seed(8)
    x, dy = torch.randn(20, 64), torch.randn(20, 16)
    for where in ("x", "dy"):
        xs, dys = x.clone(), dy.clone()
        (xs if where == "x" else dys)[3, 4] = float("inf")
        ref = torch.nn.Linear(64, 16)
        lay = Fp8Linear(64, 16, recipe=name, save_fp8=True)
        lay.load_state_dict(ref.state_dict())
        for w, got in zip(grads(ref, xs, dys), grads(lay, xs, dys)):
            assert (~got.isfinite())[~w.isfinite()].all()
