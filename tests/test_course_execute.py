"""The chapter runner: no widget stall, single-threaded kernels, the bf16-matmul guard, cells run on their own,
and the cache of executed chapters (executed once per content and sources, shared by processes)."""

from __future__ import annotations

import json
import os

import nbformat
import pytest

from fp8lab.course import execute as execute_module
from fp8lab.course.execute import ExecutedChapter, execute_cached, execute_chapter, figure_count, run_on_their_own


def notebook(tmp_path, *sources: str):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# test")] + [nbformat.v4.new_code_cell(s) for s in sources]
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.mark.kernel
def test_widget_cells_do_not_stall(tmp_path) -> None:
    """150 ``interact`` cells, each followed by a print: nbclient's single long shell poll lost a wake-up in
    3-7% of such cells in runs here and then waited out the whole cell timeout; polling in slices bounds that.
    Without the fix this fails in all but about 2% of runs (some cell takes the full 10 s)."""
    interact = ("widgets.interact(lambda k=4096, bits=13: print(k, bits, np.sqrt(k)), "
                "k=widgets.SelectionSlider(options=[2**i for i in range(7, 16)], value=4096), "
                "bits=widgets.IntSlider(value=13, min=4, max=23));")
    path = notebook(tmp_path, "import ipywidgets as widgets\nimport numpy as np", *([interact, "print('after')"] * 150))
    run = execute_chapter(path, cell_timeout=10)
    slowest = run.slowest(1)[0]
    assert slowest[1] < 5, f"cell {slowest[0]} took {slowest[1]:.1f} s: the shell-channel wait stalled"
    outputs = [o for c in run.notebook.cells[2:] for o in c.outputs]
    assert any(o.output_type == "display_data" and "application/vnd.jupyter.widget-view+json" in o.get("data", {})
               for o in outputs), "the interact cells rendered no widget"


@pytest.mark.kernel
def test_kernels_run_single_threaded_by_default(tmp_path) -> None:
    path = notebook(tmp_path, "import os, torch\nprint(os.environ['OMP_NUM_THREADS'], torch.get_num_threads())")
    out = execute_chapter(path).notebook.cells[1].outputs[0].text.split()
    assert out == ["1", "1"]


@pytest.mark.kernel
def test_a_bfloat16_matmul_raises_and_fp8_scaled_mm_does_not(tmp_path) -> None:
    from nbclient.exceptions import CellExecutionError

    ok = notebook(tmp_path, "import torch", "a = torch.ones(16, 16).to(torch.float8_e4m3fn)\n"
                  "print(torch._scaled_mm(a, a.t(), torch.ones(()), torch.ones(()), out_dtype=torch.bfloat16).dtype)")
    assert "bfloat16" in execute_chapter(ok).notebook.cells[2].outputs[0].text
    bad = notebook(tmp_path, "import torch", "b = torch.ones(4, 4, dtype=torch.bfloat16)\nb @ b")
    with pytest.raises(CellExecutionError, match="bfloat16"):
        execute_chapter(bad)


@pytest.mark.kernel
def test_cells_that_need_objects_from_above_are_found(tmp_path) -> None:
    path = notebook(tmp_path, "import math", "x = 2", "print(math.pi)", "print(x)")
    result = run_on_their_own(path, [3, 4])
    assert result[3] is None and result[4] is not None and "NameError" in result[4]


@pytest.mark.kernel
def test_cell_times_and_figures(tmp_path) -> None:
    path = notebook(tmp_path, "%matplotlib inline\nfrom matplotlib.figure import Figure\nf = Figure(); f.add_subplot().plot([1, 2]); f",
                    "import time; time.sleep(0.3)")
    run = execute_chapter(path)
    assert figure_count(run.notebook) == 1
    assert run.cell_seconds[2] >= 0.3 and run.seconds >= run.cell_seconds[2]
    if run.cpu_seconds is not None:  # Linux: the kernel's own CPU time, which sleeping does not add to
        assert 0 < run.cpu_seconds < run.wall_seconds + 30


