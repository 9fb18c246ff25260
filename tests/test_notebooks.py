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
from fp8lab.course.claims import chapter_claims, claim_mismatches
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
          "GEMM": r"\*\*GEMMs?\*\*", "epilogue": r"\*\*epilogue\*\*", "HBM": r"\*\*HBM\*\*", "RoPE": r"\*\*RoPE\*\*",
          "WGMMA": r"\*\*WGMMAs?\*\*", "TMA": r"\*\*TMA\*\*"}
#: terms whose definition must also come before their first use inside that chapter, not just somewhere in it
DEFINED_BEFORE_USE = {"WGMMA", "TMA"}
#: chapters whose prose compares computed results, so they must state claims (chapter 00 and 11 only point elsewhere)
CLAIMING_CHAPTERS = [c.stem for c in CHAPTERS if c.stem[:2] not in ("00", "11")]
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
        # a name the term base keeps as written in both languages (TF32, E4M3, MXFP4, softmax) has no Chinese rendering
        kept = len(cols) >= 2 and cols[0] == cols[1]
        assert len(cols) >= 3 and cols[0] and (kept or re.search(r"[\u4e00-\u9fff]", cols[1])), \
            f"glossary row without Chinese: {r}"
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
                defined = re.search(bold, text, re.I if term.islower() else 0)
                if not defined:
                    problems.append(f"{term!r} is first used in {path.name} but not defined there (in bold)")
                elif term in DEFINED_BEFORE_USE and word.search(text).start() < defined.start() + 2:
                    problems.append(f"{term!r} is used in {path.name} before its definition (in bold)")
                break
    assert not problems, problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_every_claim_marked_in_the_prose_is_asserted_in_the_code(path: Path) -> None:
    """A sentence that compares computed results carries ``<!-- claim:ID -->``; the cell that computes them
    calls ``claim("ID", condition, statement)``. The two sets are equal (the kernel test checks the same on
    the executed chapter, where a claim that no longer holds fails its cell)."""
    nb = read(path)
    assert claim_mismatches(nb) == [], f"{path.name}: {claim_mismatches(nb)}"
    if path.stem in CLAIMING_CHAPTERS:
        assert chapter_claims(nb)[1], f"{path.name} compares results in its prose but asserts no claim"


def test_a_claim_the_code_no_longer_asserts_is_caught() -> None:
    """Delete one ``claim(...)`` call from chapter 01 and its sentence is reported as unbacked; delete its
    marker instead and the assertion is reported as referred to by no sentence."""
    nb = read(NOTEBOOK_DIR / "01_fp32.ipynb")
    code = next(c for c in nb.cells if c.cell_type == "code" and 'claim("01-fp32-sum-equal"' in c.source)
    text = next(c for c in nb.cells if c.cell_type == "markdown" and "<!-- claim:01-fp32-sum-equal -->" in c.source)
    kept = code.source
    code.source = "\n".join(line for line in kept.splitlines() if 'claim("01-fp32-sum-equal"' not in line)
    assert any("01-fp32-sum-equal is marked in the prose" in p for p in claim_mismatches(nb))
    code.source = kept
    text.source = text.source.replace("<!-- claim:01-fp32-sum-equal -->", "")
    assert any("01-fp32-sum-equal is asserted in code" in p for p in claim_mismatches(nb))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_every_cell_has_an_id_and_the_notebook_validates_without_warnings(path: Path) -> None:
    """nbformat 4.5 wants an id on every cell (it warns and invents one on load otherwise), and the Chinese
    edition keys its translations by cell id: ids are present in the file itself, unique, and valid."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    ids = [c.get("id") for c in raw["cells"]]
    missing = [i for i, c in enumerate(ids) if not c]
    assert not missing, f"{path.name}: cells {missing} have no id"
    assert len(set(ids)) == len(ids), f"{path.name}: duplicate cell ids {sorted({i for i in ids if ids.count(i) > 1})}"
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", i) for i in ids), f"{path.name}: malformed cell ids"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
    assert not caught, f"{path.name}: nbformat warned: {[str(w.message) for w in caught]}"


@pytest.mark.parametrize("path", [p for p in NOTEBOOKS if "01" <= p.stem[:2] <= "09"], ids=lambda p: p.name)
def test_chapters_01_to_09_name_the_lab_that_follows(path: Path) -> None:
    """Each of chapters 01-09 names its lab (``exercises/NN_...``, a folder that exists) and says how to fetch
    it in JupyterLab's Assignments panel."""
    text = "\n".join(s for _, s in markdown(read(path)))
    labs = [m.group(1) for m in re.finditer(r"`exercises/(\d\d_[a-z0-9_]+)`", text)]
    ours = [lab for lab in labs if lab[:2] == path.stem[:2]]
    assert ours, f"{path.name}: no `exercises/{path.stem[:2]}_...` lab named"
    for lab in labs:
        assert (ROOT / "exercises" / lab).is_dir(), f"{path.name}: names exercises/{lab}, which does not exist"
    assert "Assignments" in text and "Fetch" in text, f"{path.name}: does not say how to fetch the lab (Assignments panel)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_every_try_it_section_answers_its_prompts(path: Path) -> None:
    """A "Try it" section's prompts get answers on demand: a ``<details><summary>Answer</summary>`` inside the
    section (from its heading to the next heading of the same or a higher level)."""
    text = "\n\n".join(s for _, s in markdown(read(path)))
    for m in re.finditer(r"^(#+)\s+(?:\d+\.\s*)?Try it.*$", text, re.M):
        level = len(m.group(1))
        end = re.compile(rf"^#{{1,{level}}}\s", re.M).search(text, m.end())
        section = text[m.end():end.start() if end else len(text)]
        assert "<details><summary>Answer</summary>" in section, f"{path.name}: '{m.group(0)}' has no answer on demand"


