"""The chapter runner: no widget stall, single-threaded kernels, the bf16-matmul guard, cells run on their own."""

from __future__ import annotations

import nbformat
import pytest

from fp8lab.course.execute import execute_chapter, figure_count, run_on_their_own

pytestmark = pytest.mark.slow


def notebook(tmp_path, *sources: str):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# test")] + [nbformat.v4.new_code_cell(s) for s in sources]
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    return path


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


def test_kernels_run_single_threaded_by_default(tmp_path) -> None:
    path = notebook(tmp_path, "import os, torch\nprint(os.environ['OMP_NUM_THREADS'], torch.get_num_threads())")
    out = execute_chapter(path).notebook.cells[1].outputs[0].text.split()
    assert out == ["1", "1"]


def test_a_bfloat16_matmul_raises_and_fp8_scaled_mm_does_not(tmp_path) -> None:
    from nbclient.exceptions import CellExecutionError

    ok = notebook(tmp_path, "import torch", "a = torch.ones(16, 16).to(torch.float8_e4m3fn)\n"
                  "print(torch._scaled_mm(a, a.t(), torch.ones(()), torch.ones(()), out_dtype=torch.bfloat16).dtype)")
    assert "bfloat16" in execute_chapter(ok).notebook.cells[2].outputs[0].text
    bad = notebook(tmp_path, "import torch", "b = torch.ones(4, 4, dtype=torch.bfloat16)\nb @ b")
    with pytest.raises(CellExecutionError, match="bfloat16"):
        execute_chapter(bad)


def test_cells_that_need_objects_from_above_are_found(tmp_path) -> None:
    path = notebook(tmp_path, "import math", "x = 2", "print(math.pi)", "print(x)")
    result = run_on_their_own(path, [3, 4])
    assert result[3] is None and result[4] is not None and "NameError" in result[4]


def test_cell_times_and_figures(tmp_path) -> None:
    path = notebook(tmp_path, "%matplotlib inline\nfrom matplotlib.figure import Figure\nf = Figure(); f.add_subplot().plot([1, 2]); f",
                    "import time; time.sleep(0.3)")
    run = execute_chapter(path)
    assert figure_count(run.notebook) == 1
    assert run.cell_seconds[2] >= 0.3 and run.seconds >= run.cell_seconds[2]
    if run.cpu_seconds is not None:  # Linux: the kernel's own CPU time, which sleeping does not add to
        assert 0 < run.cpu_seconds < run.wall_seconds + 30
