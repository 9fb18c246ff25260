"""Execute a course chapter headless, cell by cell, timing each cell, without the widget stall.

**The stall.** Executed with nbclient, a cell that builds ipywidgets (``interact``, a bit flipper)
sometimes waited for the whole cell timeout and then went on as if nothing had happened: one
chapter took 312 s instead of 12 (300 s timeout + 12 s), another sat for a full 600 s timeout. The
kernel was not busy: its ``execute_reply`` had arrived. nbclient waits for that reply with one
``await shell_channel.get_msg(timeout=<the whole cell timeout>)``, a ``zmq.asyncio`` poll on the
shell socket's edge-triggered file descriptor, while a second task drains the iopub socket, which
a widget cell floods with comm messages. Now and then the wake-up for the shell socket is lost;
the poll only returns at its timeout, when pyzmq checks the socket once more and finds the reply
waiting. A notebook of 150 ``interact`` cells reproduces it (7% of the cells, each exactly the
timeout). :func:`execute_chapter` polls the shell channel in short slices instead (0.2 s), so a lost
wake-up costs at most one slice, and the cell timeout still applies to the sum.

**Threads.** On a machine with two cores shared with other jobs (and under ``pytest -n 2``, two
kernels at once), torch's two OpenMP threads and numpy's OpenBLAS threads in every kernel
oversubscribe the cores; a parallel region then waits for a descheduled thread, and small torch
operations ran 10-50x slower in measurements here. ``threads=1`` (the tests' default) runs each
kernel single-threaded.

**Executed once, read by many.** :func:`execute_cached` runs a chapter through a cache folder that
several processes share (the test workers, the book build): the first to ask executes it under a
file lock and writes the notebook and its timings atomically; the others wait for it and read them.
An entry is named by :func:`cache_key`: the notebook's bytes, :func:`source_digest` (every file of the
library and of ``bench/``, whose scripts and recorded results chapters read) and the runner's
settings, so nothing executed from an older source is ever read back.

>>> from fp8lab.course.execute import figure_count
>>> figure_count({"cells": [{"cell_type": "code", "outputs": [{"output_type": "display_data", "data": {"image/png": ""}}]}]})
1
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from queue import Empty
from typing import Any, Mapping, Sequence

__all__ = ["ExecutedChapter", "execute_chapter", "execute_cached", "cache_key", "source_digest", "run_on_their_own",
           "figure_count", "NO_BF16_MATMUL", "EDITION_FIGURES", "STARTUP", "SHELL_POLL_SLICE_S"]

#: how long one poll of the shell channel waits before it looks again (bounds the cost of a lost wake-up)
SHELL_POLL_SLICE_S = 0.2

#: Kernel start-up code that makes any torch matmul on bfloat16 tensors raise: its CPU speed depends
#: on the processor (0.2x float32's time on one machine here, 441x on an AVX2-only one), so no
#: chapter may use one. It installs itself as soon as a cell has imported torch.
NO_BF16_MATMUL = r'''
def _fp8lab_install_bf16_guard(*_):
    import sys
    torch = sys.modules.get("torch")
    if torch is None or getattr(sys, "_fp8lab_bf16_guard", False):
        return
    names = {"matmul", "mm", "bmm", "addmm", "addbmm", "baddbmm", "einsum", "linear", "mv", "addmv", "dot",
             "vdot", "inner", "tensordot", "chain_matmul", "__matmul__", "__rmatmul__"}

    def tensors(obj):
        if isinstance(obj, torch.Tensor):
            yield obj
        elif isinstance(obj, (list, tuple)):
            for o in obj:
                yield from tensors(o)

    class NoBF16Matmul(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if getattr(func, "__name__", "") in names and any(
                    t.dtype == torch.bfloat16 for t in tensors(list(args) + list(kwargs.values()))):
                raise RuntimeError(f"torch bfloat16 {func.__name__} in a course chapter: its CPU speed depends on "
                                   "the processor (441x float32 on AVX2-only machines); round through "
                                   "fp8lab's codec and multiply in float32 instead")
            return func(*args, **kwargs)

    NoBF16Matmul().__enter__()
    sys._fp8lab_bf16_guard = True


get_ipython().events.register("post_run_cell", _fp8lab_install_bf16_guard)
'''


# --- issue 23 (the Chinese edition): one execution, both editions' figures ---------------------------------
#: Kernel start-up code that renders every figure shown a second time with its texts in Chinese and stores
#: that PNG in the output's metadata (:mod:`fp8lab.course.figtext`), so the Chinese edition needs no second run.
#: Its first line names the figure catalogue's hash, so that the cache key changes with the catalogue.
EDITION_FIGURES = (f"# notebooks/zh/figures.toml {__import__('fp8lab.course.figtext').course.figtext.catalogue_digest()}\n"
                   "import fp8lab.course.figtext as _fp8lab_figtext\n_fp8lab_figtext.install(get_ipython())\n")
#: what every kernel of the course runs at start (the default ``startup`` below)
STARTUP: tuple[str, ...] = (NO_BF16_MATMUL, EDITION_FIGURES)
# --- end issue 23 ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExecutedChapter:
    """An executed notebook (outputs filled in), the seconds each cell took, the total, and the kernel's CPU time.

    ``cpu_seconds`` is the CPU time (user + system) the kernel process used, read from ``/proc`` where
    there is one (None elsewhere): on a machine shared with other jobs it measures the chapter's own
    work, which the wall time does not.
    """

    path: Path
    notebook: Any
    cell_seconds: tuple[float, ...]
    wall_seconds: float
    cpu_seconds: float | None = None

    @property
    def seconds(self) -> float:
        """Seconds the cells took together (kernel start-up not counted).

        >>> ExecutedChapter(Path("x.ipynb"), None, (1.0, 2.5), 5.0).seconds
        3.5
        """
        return float(sum(self.cell_seconds))

    def slowest(self, n: int = 3) -> list[tuple[int, float]]:
        """The ``n`` slowest cells as (index, seconds).

        >>> ExecutedChapter(Path("x.ipynb"), None, (1.0, 2.5, 0.1), 5.0).slowest(2)
        [(1, 2.5), (0, 1.0)]
        """
        return sorted(enumerate(self.cell_seconds), key=lambda t: -t[1])[:n]


def figure_count(nb: Mapping[str, Any]) -> int:
    """Number of figures (PNG or SVG outputs) in an executed notebook.

    >>> figure_count({"cells": []})
    0
    """
    return sum(1 for c in nb.get("cells", []) if c.get("cell_type") == "code" for o in c.get("outputs", [])
               if {"image/png", "image/svg+xml"} & set(o.get("data", {})))


def _cpu_seconds(pid: int | None) -> float | None:
    """User + system CPU seconds of process ``pid`` (Linux ``/proc``), or None when unavailable."""
    if pid is None:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def _kernel_pid(client: Any) -> int | None:
    provisioner = getattr(getattr(client, "km", None), "provisioner", None)
    return getattr(provisioner, "pid", None)


def _poll_in_slices(channel: Any) -> None:
    """Make ``channel.get_msg(timeout=T)`` poll in slices of :data:`SHELL_POLL_SLICE_S` (the stall fix)."""
    original = channel.get_msg

    async def get_msg(timeout: float | None = None) -> dict:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = SHELL_POLL_SLICE_S if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                return await original(timeout=min(SHELL_POLL_SLICE_S, left))
            except Empty:
                if deadline is not None and time.monotonic() >= deadline:
                    raise

    channel.get_msg = get_msg


def _kernel_env(threads: int | None) -> dict[str, str]:
    env = dict(os.environ)
    if threads is not None:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(int(threads))
    return env


def _startup_arguments(tmp: str, startup: Sequence[str]) -> list[str]:
    files = []
    for k, code in enumerate(startup):
        f = Path(tmp) / f"startup_{k}.py"
        f.write_text(code)
        files.append(str(f))
    return ["--IPKernelApp.exec_files=" + repr(files)] if files else []


def execute_chapter(path: "str | os.PathLike[str]", *, cell_timeout: int = 60, threads: int | None = 1,
                    cwd: "str | os.PathLike[str] | None" = None, startup: Sequence[str] = STARTUP,
                    kernel_name: str = "python3") -> ExecutedChapter:
    """Run a notebook top to bottom in a fresh kernel and return it executed, with each cell's time.

    ``cell_timeout`` bounds every cell (seconds); ``threads`` sets ``OMP_NUM_THREADS`` and friends
    for the kernel (None keeps the environment's); ``startup`` is code the kernel runs before the
    first cell. Raises nbclient's ``CellExecutionError`` naming the failing cell, or
    ``CellTimeoutError``.
    """
    import tempfile

    import nbformat
    from nbclient import NotebookClient

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="fp8lab-startup-") as tmp:
        client = NotebookClient(nb, timeout=int(cell_timeout), kernel_name=kernel_name,
                                extra_arguments=_startup_arguments(tmp, startup),
                                resources={"metadata": {"path": str(Path(cwd) if cwd else path.parent)}})
        seconds = [0.0] * len(nb.cells)
        t0 = time.monotonic()
        with client.setup_kernel(env=_kernel_env(threads)):
            _poll_in_slices(client.kc.shell_channel)
            for index, cell in enumerate(nb.cells):
                started = time.monotonic()
                client.execute_cell(cell, index)
                seconds[index] = time.monotonic() - started
            cpu = _cpu_seconds(_kernel_pid(client))
        return ExecutedChapter(path, nb, tuple(seconds), time.monotonic() - t0, cpu)


#: the folders whose files a chapter's results depend on besides its own bytes (relative to the repository)
SOURCE_FOLDERS = ("fp8lab", "bench")
_SKIP_SUFFIXES = (".pyc", ".pyo", ".so", ".o")


def source_digest(root: "str | os.PathLike[str] | None" = None) -> str:
    """SHA-256 of every file under :data:`SOURCE_FOLDERS` of ``root`` (default: this checkout), path and bytes.

    Compiled files (``__pycache__``, ``.so``) are left out: they follow from the sources.

    >>> len(source_digest()) == 64 and source_digest() == source_digest()
    True
    """
    root = Path(root) if root is not None else Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    for folder in SOURCE_FOLDERS:
        base = root / folder
        files = sorted(p for p in base.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                       and not p.name.endswith(_SKIP_SUFFIXES)) if base.is_dir() else []
        for f in files:
            digest.update(f.relative_to(root).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(f.read_bytes()).digest())
    return digest.hexdigest()


def cache_key(path: "str | os.PathLike[str]", *, cell_timeout: int = 60, threads: int | None = 1,
              cwd: "str | os.PathLike[str] | None" = None, startup: Sequence[str] = STARTUP,
              kernel_name: str = "python3", sources: str | None = None) -> str:
    """The name of a chapter's cache entry: its bytes, the library's sources and every setting of the run.

    >>> import tempfile, nbformat
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     p = Path(tmp) / "a.ipynb"
    ...     nbformat.write(nbformat.v4.new_notebook(), p)
    ...     k = cache_key(p, sources="s")
    ...     same = k == cache_key(p, sources="s")
    ...     other = {cache_key(p, sources="t"), cache_key(p, sources="s", cell_timeout=30)}
    ...     nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")]), p)
    ...     edited = k == cache_key(p, sources="s")
    >>> same, k in other, edited
    (True, False, False)
    """
    path = Path(path)
    settings = json.dumps({"cell_timeout": int(cell_timeout), "threads": threads, "kernel_name": kernel_name,
                           "cwd": str(Path(cwd).resolve() if cwd else path.resolve().parent),
                           "startup": [hashlib.sha256(code.encode()).hexdigest() for code in startup]}, sort_keys=True)
    digest = hashlib.sha256()
    for part in (path.read_bytes(), (sources if sources is not None else source_digest()).encode(), settings.encode()):
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()


def _write_atomically(dest: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", dir=dest.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _read_entry(path: Path, notebook: Path, timings: Path) -> ExecutedChapter | None:
    import nbformat

    if not (notebook.is_file() and timings.is_file()):
        return None
    t = json.loads(timings.read_text(encoding="utf-8"))
    return ExecutedChapter(path, nbformat.read(notebook, as_version=4), tuple(t["cell_seconds"]), t["wall_seconds"],
                           t["cpu_seconds"])


def execute_cached(path: "str | os.PathLike[str]", cache: "str | os.PathLike[str]", *, cell_timeout: int = 60,
                   threads: int | None = 1, cwd: "str | os.PathLike[str] | None" = None,
                   startup: Sequence[str] = STARTUP, kernel_name: str = "python3",
                   wait: bool = True) -> ExecutedChapter | None:
    """:func:`execute_chapter` through the cache folder ``cache``, shared by any number of processes.

    The entry is ``<stem>-<key>.ipynb`` with the timings in ``<stem>-<key>.json`` (:func:`cache_key`).
    The first process to ask executes the chapter while it holds ``<stem>-<key>.lock`` and writes
    both files atomically (the notebook first, the timings last); a process that asks meanwhile waits
    for the lock and reads them, or with ``wait=False`` gets None at once. A chapter that raises
    leaves no entry (the next process to ask runs it again and sees the error itself). The result's
    ``path`` is ``path``, its timings those of the one execution.
    """
    from filelock import FileLock, Timeout

    path, cache = Path(path), Path(cache)
    cache.mkdir(parents=True, exist_ok=True)
    key = cache_key(path, cell_timeout=cell_timeout, threads=threads, cwd=cwd, startup=startup, kernel_name=kernel_name)
    stem = f"{path.stem}-{key[:24]}"
    notebook, timings = cache / f"{stem}.ipynb", cache / f"{stem}.json"
    done = _read_entry(path, notebook, timings)
    if done is not None:
        return done
    lock = FileLock(str(cache / f"{stem}.lock"))
    try:
        lock.acquire(timeout=-1 if wait else 0)
    except Timeout:
        return None
    try:
        done = _read_entry(path, notebook, timings)
        if done is not None:
            return done
        import nbformat

        run = execute_chapter(path, cell_timeout=cell_timeout, threads=threads, cwd=cwd, startup=startup,
                              kernel_name=kernel_name)
        _write_atomically(notebook, nbformat.writes(run.notebook))
        _write_atomically(timings, json.dumps({"cell_seconds": list(run.cell_seconds), "wall_seconds": run.wall_seconds,
                                               "cpu_seconds": run.cpu_seconds, "source": str(path.resolve()),
                                               "key": key, "pid": os.getpid()}))
        return run
    finally:
        lock.release()


def run_on_their_own(path: "str | os.PathLike[str]", indices: Sequence[int], *, first: Sequence[int] | None = None,
                     cell_timeout: int = 60, threads: int | None = 1,
                     startup: Sequence[str] = STARTUP) -> dict[int, str | None]:
    """Run each cell of ``indices`` as after "restart kernel and run from here": an empty namespace, then
    the ``first`` cells (default: the first code cell, the chapter's imports), then the cell. Returns,
    per index, None or the error it raised.

    One kernel serves all cells: ``%reset -f`` empties the namespace between them (modules stay
    imported, as they would not after a real restart; what is checked is that a cell needs no
    object that a cell above it made).
    """
    import tempfile

    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    if first is None:
        first = [next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")]
    results: dict[int, str | None] = {}
    with tempfile.TemporaryDirectory(prefix="fp8lab-startup-") as tmp:
        client = NotebookClient(nb, timeout=int(cell_timeout), kernel_name="python3",
                                extra_arguments=_startup_arguments(tmp, startup),
                                resources={"metadata": {"path": str(path.parent)}})
        with client.setup_kernel(env=_kernel_env(threads)):
            _poll_in_slices(client.kc.shell_channel)
            for index in indices:
                try:
                    client.execute_cell(nbformat.v4.new_code_cell("%reset -f"), 0)
                    for k in first:
                        client.execute_cell(nbformat.v4.new_code_cell(nb.cells[k].source), k)
                    client.execute_cell(nbformat.v4.new_code_cell(nb.cells[index].source), index)
                    results[index] = None
                except CellExecutionError as e:
                    results[index] = f"{e.ename}: {e.evalue}"
    return results