def test_the_cache_executes_a_chapter_once_per_content_and_sources(tmp_path, monkeypatch) -> None:
    """No kernel: execute_chapter is replaced by a stand-in that counts its calls and fills in an output."""
    calls = []

    def fake(path, **kwargs):
        calls.append((path.name, kwargs["cell_timeout"]))
        nb = nbformat.read(path, as_version=4)
        nb.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"run {len(calls)}\n")]
        return ExecutedChapter(path, nb, (0.0, 1.5), 2.0, 1.25)

    monkeypatch.setattr(execute_module, "execute_chapter", fake)
    path, cache = notebook(tmp_path, "print(1)"), tmp_path / "cache"
    first = execute_cached(path, cache, cell_timeout=30)
    again = execute_cached(path, cache, cell_timeout=30)
    assert calls == [("nb.ipynb", 30)] and again.path == path
    assert (again.cell_seconds, again.wall_seconds, again.cpu_seconds) == ((0.0, 1.5), 2.0, 1.25) == (
        first.cell_seconds, first.wall_seconds, first.cpu_seconds)
    assert again.notebook.cells[1].outputs[0].text == "run 1\n"
    (entry,) = cache.glob("nb-*.json")
    assert json.loads(entry.read_text())["pid"] == os.getpid()
    execute_cached(path, cache, cell_timeout=10)                        # another setting: another entry
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# t"),
                                                   nbformat.v4.new_code_cell("print(2)")]), path)
    assert execute_cached(path, cache, cell_timeout=30).notebook.cells[1].outputs[0].text == "run 3\n"  # new bytes
    monkeypatch.setattr(execute_module, "source_digest", lambda root=None: "other sources")
    assert execute_cached(path, cache, cell_timeout=30).notebook.cells[1].outputs[0].text == "run 4\n"  # new library
    assert len(calls) == 4 and not list(cache.glob(".*"))                  # no temporary file left behind


def test_a_chapter_another_process_is_executing_is_waited_for_or_skipped(tmp_path, monkeypatch) -> None:
    from filelock import FileLock

    monkeypatch.setattr(execute_module, "execute_chapter",
                        lambda path, **kw: ExecutedChapter(path, nbformat.read(path, as_version=4), (0.1,), 0.1, None))
    path, cache = notebook(tmp_path, "print(1)"), tmp_path / "cache"
    cache.mkdir()
    key = execute_module.cache_key(path, cell_timeout=30)
    with FileLock(str(cache / f"nb-{key[:24]}.lock")):  # what another worker holds while it executes the chapter
        assert execute_cached(path, cache, cell_timeout=30, wait=False) is None
    assert execute_cached(path, cache, cell_timeout=30, wait=False).cell_seconds == (0.1,)


def test_a_chapter_that_fails_leaves_no_entry(tmp_path, monkeypatch) -> None:
    def failing(path, **kw):
        raise RuntimeError("cell 1 failed")

    monkeypatch.setattr(execute_module, "execute_chapter", failing)
    path, cache = notebook(tmp_path, "1 / 0"), tmp_path / "cache"
    with pytest.raises(RuntimeError, match="cell 1 failed"):
        execute_cached(path, cache)
    assert not list(cache.glob("*.ipynb")) and not list(cache.glob("*.json"))


def test_the_source_digest_follows_every_library_and_bench_file(tmp_path) -> None:
    for rel in ("fp8lab/a.py", "fp8lab/sub/b.c", "bench/results/r.json", "fp8lab/__pycache__/a.cpython-311.pyc"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x")
    d = execute_module.source_digest(tmp_path)
    (tmp_path / "fp8lab/__pycache__/a.cpython-311.pyc").write_text("compiled")
    assert execute_module.source_digest(tmp_path) == d
    for rel in ("fp8lab/sub/b.c", "bench/results/r.json"):
        (tmp_path / rel).write_text("y")
        assert execute_module.source_digest(tmp_path) != d
        d = execute_module.source_digest(tmp_path)
    (tmp_path / "fp8lab/new.py").write_text("")
    assert execute_module.source_digest(tmp_path) != d
