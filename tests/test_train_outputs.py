"""fp8lab train: nothing a run produced is lost (issue 17, section 2).

Each test covers a class of failure, not one example: bad output paths refused before the first
step; runs that diverge in several ways still report and write; strict JSON always; Ctrl+C keeps
the steps done without replacing a complete result; writes are atomic.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
import matplotlib.backend_bases  # noqa: E402,F401  (before any drop to nobody: the checks of --plot read it)

torch = pytest.importorskip("torch")

import fp8lab.nn.gpt as gpt  # noqa: E402
import fp8lab.train.cli as tcli  # noqa: E402
import fp8lab.train.loop as loop  # noqa: E402
from fp8lab.train import TrainConfig  # noqa: E402
from fp8lab.train.cli import main as train_main  # noqa: E402
from fp8lab.train.loop import TrainingInterrupted, train  # noqa: E402
from fp8lab.train.output import atomic_write, check_output_path, finite_json, partial_path  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TINY = dict(eval_iters=1, n_layer=1, n_embd=32, n_head=2, block_size=16, batch_size=2)
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0  # root writes anywhere: permission cases then run as nobody
NOBODY = 65534


def strict_loads(text: str):
    """json.loads that refuses NaN, Infinity and -Infinity (what JavaScript, jq and Go refuse)."""
    def refuse(name):
        raise ValueError(f"non-standard JSON constant {name}")
    return json.loads(text, parse_constant=refuse)


def _tiny_train(monkeypatch, **overrides):
    """Make the CLI train the tiny model (the CLI has no model-size options): patch loop.train."""
    real = loop.train

    def tiny(recipe, cfg, **kw):
        return real(recipe, dataclasses.replace(cfg, **TINY, **overrides), **kw)

    monkeypatch.setattr(loop, "train", tiny)


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ----- bad --json / --plot paths: refused before the first step -------------------------------------
def _make(kind: str, base: Path, option: str) -> str:
    """A path of ``kind`` under ``base`` to which no ``option`` result can be written (the name's extension fits it)."""
    ext = ".png" if option == "--plot" else ".json"
    (base / "f.txt").write_text("a file")
    if kind == "missing-folder":
        return str(base / "nope" / f"run{ext}")
    if kind == "missing-folders":
        return str(base / "a" / "b" / f"run{ext}")
    if kind == "is-a-folder":
        return str(base)
    if kind == "trailing-slash":
        return str(base / "new") + os.sep
    if kind == "parent-is-a-file":
        return str(base / "f.txt" / f"run{ext}")
    if kind == "ancestor-is-a-file":
        return str(base / "f.txt" / "sub" / f"run{ext}")
    if kind == "device":
        return os.devnull
    if kind == "name-too-long":
        return str(base / ("x" * 300 + ext))
    if kind == "empty":
        return ""
    if kind == "read-only-folder":
        (base / "ro").mkdir()
        (base / "ro").chmod(0o555)
        return str(base / "ro" / f"run{ext}")
    if kind == "read-only-file":
        old = base / f"old{ext}"
        old.write_text("{}")
        old.chmod(0o444)
        return str(old)
    raise AssertionError(kind)


PERMISSION = ["read-only-folder", "read-only-file"]
KINDS = ["missing-folder", "missing-folders", "is-a-folder", "trailing-slash", "parent-is-a-file",
         "ancestor-is-a-file", "device", "name-too-long", "empty", *PERMISSION]


@contextlib.contextmanager
def _unprivileged(kind: str):
    """A folder for the case, and for a permission case under root, the effective ids of nobody meanwhile.

    Root writes anywhere, so its permission cases drop to nobody (restored after; the saved ids stay root's).
    """
    drop = ROOT and kind in PERMISSION
    base = Path(tempfile.mkdtemp(prefix="fp8lab-outputs-"))
    base.chmod(0o777)  # nobody may write here: only the case's own permission bits refuse
    groups = os.getgroups() if drop else []
    try:
        if drop:
            os.setgroups([])
            os.setegid(NOBODY)
            os.seteuid(NOBODY)
        yield base
    finally:
        if drop:
            os.seteuid(0)
            os.setegid(0)
            os.setgroups(groups)
        for p in base.rglob("*"):
            if p.is_dir():
                p.chmod(0o755)
        shutil.rmtree(base)


@pytest.mark.parametrize("option", ["--json", "--plot"])
@pytest.mark.parametrize("kind", KINDS)
def test_bad_output_paths_are_refused_before_training(kind, option, monkeypatch, capsys):
    monkeypatch.setattr(loop, "train", lambda *a, **k: pytest.fail("trained despite a bad output path"))
    with _unprivileged(kind) as base:
        path = _make(kind, base, option)
        before = sorted(str(p) for p in base.rglob("*"))
        assert train_main(["--steps", "1", option, path]) == 2
        after = sorted(str(p) for p in base.rglob("*"))
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"fp8lab train: error: {option}")
    assert after == before  # no probe or temporary file left behind


