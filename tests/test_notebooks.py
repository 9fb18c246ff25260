"""The course notebooks: stored clean, named and linked as the course map says, and (kernel) executed.

Fast checks read the stored notebooks: no outputs, a title, a chapter of the map, links that resolve,
navigation to the neighbours and the map, myth and self-check cells tagged, cited numbers with
sources, no torch bfloat16 matmul, the glossary, jargon defined where first used.

Kernel checks execute each chapter once per test run (``fp8lab.course.execute.execute_cached`` into the
run's ``course_cache``, which the book test reads too; kernels single-threaded, the shell channel polled
in slices so that a widget cell cannot stall the run) and assert: no error,
every cell under ``CELL_TIMEOUT_S``, the chapter's kernel under ``CHAPTER_BUDGET_S`` of CPU time and its
cells under ``CHAPTER_WALL_LIMIT_S`` of wall time, at least one figure, every
number in the prose backed by an earlier output or a cited source; and, in a second kernel, that
every myth and self-check cell runs on its own after only the chapter's first code cell.

New chapters in ``notebooks/`` are picked up automatically.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import nbformat
import pytest

from fp8lab.course.chapters import CHAPTERS, chapter, neighbours
from fp8lab.course.prose import cited_numbers, numbers_in_prose, numbers_in_text, unbacked_numbers

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
IDS = [p.name for p in NOTEBOOKS]

#: a cell that takes longer has stalled (the widget stall waited out a 300 s timeout before it was fixed)
CELL_TIMEOUT_S = 30
#: the course's promise: a chapter's work, top to bottom, under a minute on one of two cores. Measured as
#: the kernel's CPU time (where /proc exists), which a machine shared with other jobs does not inflate
CHAPTER_BUDGET_S = 60
#: wall time of all cells together: only a hang-catcher, generous enough for a machine loaded several times over
CHAPTER_WALL_LIMIT_S = 300
#: what the issue asks to be defined where first used, and how a definition is marked (the term in bold)
JARGON = {"binade": r"\*\*binades?\*\*", "ulp": r"\*\*ulp\*\*", "decade": r"\*\*decades?\*\*", "TF32": r"\*\*TF32\*\*",
          "GEMM": r"\*\*GEMMs?\*\*", "epilogue": r"\*\*epilogue\*\*", "HBM": r"\*\*HBM\*\*", "RoPE": r"\*\*RoPE\*\*"}
GLOSSARY_REQUIRED = ["尾数", "指数偏置", "次正规数", "缩放因子", "主权重"]


def read(path: Path) -> nbformat.NotebookNode:
    return nbformat.read(path, as_version=4)


def markdown(nb) -> list[tuple[int, str]]:
    return [(i, c.source) for i, c in enumerate(nb.cells) if c.cell_type == "markdown"]


def test_the_course_has_notebooks() -> None:
    assert NOTEBOOKS, f"no notebooks found in {NOTEBOOK_DIR}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_stored_without_outputs_and_opens_with_a_title(path: Path) -> None:
    nb = read(path)
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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_every_notebook_is_a_chapter_of_the_map(path: Path) -> None:
    c = chapter(path.stem)  # raises ValueError naming the twelve chapters
    assert read(path).cells[0].source.lstrip().startswith(f"# {c.number}"), (
        f"{path.name}: its title should start with the chapter number, '# {c.number} — ...'")


def heading_ids(nb) -> set[str]:
    """The anchors JupyterLab (and nbconvert) give markdown headings: the text with spaces as dashes."""
    ids = set()
    for _, src in markdown(nb):
        for m in re.finditer(r"^#+\s+(.+?)\s*$", src, re.M):
            text = re.sub(r"[`*]", "", m.group(1))
            ids.add(text.replace(" ", "-"))
    return ids


def links(nb) -> list[tuple[int, str]]:
    return [(i, m.group(1)) for i, src in markdown(nb) for m in re.finditer(r"\]\(([^)\s]+)\)", src)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_links_resolve(path: Path) -> None:
    """Every relative link points to a file that exists (and to a heading that exists, with #anchor).

    Links to chapters of the map that have not been written yet (07 and 11 at the time of writing)
    are reported as warnings, not failures; they resolve once those chapters land.
    """
    nb = read(path)
    broken, pending = [], []
    for i, target in links(nb):
        if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = path if not file else (path.parent / file)
        if not dest.exists():
            stem = Path(file).stem
            if file.endswith(".ipynb") and stem in {c.stem for c in CHAPTERS}:
                pending.append(file)
            else:
                broken.append(f"cell {i}: {target}")
            continue
        if anchor and dest.suffix == ".ipynb" and anchor not in heading_ids(read(dest)):
            broken.append(f"cell {i}: {target} (no heading {anchor!r} in {dest.name})")
    assert not broken, f"{path.name}: broken links {broken}"
    if pending:
        warnings.warn(f"{path.name} links to chapters not written yet: {sorted(set(pending))}", stacklevel=1)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_chapters_link_to_their_neighbours_and_the_map(path: Path) -> None:
    nb = read(path)
    targets = {t for _, t in links(nb)}
    prev, nxt = neighbours(path.stem)
    want = {f"{s}.ipynb" for s in (prev, nxt) if s}
    want.add("#Course-map" if path.stem == CHAPTERS[0].stem else "00_welcome.ipynb#Course-map")
    missing = want - targets
    assert not missing, f"{path.name}: no link to {sorted(missing)} (previous, next chapter and the course map)"
    first, last = nb.cells[0].source, nb.cells[-1].source
    assert "Course-map" in first and "Course-map" in last, f"{path.name}: navigation belongs in the first and last cell"


def _myth_cells(nb) -> list[int]:
    return [i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and re.search(r"^\s*>\s*\*\*Myth", c.source, re.M)]


def _question_cells(nb) -> list[int]:
    return [i for i, c in enumerate(nb.cells) if c.cell_type == "markdown" and c.metadata.get("fp8lab", {}).get("question")]


def _tagged(nb, tag: str) -> list[int]:
    return [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and tag in c.metadata.get("tags", [])]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_myth_and_check_cells_are_tagged(path: Path) -> None:
    """A myth claim is followed by its checking code cell (tagged ``myth``), a question by its check (``check-yourself``)."""
    nb = read(path)
    problems = []
    for i in _myth_cells(nb):
        nxt = nb.cells[i + 1] if i + 1 < len(nb.cells) else None
        if nxt is None or nxt.cell_type != "code" or "myth" not in nxt.metadata.get("tags", []):
            problems.append(f"myth in cell {i} is not followed by a code cell tagged 'myth'")
    for i in _question_cells(nb):
        nxt = nb.cells[i + 1] if i + 1 < len(nb.cells) else None
        if nxt is None or nxt.cell_type != "code" or "check-yourself" not in nxt.metadata.get("tags", []):
            problems.append(f"question in cell {i} is not followed by a code cell tagged 'check-yourself'")
    assert not problems, f"{path.name}: {problems}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_cited_numbers_have_sources_and_appear_in_the_prose(path: Path) -> None:
    nb = read(path)
    cited = cited_numbers(nb)
    prose = [n for _, src in markdown(nb) for n in numbers_in_prose(src)]
    problems = []
    for key, source in cited.items():
        if not isinstance(source, str) or len(source.strip()) < 10:
            problems.append(f"{key!r} has no source (give the paper and section, the spec, the library default)")
        wanted = numbers_in_text(key)
        if len(wanted) != 1:
            problems.append(f"{key!r} is not one number")
        elif not any(n.value == wanted[0].value for n in prose):
            problems.append(f"{key!r} is cited but the prose no longer states it")
    assert not problems, f"{path.name}: {problems}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_torch_bfloat16_matmul_in_the_code(path: Path) -> None:
    """torch's CPU bfloat16 matmul speed depends on the processor (441x float32 on AVX2-only machines).

    This static check looks for bfloat16 next to a matmul in one cell; the execution test also runs
    every chapter under a guard that raises on any torch matmul of bfloat16 tensors.
    """
    suspicious = []
    for i, c in enumerate(read(path).cells):
        if c.cell_type != "code" or "bfloat16" not in c.source:
            continue
        if re.search(r"@|matmul|\bmm\(|bmm|einsum|linear|autocast|addmm", c.source):
            suspicious.append(i)
    assert not suspicious, f"{path.name}: cells {suspicious} mix torch.bfloat16 with a matmul"


def test_the_welcome_chapter_has_a_bilingual_glossary() -> None:
    nb = read(NOTEBOOK_DIR / "00_welcome.ipynb")
    src = next(s for _, s in markdown(nb) if "Glossary" in s)
    rows = [r for r in src.splitlines() if r.startswith("|") and not set(r) <= set("|- ")]
    body = [r for r in rows[1:]]  # the first row is the header
    assert len(body) >= 35, f"the glossary has {len(body)} terms; at least 35 are wanted"
    for r in body:
        cols = [c.strip() for c in r.strip("|").split("|")]
        assert len(cols) >= 3 and cols[0] and re.search(r"[\u4e00-\u9fff]", cols[1]), f"glossary row without Chinese: {r}"
    for term in GLOSSARY_REQUIRED:
        assert term in src, f"the glossary lacks {term}"


def test_jargon_is_defined_where_first_used() -> None:
    """Each term of ``JARGON`` appears in bold (its definition) in the first chapter, in map order, that uses it."""
    order = [NOTEBOOK_DIR / c.file for c in CHAPTERS[1:] if (NOTEBOOK_DIR / c.file).exists()]
    problems = []
    for term, bold in JARGON.items():
        word = re.compile(rf"\b{re.escape(term)}s?\b", re.I if term.islower() else 0)
        for path in order:
            text = "\n".join(s for _, s in markdown(read(path)))
            if word.search(text):
                if not re.search(bold, text, re.I if term.islower() else 0):
                    problems.append(f"{term!r} is first used in {path.name} but not defined there (in bold)")
                break
    assert not problems, problems


# --- executed (kernel) -------------------------------------------------------------------------

@pytest.mark.kernel
@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_chapter_runs_within_its_budget_and_backs_every_number(path: Path, course_cache: Path) -> None:
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    from fp8lab.course.execute import execute_cached, figure_count

    try:  # executed here, or read back if the book test executed these bytes with these sources first
        run = execute_cached(path, course_cache, cell_timeout=CELL_TIMEOUT_S)
    except CellTimeoutError as e:
        pytest.fail(f"{path.name}: a cell ran past {CELL_TIMEOUT_S} s (a stall, or a cell too slow for the course): {e}")
    except CellExecutionError as e:
        pytest.fail(f"{path.name}: a cell failed:\n{str(e)[-3000:]}")
    nb = run.notebook
    problems = []
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    if errors:
        problems.append(f"error outputs: {[e.ename + ': ' + e.evalue for e in errors]}")
    work = run.cpu_seconds if run.cpu_seconds is not None else run.seconds
    if work > CHAPTER_BUDGET_S:
        problems.append(f"the chapter used {work:.0f} s of {'CPU' if run.cpu_seconds is not None else 'wall'} time, "
                        f"over the {CHAPTER_BUDGET_S} s budget; slowest cells {[(i, round(s, 1)) for i, s in run.slowest()]}")
    if run.seconds > CHAPTER_WALL_LIMIT_S:
        problems.append(f"the cells took {run.seconds:.0f} s of wall time together (limit {CHAPTER_WALL_LIMIT_S} s): "
                        f"a hang? slowest cells {[(i, round(s, 1)) for i, s in run.slowest()]}")
    if figure_count(nb) < 1:
        problems.append("no figure")
    unbacked = unbacked_numbers(nb)
    if unbacked:
        problems.append("numbers in the prose that no earlier output shows and no citation backs (print them from "
                        "code, or add them to metadata['fp8lab']['cited_numbers'] with their source):\n    "
                        + "\n    ".join(str(f) for f in unbacked))
    assert not problems, (f"{path.name} ({run.seconds:.1f} s wall, {run.cpu_seconds} s CPU):\n  "
                          + "\n  ".join(problems))


@pytest.mark.kernel
@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_myth_and_check_cells_run_on_their_own(path: Path) -> None:
    """Each myth and self-check cell works after "restart kernel" and only the chapter's first code cell."""
    from fp8lab.course.execute import run_on_their_own

    nb = read(path)
    cells = sorted(set(_tagged(nb, "myth")) | set(_tagged(nb, "check-yourself")))
    if not cells:
        pytest.skip(f"{path.name} has no myth or self-check cells")
    failed = {i: err for i, err in run_on_their_own(path, cells, cell_timeout=CELL_TIMEOUT_S).items() if err}
    assert not failed, f"{path.name}: cells that need objects from cells above them: {json.dumps(failed, indent=1)}"
