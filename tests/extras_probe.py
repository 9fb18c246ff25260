"""Run by tests/test_optional_extras.py in a child process: every public entry point with some extras hidden.

``python tests/extras_probe.py WORKDIR`` runs where :data:`SITECUSTOMIZE` (written to a folder on
``PYTHONPATH``) refuses to import the modules named in ``FP8LAB_HIDE`` (comma-separated), as if they were
not installed; child processes (nbgrader, kernels) inherit the refusal. It tries, one at a time:
importing every module of the package, every ``fp8lab`` subcommand (:data:`COMMANDS`), and every
public callable of the lazily loaded subpackages (:data:`CALLS`), and prints one JSON object: for each
entry point its name and ``ok``, or the exception's type and message (a command's exit code and stderr).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys

#: fp8lab's subcommands, each with arguments that do real work when its extras are there; ``heavy``: the
#: extras with which the command would run for long (grading a lab, generating one), so it is left out
#: unless one of them is hidden.
COMMANDS: dict[str, tuple[list[str], tuple[str, ...]]] = {
    "explain": (["explain", "0.8125"], ()),
    "values": (["values", "e4m3"], ()),
    "formats": (["formats"], ()),
    "encode": (["encode", "1.0", "500"], ()),
    "kv": (["kv", "--model", "llama-3-8b"], ()),
    "fit": (["fit", "--model", "llama-3-8b"], ()),
    "memory": (["memory", "--model", "llama-3-8b"], ()),
    "quiz": (["quiz", "--n", "1", "--seed", "0"], ()),
    "train": (["train", "--steps", "2", "--eval-interval", "1", "--eval-iters", "1", "--quiet",
               "--plot", "{work}/loss.png", "--json", "{work}/run.json"], ()),
    "labs list": (["labs", "list"], ()),
    "labs grade": (["labs", "grade", "{repo}/exercises/01_decode_exmy/01_decode_exmy.ipynb"], ("nbgrader",)),
    "labs generate": (["labs", "generate", "01_decode_exmy"], ("nbgrader",)),
    "labs collect": (["labs", "collect", "01_decode_exmy", "{work}/submissions"], ("nbgrader",)),
    "labs autograde": (["labs", "autograde", "01_decode_exmy"], ("nbgrader",)),
    "labs due": (["labs", "due", "01_decode_exmy", "2030-01-01 12:00"], ("nbgrader",)),
    "labs report": (["labs", "report", "01_decode_exmy"], ("nbgrader",)),
    "labs feedback": (["labs", "feedback", "01_decode_exmy"], ("nbgrader",)),
    "labs export": (["labs", "export", "--to", "{work}/grades.csv"], ("nbgrader",)),
    "labs check": (["labs", "check", "01_decode_exmy"], ("nbgrader",)),
    "labs release": (["labs", "release", "01_decode_exmy"], ("nbgrader",)),
}

#: every public callable of the lazily loaded subpackages, with a call that does real work
CALLS: dict[str, str] = {
    "nn.convert": "fl.nn.convert(__import__('torch').nn.Sequential(__import__('torch').nn.Linear(4, 4)), 'fp8-tensorwise-current')",
    "nn.weight_cache": "fl.nn.weight_cache(__import__('torch').nn.Linear(4, 4)).__enter__()",
    "interview.load_bank": "fl.interview.load_bank()",
    "interview.get_question": "fl.interview.get_question(QID)",
    "interview.read_bank": "fl.interview.read_bank()",
    "interview.verify": "fl.interview.verify([fl.interview.get_question(QID)])",
    "interview.schema_problems": "fl.interview.schema_problems()",
    "interview.check_question": "fl.interview.check_question(fl.interview.get_question(QID))",
    "interview.run_check": "fl.interview.run_check('result = 1')",
    "interview.grade": "fl.interview.grade(fl.interview.get_question(QID), 'a')",
    "interview.format_answer": "fl.interview.format_answer(fl.interview.get_question(QID))",
    "interview.question_text": "fl.interview.question_text(fl.interview.get_question(QID))",
    "interview.solution_text": "fl.interview.solution_text(fl.interview.get_question(QID))",
    "interview.run_quiz": "fl.interview.run_quiz(fl.interview.load_bank()[:1], input=io.StringIO('q\\n'), output=io.StringIO())",
    "interview.select_questions": "fl.interview.select_questions(fl.interview.load_bank(), 2, seed=0)",
    "interview.check_yourself": "fl.interview.check_yourself([QID], widgets=True)",
    "interview.quiz_widget": "fl.interview.quiz_widget(n=2, seed=0)",
    "interview.questions_text": "fl.interview.questions_text([QID])",
    "interview.export": "fl.interview.export(WORK + '/deck.txt', fl.interview.load_bank()[:2])",
    "interview.anki_text": "fl.interview.anki_text(fl.interview.load_bank()[:2])",
    "labs.expect_equal": "fl.labs.expect_equal(1, 1)",
    "labs.expect_close": "fl.labs.expect_close(1.0, 1.0)",
    "labs.expect_raises": "fl.labs.expect_raises(ZeroDivisionError, lambda: 1 / 0)",
    "labs.describe": "fl.labs.describe([1, 2])",
    "labs.grading_rng": "fl.labs.grading_rng('task')",
    "labs.grading_seed": "fl.labs.grading_seed()",
    "viz.figure_and_axes": "fl.viz.figure_and_axes(None, (2, 2))",
    "viz.plot_value_grid": "fl.viz.plot_value_grid('e4m3')",
    "viz.plot_relative_spacing": "fl.viz.plot_relative_spacing('e4m3')",
    "viz.plot_rounding_error": "fl.viz.plot_rounding_error([0.1, 0.2, 0.3], 'e4m3')",
    "viz.plot_bits": "fl.viz.plot_bits(56, 'e4m3')",
    "viz.positive_values": "fl.viz.positive_values('e4m3')",
    "widgets.flip": "fl.widgets.flip(56, 0, 'e4m3')",
    "widgets.field_of_bit": "fl.widgets.field_of_bit(0, 'e4m3')",
    "widgets.describe_code": "fl.widgets.describe_code(56, 'e4m3')",
    "widgets.describe_value": "fl.widgets.describe_value(0.1, 'e4m3')",
    "widgets.bit_flipper": "fl.widgets.bit_flipper()",
    "widgets.value_explorer": "fl.widgets.value_explorer()",
    "hardware.get_gpu_spec": "fl.hardware.get_gpu_spec('h100')",
    "hardware.list_gpu_specs": "fl.hardware.list_gpu_specs()",
    "hardware.get_source": "fl.hardware.get_source(fl.hardware.get_gpu_spec('h100').source)",
    "hardware.gemm_cost": "fl.hardware.gemm_cost(1024, 1024, 1024)",
    "hardware.operand_bits": "fl.hardware.operand_bits('fp8')",
    "hardware.roofline": "fl.hardware.roofline('h100', 'fp8', 1024, 1024, 1024)",
    "hardware.speedup": "fl.hardware.speedup('h100', 1024, 1024, 1024)",
    "hardware.compute_bound_m": "fl.hardware.compute_bound_m('h100', 'fp8', 1024, 1024)",
    "hardware.activation_cast_bytes": "fl.hardware.activation_cast_bytes(1024, 1024)",
    "hardware.load_bench_results": "fl.hardware.load_bench_results(REPO + '/bench/results')",
    "train.train": "__import__('fp8lab.train', fromlist=['train']).train('fp32', __import__('fp8lab.train', fromlist=['x'])"
                   ".TrainConfig(steps=1, eval_interval=1, eval_iters=1))",
    "train.load_shakespeare": "__import__('fp8lab.train', fromlist=['x']).load_shakespeare()",
}

#: the subpackages whose public callables :data:`CALLS` covers (``fp8lab.<name>``, each one's ``__all__``)
SUBPACKAGES = ("nn", "interview", "labs", "viz", "widgets", "hardware", "train", "course")


#: the environment variable naming the modules to refuse
HIDE_ENV = "FP8LAB_HIDE"

#: a ``sitecustomize.py``: a meta-path finder that makes the modules of ``FP8LAB_HIDE`` (and their
#: submodules) look not installed, in every Python process started with its folder on PYTHONPATH
SITECUSTOMIZE = """import os, sys