@pytest.mark.parametrize("case", ["unknown-image-format", "json-and-plot-same-file"])
def test_plot_specific_refusals(case, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(loop, "train", lambda *a, **k: pytest.fail("trained despite a bad output path"))
    args = (["--plot", str(tmp_path / "run.xyz")] if case == "unknown-image-format"
            else ["--json", str(tmp_path / "r.png"), "--plot", str(tmp_path / "." / "r.png")])
    assert train_main(["--steps", "1", *args]) == 2
    assert "--plot" in _one_line(capsys.readouterr().err) and not list(tmp_path.iterdir())


# under root the child drops to nobody once it has loaded what it reads from the interpreter's files (root's alone here)
CHILD = textwrap.dedent("""
    import os, sys
    import matplotlib.backend_bases
    from fp8lab.cli import build_parser, main
    build_parser()
    if os.environ.get("AS_NOBODY"):
        os.setgroups([]); os.setegid(65534); os.seteuid(65534)
    rc = main(["train", *sys.argv[1:]])
    print("torch imported" if "torch" in sys.modules else "torch not imported")
    sys.exit(rc)
""")


def test_bad_paths_in_a_subprocess():
    """The real CLI process for every kind: exit 2, one line on stderr, no traceback, torch never imported."""
    for i, kind in enumerate(KINDS):
        option = ("--json", "--plot")[i % 2]
        with _unprivileged("not a permission case") as base:
            path = _make(kind, base, option)
            env = {**os.environ, "AS_NOBODY": "1" if ROOT and kind in PERMISSION else ""}
            r = subprocess.run([sys.executable, "-c", CHILD, "--steps", "1", option, path], cwd=REPO, env=env,
                               capture_output=True, text=True, timeout=120)
        assert r.returncode == 2, (kind, r.stderr)
        assert _one_line(r.stderr).startswith(f"fp8lab train: error: {option}"), kind
        assert r.stdout.strip() == "torch not imported", kind


def test_check_output_path_accepts_what_can_be_written(tmp_path):
    (tmp_path / "old.json").write_text("{}")
    for p in (tmp_path / "new.json", tmp_path / "old.json", tmp_path / "noext"):
        assert check_output_path(p, "--json") == p
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json"]


# ----- divergence: a non-finite loss anywhere, skipped by the loss scaler or not ---------------------
def _nan_loss_from(k: int, value: float = math.nan):
    """Patch GPT.forward so that training losses from step k on are ``value`` (validation untouched)."""
    real, calls = gpt.GPT.forward, [0]

    def forward(self, idx, targets=None):
        logits, loss = real(self, idx, targets)
        if loss is not None and torch.is_grad_enabled():
            calls[0] += 1
            if calls[0] >= k:
                loss = loss * value
        return logits, loss
    return forward


HUGE = dict(lr=1e30, min_lr=1e30, warmup_steps=0)
# (recipe, config overrides, forward patch, expected diverged_at, whether validation ran)
WAYS = {
    "fp32-huge-lr-before-validation": ("fp32", HUGE, None, 2, False),
    "bf16-inf-loss-first-step": ("bf16", {}, (1, math.inf), 1, False),
    "fp16-loss-scaled-nan-every-step": ("fp16", {}, (1, math.nan), 1, True),
    "fp16-loss-scaled-huge-lr": ("fp16", HUGE, None, 2, True),
    "fp8-loss-nan-from-step-3": ("fp8-tensorwise-delayed", {}, (3, math.nan), 3, False),
    "validation-loss-nan-only": ("fp32", {}, "val", 3, True),
}


def _diverge(monkeypatch, way):
    recipe, over, patch, at, validated = WAYS[way]
    if patch == "val":
        monkeypatch.setattr(loop, "_estimate_loss", lambda *a: {"train": 4.0, "val": math.nan})
    elif patch is not None:
        monkeypatch.setattr(gpt.GPT, "forward", _nan_loss_from(*patch))
    return recipe, over, at, validated


@pytest.mark.parametrize("way", WAYS)
def test_every_way_of_diverging_is_reported_and_written(way, tmp_path, monkeypatch, capsys):
    recipe, over, at, validated = _diverge(monkeypatch, way)
    _tiny_train(monkeypatch, **over)
    js, png = tmp_path / "run.json", tmp_path / "run.png"
    rc = train_main(["--recipe", recipe, "--steps", "3", "--eval-iters", "1", "--quiet", "--json", str(js), "--plot", str(png)])
    out = capsys.readouterr()
    assert rc == 0 and "Traceback" not in out.err
    summary = out.out.strip().splitlines()
    assert len(summary) == 1 and f"(DIVERGED: non-finite loss at step {at})" in summary[0]
    r = strict_loads(js.read_text())
    assert r["diverged"] is True and r["diverged_at"] == at and r["partial"] is False
    assert bool(r["val"]) == validated
    if not validated:  # it diverged before its first validation: no number, and a summary that says so
        assert r["final_val_loss"] is None and "final val loss n/a" in summary[0]
    flagged = r["nonfinite_as_null"]
    assert flagged and ("/loss" in flagged) == (way != "validation-loss-nan-only")
    assert all(f in ("/loss", "/final_val_loss") or f.startswith(("/val/", "/layers/")) for f in flagged), flagged
    if recipe == "fp16":  # the loss scaler skipped the non-finite steps; the run is still a diverged one
        assert r["skipped_steps"] >= 2 and "skipped" in summary[0]
    assert png.stat().st_size > 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json", "run.png"]  # no temporary files


def test_a_finite_run_is_not_diverged():
    r = train("fp16", TrainConfig(steps=2, **TINY))
    assert r["diverged"] is False and r["diverged_at"] is None and r["partial"] is False and r["steps_done"] == 2
    assert strict_loads(finite_json(r))["nonfinite_as_null"] == []


@pytest.mark.parametrize("empty", ["final_val_loss", "step_time_s", "underflow", "wall_s", "everything"])
def test_the_summary_is_none_safe(empty):
    res = {"final_val_loss": 1.5, "step_time_s": [0.01], "underflow": [0.0], "overflow": [0], "wall_s": 1.0,
           "loss": [math.nan], "skipped_steps": 1, "diverged": True, "diverged_at": None}
    for k in (res if empty == "everything" else [empty]):
        if k in ("final_val_loss", "wall_s", "step_time_s", "underflow", "diverged_at"):
            res[k] = [] if k in ("step_time_s", "underflow") else None
    line = tcli._summary("x", res)
    assert "n/a" in line and "DIVERGED" in line and "\n" not in line


# ----- strict JSON whatever the numbers ----------------------------------------------------------
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, np.float32("nan"), np.float64("inf"), torch.tensor(math.nan)])
def test_json_is_strict_for_every_non_finite_value(bad):
    doc = {"a": bad, "loss": [1.0, bad, 2.0], "val": [{"step": 1, "val": 1.0}, {"step": 2, "val": bad}],
           "layers": {"h.0/x": {"amax": {"input": [[bad]]}}}, "ok": np.float32(0.5), "n": 3, "s": "NaN"}
    r = strict_loads(finite_json(doc))
    assert r["a"] is None and r["loss"] == [1.0, None, 2.0] and r["val"][1]["val"] is None and r["ok"] == 0.5
    assert r["s"] == "NaN" and r["n"] == 3
    assert r["nonfinite_as_null"] == ["/a", "/layers/h.0~1x/amax/input/0", "/loss", "/val/1/val"]