# --- executed (kernel) -------------------------------------------------------------------------

def executed_problems(path: Path, cache: Path) -> tuple[list[str], str]:
    """What ``make test`` reports about one chapter, executed through the run's shared cache: a failing
    cell (a claim that no longer holds fails its cell), the budgets, a figure, unbacked numbers, and the
    claims marked in the prose against those the code asserts. Returns the problems and a one-line header."""
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    from fp8lab.course.execute import execute_cached, figure_count

    try:  # executed here, or read back if the book test executed these bytes with these sources first
        run = execute_cached(path, cache, cell_timeout=CELL_TIMEOUT_S)
    except CellTimeoutError as e:
        return [f"a cell ran past {CELL_TIMEOUT_S} s (a stall, or a cell too slow for the course): {e}"], path.name
    except CellExecutionError as e:
        return [f"a cell failed:\n{str(e)[-3000:]}"], path.name
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
    problems += claim_mismatches(nb)
    return problems, f"{path.name} ({run.seconds:.1f} s wall, {run.cpu_seconds} s CPU)"


@pytest.mark.kernel
@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_chapter_runs_within_its_budget_and_backs_every_number(path: Path, course_cache: Path) -> None:
    """Executed once per run (shared with the book), every cell passes, including every ``claim(...)`` that
    backs a comparison sentence, and the claims the prose marks are exactly those the executed code asserts."""
    problems, header = executed_problems(path, course_cache)
    assert not problems, f"{header}:\n  " + "\n  ".join(problems)


@pytest.mark.kernel
def test_a_flipped_claim_fails_the_chapter_check(tmp_path: Path) -> None:
    """Chapter 01 says that `0.1 + 0.2` rounds to the same FP32 float as `0.3`. Change the cell so that its
    output no longer supports the sentence (compare with 0.4) and the check ``make test`` runs fails,
    naming the claim. The flipped chapter is cut to its import cell, the sentence and the cell (one small
    kernel run, not another chapter execution)."""
    nb = read(NOTEBOOK_DIR / "01_fp32.ipynb")
    by_id = {c.id: c for c in nb.cells}
    sentence = next(c for c in nb.cells if c.cell_type == "markdown" and "<!-- claim:01-fp32-sum-equal -->" in c.source)
    cell = next(c for c in nb.cells if c.cell_type == "code" and 'claim("01-fp32-sum-equal"' in c.source)
    assert "np.float32(0.3)" in cell.source
    nb.cells = [by_id[next(c.id for c in nb.cells if c.cell_type == "code")], sentence, cell]
    for c in nb.cells:                                   # the other claims of these cells stay marked and asserted
        for claim_id in chapter_claims({"cells": [c]})[1]:
            sentence.source += f" <!-- claim:{claim_id} -->"
    intact = tmp_path / "intact.ipynb"
    nbformat.write(nb, intact)
    cell.source = cell.source.replace("np.float32(0.3)", "np.float32(0.4)")
    flipped = tmp_path / "flipped.ipynb"
    nbformat.write(nb, flipped)
    problems, _ = executed_problems(intact, tmp_path / "cache")
    assert not [p for p in problems if "claim" in p or "failed" in p], problems
    problems, _ = executed_problems(flipped, tmp_path / "cache")
    assert any("claim 01-fp32-sum-equal does not hold" in p for p in problems), problems


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
