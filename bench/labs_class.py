"""Grade a class of 30 through the documented commands, with the sandbox on, and time each lab.

    .venv/bin/python bench/labs_class.py [--jobs 2] [--labs 01_decode_exmy ...] [--json bench/results/labs_class.json]

Six submissions per lab (the five standard ones of ``fp8lab.labs.submissions.standard``: full marks, blank,
partial, two cheats; plus ``adversarial``'s notebook whose test cells were emptied), for labs 01, 02, 03, 07 and 08:
the class the README's "Scale" paragraph quotes. Each lab is collected and autograded as an instructor would
(``fp8lab labs collect`` and ``fp8lab labs autograde LAB --jobs N`` in a fresh grading folder), and every
student's total is checked against the points its submission must get, so a fast but wrong run cannot pass.
Prints the seconds per lab and in all, with the machine, and writes them as strict JSON.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from fp8lab.labs import submissions
from fp8lab.labs.catalog import get_lab
from fp8lab.labs.grading import prepare_scratch
from fp8lab.machine import describe
from fp8lab.train.output import atomic_write, finite_json

LABS = ("01_decode_exmy", "02_bf16_rounding", "03_encode_e4m3", "07_loss_scaler", "08_memory_calculator")


def fp8lab(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run the ``fp8lab`` command line of this interpreter with ``env`` added."""
    return subprocess.run([sys.executable, "-m", "fp8lab.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **env})


def grade_lab(name: str, jobs: int, tmp: Path) -> dict:
    """Collect and autograde one lab's six submissions; the seconds taken and whether every total was right."""
    lab = get_lab(name)
    subs = submissions.standard(lab) + [next(s for s in submissions.adversarial(lab) if s.name == "edited_tests")]
    grading, inbox = tmp / name / "grading", tmp / name / "inbox"
    grading.mkdir(parents=True)
    inbox.mkdir()
    shutil.copyfile(prepare_scratch(lab, tmp / name / "scratch").gradebook, grading / "gradebook.db")
    for s in subs:
        nbformat.write(s.notebook, str(inbox / f"{s.name}.ipynb"))
    env = {"FP8LAB_GRADING_DIR": str(grading)}
    start = time.perf_counter()
    for args in (("labs", "collect", name, str(inbox)), ("labs", "autograde", name, "--jobs", str(jobs))):
        out = fp8lab(*args, env=env)
        if out.returncode != 0:
            raise SystemExit(f"bench/labs_class.py: `fp8lab {' '.join(args)}` failed:\n{out.stdout}{out.stderr}")
    seconds = time.perf_counter() - start
    if fp8lab("labs", "export", env=env).returncode != 0:
        raise SystemExit(f"bench/labs_class.py: `fp8lab labs export` failed for {name}")
    with open(grading / "grades.csv", newline="") as f:
        got = {r["student"]: float(r["score"]) for r in csv.DictReader(f) if r["lab"] == name}
    want = {s.name: s.total for s in subs}
    return {"lab": name, "submissions": len(subs), "seconds": round(seconds, 1), "scores_right": got == want,
            "wrong": {k: [got.get(k), v] for k, v in want.items() if got.get(k) != v}}


def main(argv: list[str] | None = None) -> int:
    """Time the class; exit 1 if any student's total is wrong."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--labs", nargs="+", default=list(LABS))
    ap.add_argument("--json", type=Path, default=None, help="write the results here (strict JSON)")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="fp8lab-class-") as tmp:
        start = time.perf_counter()
        for name in args.labs:
            rows.append(grade_lab(name, args.jobs, Path(tmp)))
            r = rows[-1]
            print(f"{name}: {r['submissions']} submissions in {r['seconds']:.1f} s"
                  f"{'' if r['scores_right'] else '  WRONG SCORES ' + str(r['wrong'])}", flush=True)
        total = time.perf_counter() - start
    n = sum(r["submissions"] for r in rows)
    load = os.getloadavg()[0]
    print(f"class of {n}: {total:.1f} s with --jobs {args.jobs} (grading {sum(r['seconds'] for r in rows):.1f} s; "
          f"load average at the end {load:.2f})")
    if args.json:
        atomic_write(args.json, finite_json({"command": "python bench/labs_class.py " + " ".join(argv or sys.argv[1:]),
                                             "machine": describe(), "jobs": args.jobs, "labs": rows,
                                             "total_seconds": round(total, 1), "load_average_end": load}))
    return 0 if all(r["scores_right"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