def test_compare_json_is_strict_and_names_the_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(gpt.GPT, "forward", _nan_loss_from(3))  # the second run's first training loss
    _tiny_train(monkeypatch)
    js = tmp_path / "c.json"
    assert train_main(["--compare", "fp32,bf16", "--steps", "2", "--eval-iters", "1", "--quiet", "--json", str(js)]) == 0
    r = strict_loads(js.read_text())
    assert [x["diverged"] for x in r["runs"]] == [False, True] and "/runs/1/loss" in r["nonfinite_as_null"]
    assert all(f.startswith("/runs/1/") for f in r["nonfinite_as_null"])
    assert capsys.readouterr().out.count("DIVERGED") == 1


# ----- Ctrl+C: the steps done, atomically, never over a complete result --------------------------------
@pytest.mark.parametrize("where", ["progress", "inside-step", "validation"])
@pytest.mark.parametrize("k", [1, 3])
def test_interrupt_keeps_the_steps_done(where, k, monkeypatch):
    cfg = TrainConfig(steps=4, eval_interval=1, **TINY)
    progress = None
    if where == "progress":
        def progress(step, loss, dt):
            if step == k:
                raise KeyboardInterrupt
    elif where == "inside-step":
        real = loop.Run.step
        monkeypatch.setattr(loop.Run, "step", lambda self, i: (_ for _ in ()).throw(KeyboardInterrupt) if i + 1 == k else real(self, i))
    else:
        real_eval = loop._estimate_loss
        calls = [0]

        def estimate(*a):
            calls[0] += 1
            if calls[0] == k:
                raise KeyboardInterrupt
            return real_eval(*a)
        monkeypatch.setattr(loop, "_estimate_loss", estimate)
    with pytest.raises(TrainingInterrupted) as info:
        train("fp8-tensorwise-delayed", cfg, progress=progress)
    r = info.value.result
    done = k - 1 if where == "inside-step" else k
    assert isinstance(info.value, KeyboardInterrupt) and r["partial"] is True and r["steps_done"] == done
    assert len(r["loss"]) == len(r["step_time_s"]) == len(r["underflow"]) == len(r["overflow"]) == done
    assert all(len(v) == done for lay in r["layers"].values() for key in ("amax", "scale") for v in lay[key].values())
    assert len(r["val"]) == (done if where == "inside-step" else done - 1)  # step k's validation never ran
    strict_loads(finite_json(r))