class _Refuse:
    names = tuple(m for m in os.environ.get("FP8LAB_HIDE", "").split(",") if m)

    def find_spec(self, name, path=None, target=None):
        if any(name == m or name.startswith(m + ".") for m in self.names):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


if _Refuse.names:
    sys.meta_path.insert(0, _Refuse())
"""


def outcome(fn) -> dict:
    """``{"ok": True}``, or the exception ``fn()`` raised as type and message."""
    try:
        fn()
    except BaseException as err:  # noqa: BLE001 - reported, judged by the test
        return {"ok": False, "type": type(err).__name__, "message": str(err)}
    return {"ok": True}


def main() -> None:
    hidden = tuple(m for m in os.environ.get(HIDE_ENV, "").split(",") if m)
    work = sys.argv[1]
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if hidden and not any(type(f).__name__ == "_Refuse" for f in sys.meta_path):
        raise SystemExit(f"{HIDE_ENV}={','.join(hidden)} but no refusing finder: put SITECUSTOMIZE on PYTHONPATH")
    results = []
    os.makedirs(f"{work}/submissions", exist_ok=True)  # one learner's attempt for `labs collect`
    with open(f"{repo}/exercises/01_decode_exmy/01_decode_exmy.ipynb", "rb") as src, \
            open(f"{work}/submissions/learner1.ipynb", "wb") as dst:
        dst.write(src.read())
    import importlib
    import pkgutil

    import fp8lab as fl  # the core: must import with every extra hidden

    for mod in pkgutil.walk_packages(fl.__path__, "fp8lab."):
        if mod.name.endswith("__main__"):
            continue
        results.append({"entry": f"import {mod.name}", **outcome(lambda: importlib.import_module(mod.name))})
    from fp8lab.cli import main as cli

    for name, (argv, heavy) in COMMANDS.items():
        if heavy and not set(heavy) & set(hidden):
            continue
        argv = [a.format(work=work, repo=repo) for a in argv]
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = cli(argv)
            except SystemExit as e:
                code = e.code
            except BaseException as e:  # noqa: BLE001 - a traceback the learner would see
                code, err = "raised", io.StringIO(f"{type(e).__name__}: {e}")
        results.append({"entry": f"fp8lab {name}", "ok": code == 0, "type": f"exit {code}",
                        "message": err.getvalue().strip()})
    namespace = {"fl": fl, "io": io, "QID": "fa-fp32-layout", "WORK": work, "REPO": repo}
    for name, call in CALLS.items():
        results.append({"entry": f"fp8lab.{name}", **outcome(lambda: eval(call, namespace))})  # noqa: S307 - our table
    listed = {}
    for pkg in SUBPACKAGES:
        got = outcome(lambda: importlib.import_module(f"fp8lab.{pkg}"))
        if got["ok"]:
            mod = sys.modules[f"fp8lab.{pkg}"]
            listed[pkg] = sorted(n for n in getattr(mod, "__all__", []) if callable(getattr(mod, n, None))
                                 and not isinstance(getattr(mod, n), type))
    print(json.dumps({"results": results, "public": listed}))


if __name__ == "__main__":
    main()
