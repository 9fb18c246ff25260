"""``python -m fp8lab.interview [FILE ...]``: print every problem of the bank (or of the named data files); exit 1 if any.

>>> main(["fp8.toml"])  # doctest: +ELLIPSIS
fp8.toml: ... questions, no problems
0
"""

from __future__ import annotations

import sys
from typing import Sequence

from .bank import DATA_DIR, read_file
from .bank import cross_problems
from .checks import check_question, verify


def main(argv: Sequence[str] | None = None) -> int:
    """Verify the whole bank, or the given data files (names in ``data/`` or paths), and print the problems.

    >>> main(["no-such-file.toml"])  # doctest: +ELLIPSIS
    no-such-file.toml: cannot read no-such-file.toml: [Errno 2] No such file or directory: ...
    no-such-file.toml: 0 questions, 1 problem
    1
    """
    names = list(sys.argv[1:] if argv is None else argv)
    if not names:
        problems = verify()
        label = "bank"
        count = None
    else:
        problems, count = [], 0
        label = ", ".join(names)
        for name in names:
            path = DATA_DIR / name if "/" not in name and not name.startswith(".") else name
            qs, load = read_file(path)
            count += len(qs)
            problems += load + [p for q in qs for p in check_question(q)] + cross_problems(qs)
    for p in problems:
        print(p)
    if count is None:
        from .bank import read_bank
        count = len(read_bank()[0])
    print(f"{label}: {count} questions, {len(problems) or 'no'} problem{'s' if len(problems) != 1 else ''}")
    return 1 if problems else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