def _interrupt_at(monkeypatch, k: int, recipe_index: int = 0):
    """Patch Run.step so the ``recipe_index``-th run is interrupted in its step k."""
    real, runs = loop.Run.step, []

    def step(self, i):
        if i == 0:
            runs.append(self)
        if len(runs) - 1 == recipe_index and i + 1 == k:
            raise KeyboardInterrupt
        return real(self, i)
    monkeypatch.setattr(loop.Run, "step", step)


@pytest.mark.parametrize("existing", ["none", "complete", "partial", "not-json"])
def test_cli_interrupt_writes_partial_without_clobbering(existing, tmp_path, monkeypatch, capsys):
    _tiny_train(monkeypatch)
    _interrupt_at(monkeypatch, 3)
    js = tmp_path / "run.json"
    old = {"none": None, "complete": '{"loss": [1.0], "partial": false}', "partial": '{"partial": true}',
           "not-json": "my notes"}[existing]
    if old is not None:
        js.write_text(old)
    rc = train_main(["--steps", "5", "--eval-iters", "1", "--quiet", "--json", str(js)])
    line = _one_line(capsys.readouterr().err)
    assert rc == 130 and "interrupted (fp32 at step 2/5)" in line
    target = partial_path(js) if existing in ("complete", "not-json") else js
    assert str(target) in line
    r = strict_loads(target.read_text())
    assert r["partial"] is True and r["steps_done"] == 2 and len(r["loss"]) == 2
    if target != js:
        assert js.read_text() == old and "holds an earlier result" in line
    names = {"run.json", *([target.name] if target != js else [])}
    assert {p.name for p in tmp_path.iterdir()} == names  # no temporary files


def test_cli_interrupt_in_a_comparison_keeps_the_finished_runs(tmp_path, monkeypatch, capsys):
    _tiny_train(monkeypatch)
    _interrupt_at(monkeypatch, 2, recipe_index=1)
    js = tmp_path / "c.json"
    assert train_main(["--compare", "fp32,bf16,fp16", "--steps", "3", "--quiet", "--eval-iters", "1", "--json", str(js)]) == 130
    assert "bf16 at step 1/3" in _one_line(capsys.readouterr().err)
    r = strict_loads(js.read_text())
    assert r["partial"] is True and r["not_run"] == ["fp16"]
    assert [(x["partial"], x["steps_done"]) for x in r["runs"]] == [(False, 3), (True, 1)]


