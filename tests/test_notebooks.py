"""The course notebooks: stored clean with a title (fast), and every one executes headless (slow).

New chapters in ``notebooks/`` are picked up automatically.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
IDS = [p.name for p in NOTEBOOKS]


def test_the_course_has_notebooks() -> None:
    assert NOTEBOOKS, f"no notebooks found in {NOTEBOOK_DIR}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_stored_without_outputs_and_opens_with_a_title(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    dirty = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.outputs or c.execution_count is not None)]
    assert not dirty, (f"{path.name}: code cells {dirty} have stored outputs or execution counts; "
                       "clear them (e.g. `jupyter nbconvert --clear-output --inplace`) before committing")
    first = nb.cells[0] if nb.cells else None
    assert first is not None and first.cell_type == "markdown", f"{path.name}: the first cell should be markdown"
    title = first.source.lstrip().splitlines()[0] if first.source.strip() else ""
    assert title.startswith("# ") and len(title) > 2, (
        f"{path.name}: the first cell should open with '# Title', got {title!r}")


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_executes_headless(path: Path) -> None:
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError naming the failing cell
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{path.name}: {[e.ename + ': ' + e.evalue for e in errors]}"
