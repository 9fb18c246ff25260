"""The grading kernel: ipykernel started under resource limits, so untrusted code cannot take the machine down.

``fp8lab/labs/kernels/fp8lab-grader/kernel.json`` starts it as
``python -m fp8lab.labs.kernel --memory 3GiB --cpu-seconds 1200 --file-size 64MiB -f {connection_file}``
and ``nbgrader_config.py`` makes nbgrader use that kernel for the notebooks it executes outside
autograding (``nbgrader validate``, the Validate button: ``Execute.kernel_name``); autograding runs
answer cells in the sandbox instead (:mod:`fp8lab.labs.sandbox`). Before ipykernel starts, the launcher

* caps the address space (``RLIMIT_AS``): an allocation bomb gets a ``MemoryError`` in its own cell;
* caps CPU time (``RLIMIT_CPU``): a kernel that survives every interrupt is killed at the limit;
* caps the size of files it may write (``RLIMIT_FSIZE``) and disables core dumps;
* exits when the process that started it goes away (a grader stopped at its wall-clock limit), so no
  runaway kernel outlives its grading run;
* pins numpy/torch thread pools to one thread, so ``--jobs N`` graders do not oversubscribe the cores;
* ignores warnings in every cell: nbgrader scores a test cell that writes to stderr as zero, and a
  harmless numpy ``RuntimeWarning`` (a signalling NaN cast to float64, say) must not cost points.

The per-cell timeout is nbgrader's (``Execute.timeout`` in ``nbgrader_config.py``). Limits are per
process: this kernel is for a learner's own code, not for grading a class (``solutions/AUTHORING.md``,
section 0).

>>> parse_size("3GiB"), parse_size("64MiB"), parse_size("1000")
(3221225472, 67108864, 1000)
"""

from __future__ import annotations

import argparse
import os
import re
import warnings
from typing import Sequence

__all__ = ["parse_size", "apply_limits", "main"]

_UNITS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "ki": 2**10, "mi": 2**20, "gi": 2**30}
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")


def parse_size(text: str) -> int:
    """Bytes from ``3GiB``, ``512MiB``, ``2G`` or a plain number.

    >>> parse_size("2G")
    2000000000
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgG]i?)?[bB]?\s*", str(text))
    if not m:
        raise ValueError(f"expected a size such as 3GiB, 512MiB or 1000000, got {text!r}")
    return int(float(m.group(1)) * _UNITS[(m.group(2) or "").lower()])


def apply_limits(memory: int | None, cpu_seconds: int | None, file_size: int | None) -> None:
    """Set the resource limits of this process (and of everything it starts); None leaves one alone.

    >>> apply_limits(None, None, None)
    """
    import resource

    def lower(kind: int, value: int) -> None:
        soft, hard = resource.getrlimit(kind)
        new = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(kind, (new, new if hard == resource.RLIM_INFINITY else hard))

    if memory is not None:
        lower(resource.RLIMIT_AS, memory)
    if cpu_seconds is not None:
        lower(resource.RLIMIT_CPU, cpu_seconds)
    if file_size is not None:
        lower(resource.RLIMIT_FSIZE, file_size)
    if memory is not None or cpu_seconds is not None:
        lower(resource.RLIMIT_CORE, 0)


def main(argv: Sequence[str] | None = None) -> None:
    """Apply the limits given on the command line, then run ipykernel with the remaining arguments.

    >>> main(["--memory", "lots"])
    Traceback (most recent call last):
    ...
    SystemExit: 2
    """
    p = argparse.ArgumentParser(prog="python -m fp8lab.labs.kernel", description=__doc__.split("\n")[0])
    p.add_argument("--memory", type=parse_size, default=None, help="address-space cap, such as 3GiB")
    p.add_argument("--cpu-seconds", type=int, default=None, help="CPU-time cap of the kernel process")
    p.add_argument("--file-size", type=parse_size, default=None, help="largest file the kernel may write")
    args, rest = p.parse_known_args(argv)
    for var in THREAD_VARS:
        os.environ.setdefault(var, "1")
    apply_limits(args.memory, args.cpu_seconds, args.file_size)
    from ipykernel.kernelapp import IPKernelApp

    _exit_with_parent(os.getppid())
    app = IPKernelApp.instance()
    app.initialize(list(rest))
    app.shell.events.register("pre_run_cell", _quiet)
    app.start()


def _exit_with_parent(parent: int, every: float = 0.5) -> None:
    """Start a daemon thread that ends this process as soon as its parent ``parent`` is gone."""
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        os._exit(3)

    threading.Thread(target=watch, name="fp8lab-parent-watch", daemon=True).start()


def _quiet(*_info: object) -> None:
    """Before each cell: warnings are not shown (they would go to stderr, which nbgrader scores as a failure)."""
    warnings.simplefilter("ignore")


if __name__ == "__main__":  # pragma: no cover - run by Jupyter as a kernel
    main()