@pytest.mark.parametrize("case", ["no-json", "before-the-first-step"])
def test_cli_interrupt_with_nothing_to_write(case, tmp_path, monkeypatch, capsys):
    _tiny_train(monkeypatch)
    _interrupt_at(monkeypatch, 1)
    args = [] if case == "no-json" else ["--json", str(tmp_path / "run.json")]
    assert train_main(["--steps", "3", "--quiet", *args]) == 130
    assert "nothing was written" in _one_line(capsys.readouterr().err) and not list(tmp_path.iterdir())


SIGINT_CHILD = textwrap.dedent("""
    import dataclasses, os, signal, sys
    # Ctrl+C as in a terminal: a parent that ignores SIGINT (a background job of a non-interactive shell, some
    # pytest-xdist workers) passes SIG_IGN down, and Python then installs no KeyboardInterrupt handler at all
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import fp8lab.train.loop as loop
    from fp8lab.cli import main
    real_train, real_step = loop.train, loop.Run.step
    tiny = dict(eval_iters=1, n_layer=1, n_embd=32, n_head=2, block_size=16, batch_size=2)
    loop.train = lambda r, cfg, **kw: real_train(r, dataclasses.replace(cfg, **tiny), **kw)
    def step(self, i):
        if i == 2:
            os.kill(os.getpid(), signal.SIGINT)  # a real Ctrl+C, arriving in the middle of step 3
        return real_step(self, i)
    loop.Run.step = step
    sys.exit(main(["train", *sys.argv[1:]]))
""")


def test_a_real_sigint_in_a_subprocess(tmp_path):
    js = tmp_path / "run.json"
    js.write_text('{"partial": false, "loss": [1.0]}')  # an earlier complete result
    r = subprocess.run([sys.executable, "-c", SIGINT_CHILD, "--steps", "50", "--quiet", "--json", str(js)],
                       cwd=REPO, capture_output=True, text=True, timeout=300)
    assert r.returncode == 130 and r.stdout == ""
    assert "interrupted (fp32 at step 2/50)" in _one_line(r.stderr)
    assert js.read_text() == '{"partial": false, "loss": [1.0]}'
    p = strict_loads(partial_path(js).read_text())
    assert p["partial"] is True and p["steps_done"] == 2


# ----- every result file is written atomically -------------------------------------------------------
@pytest.mark.parametrize("fail", ["write", "fsync", "replace", "ctrl-c"])
def test_a_failed_write_leaves_the_old_file_and_no_temporary(fail, tmp_path, monkeypatch):
    p = tmp_path / "run.json"
    p.write_text("old")
    err = KeyboardInterrupt if fail == "ctrl-c" else OSError(28, "No space left on device")

    def boom(*a, **k):
        raise err
    target = {"write": (tempfile, "mkstemp"), "fsync": (os, "fsync"), "replace": (os, "replace"),
              "ctrl-c": (os, "fsync")}[fail]
    monkeypatch.setattr(*target, boom)
    with pytest.raises(KeyboardInterrupt if fail == "ctrl-c" else OSError):
        atomic_write(p, "new")
    monkeypatch.undo()
    assert p.read_text() == "old" and [x.name for x in tmp_path.iterdir()] == ["run.json"]


def test_atomic_write_keeps_the_usual_permissions(tmp_path):
    mask = os.umask(0o022)
    try:
        new = atomic_write(tmp_path / "new.json", "x")
    finally:
        os.umask(mask)
    assert stat.S_IMODE(new.stat().st_mode) == 0o644
    (tmp_path / "old.json").write_text("y")
    (tmp_path / "old.json").chmod(0o640)
    assert stat.S_IMODE(atomic_write(tmp_path / "old.json", "z").stat().st_mode) == 0o640


def test_the_cli_writes_json_and_plot_atomically(tmp_path, monkeypatch):
    _tiny_train(monkeypatch)
    written = []
    real = tcli.atomic_write
    monkeypatch.setattr(tcli, "atomic_write", lambda path, data: written.append(Path(path).name) or real(path, data))
    js, png = tmp_path / "run.json", tmp_path / "run.svg"
    assert train_main(["--steps", "2", "--eval-iters", "1", "--quiet", "--json", str(js), "--plot", str(png)]) == 0
    assert written == ["run.json", "run.svg"] and png.read_text().lstrip().startswith("<?xml")


def test_a_folder_gone_during_the_run_sends_the_json_elsewhere(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    out.mkdir()
    real = loop.train

    def vanishing(recipe, cfg, **kw):
        shutil.rmtree(out)
        return real(recipe, dataclasses.replace(cfg, **TINY), **kw)
    monkeypatch.setattr(loop, "train", vanishing)
    assert train_main(["--steps", "1", "--eval-iters", "1", "--quiet", "--json", str(out / "run.json")]) == 1
    line = _one_line(capsys.readouterr().err)
    spare = Path(line.rsplit(" ", 1)[1])
    try:
        assert strict_loads(spare.read_text())["steps_done"] == 1
    finally:
        spare.unlink()


# ----- issue 20 §3: --warmup, the gap panel, the delayed-scaling note --------------------------------
def test_warmup_defaults_to_a_tenth_of_a_short_run_and_refuses_more_than_the_run(tmp_path, capsys):
    assert [tcli.warmup_steps(s, None) for s in (1, 5, 80, 999, 1000, 2000, 10**6)] == [1, 1, 8, 99, 100, 100, 100]
    assert tcli.warmup_steps(80, 0) == 0 and tcli.warmup_steps(80, 80) == 80
    assert train_main(["--steps", "80", "--warmup", "81"]) == 2
    assert "--warmup 81 is longer than the run" in capsys.readouterr().err
    js = tmp_path / "r.json"
    assert train_main(["--steps", "2", "--warmup", "1", "--eval-iters", "1", "--quiet", "--json", str(js)]) == 0
    assert json.loads(js.read_text())["config"]["warmup_steps"] == 1


def test_the_gemms_setting_is_recorded_and_fp32_gemms_switches_the_bf16_units_off(tmp_path):
    """A run's JSON says where its exact FP8 GEMMs ran: the BF16 matrix units by default, FP32 with --fp32-gemms."""
    for extra, units in (([], True), (["--fp32-gemms"], False)):
        js = tmp_path / f"r{units}.json"
        args = ["--recipe", "fp8-tensorwise-current", "--steps", "1", "--eval-iters", "1", "--quiet", "--json", str(js)]
        assert train_main(args + extra) == 0
        assert json.loads(js.read_text())["config"]["bf16_units"] is units


def _fake_run(name, offset, n=200, seed=0):
    return {"recipe": {"name": name}, "loss": [3.0 - 0.005 * i + offset for i in range(n)],
            "val": [{"step": n, "val": 2.0 + offset}], "config": {"seed": seed}}


def test_the_compare_plot_shows_each_recipe_s_smoothed_gap_to_fp32():
    import matplotlib.pyplot as plt
    fig = tcli.loss_figure([_fake_run("fp32", 0.0), _fake_run("mxfp8", 0.03), _fake_run("bf16", -0.01)])
    try:
        assert len(fig.axes) == 2
        gaps = {ln.get_label(): ln.get_ydata() for ln in fig.axes[1].get_lines() if not ln.get_label().startswith("_")}
        assert set(gaps) == {"mxfp8", "bf16"}
        assert np.allclose(gaps["mxfp8"], 0.03) and np.allclose(gaps["bf16"], -0.01)
    finally:
        plt.close(fig)
    fig = tcli.loss_figure([_fake_run("mxfp8", 0.0), _fake_run("bf16", 0.0)])  # no fp32 run: nothing to subtract
    try:
        assert len(fig.axes) == 1
    finally:
        plt.close(fig)


def test_delayed_scaling_s_first_step_and_overflows_are_explained_where_printed():
    from fp8lab.train.loop import train
    cfg = TrainConfig(steps=4, n_layer=1, eval_interval=4, eval_iters=1, warmup_steps=1)
    delayed, current = train("fp8-tensorwise-delayed", cfg), train("fp8-tensorwise-current", cfg)
    line = tcli._summary("fp8-tensorwise-delayed", delayed)
    assert "first step casts at scale 1" in line
    assert f"{delayed['underflow'][0]:.1%} underflow at step 1" in line
    assert f"{sum(delayed['overflow'])} overflowed blocks in all, {delayed['overflow'][0]} of them at step 1" in line
    assert delayed["underflow"][0] > 10 * max(delayed["underflow"][1:])  # what the note says happens
    assert "scale 1" not in tcli._summary("fp8-tensorwise-current", current)
