"""The ``fp8lab`` command: explain a value, list a format's values, compare formats, size KV caches.

>>> main(["explain", "0.8125", "--format", "e4m3"])  # doctest: +ELLIPSIS
0.8125 in float8_e4m3fn (1 sign, 4 exponent, 3 mantissa bits, bias 7)
...
0
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

import numpy as np

from .codec import decode, encode
from .anatomy import bit_string, code_kind, explain
from .cli_types import CliParser, run_command
from .formats import FloatFormat
from .labs.cli import register as register_labs
from .registry import get_format, list_formats
from .tables import format_table

__all__ = ["main", "formats_table", "values_table"]


def formats_table() -> tuple[list[str], list[list[object]]]:
    """Headers and rows comparing every registered format (all numbers computed from parameters).

    >>> headers, rows = formats_table()
    >>> rows[3][:5]
    ['float8_e4m3fn', 8, 'E4M3', 7, 448.0]
    """
    headers = ["format", "bits", "layout", "bias", "max", "min normal", "min subnormal", "epsilon",
               "decades", "decades w/ subn.", "inf", "NaN", "finite values"]
    rows = []
    for f in list_formats():
        if isinstance(f, FloatFormat):
            layout, bias = f"{'' if f.signed else 'U'}E{f.exponent_bits}M{f.mantissa_bits}", f.bias
        else:
            layout, bias = f"{'INT' if f.signed else 'UINT'}{f.bits}", "-"
        rows.append([f.name, f.bits, layout, bias, f.max, f.min_normal, f.min_subnormal, f.epsilon,
                     round(f.dynamic_range, 2), round(f.dynamic_range_subnormal, 2), f.has_inf, f.has_nan, f.num_finite])
    return headers, rows


def values_table(name: str) -> tuple[list[str], list[list[object]]]:
    """Every code of a format up to 8 bits (or its non-negative codes up to 16 bits) with its value.

    >>> headers, rows = values_table("fp4")
    >>> rows[7]
    ['0x7', '0 11 1', 6.0, 'normal']
    """
    f = get_format(name)
    if f.bits > 16:
        raise ValueError(f"{f.name} has 2^{f.bits} codes; `values` lists formats up to 16 bits")
    codes = np.arange(2**f.bits if f.bits <= 8 else 2 ** (f.bits - 1))
    values = decode(codes.astype(f.code_dtype), f)
    rows = []
    width = (f.bits + 3) // 4
    for c, v in zip(codes.tolist(), values.tolist()):
        kind = code_kind(c, f) if isinstance(f, FloatFormat) else "integer"
        rows.append([f"0x{c:0{width}X}", bit_string(c, f), v, kind])
    return ["code", "bits", "value", "kind"], rows


def _cmd_explain(args: argparse.Namespace) -> int:
    for fmt in args.format:
        print(explain(args.value, fmt, saturate=args.saturate))
        print()
    return 0


def _cmd_values(args: argparse.Namespace) -> int:
    headers, rows = values_table(args.format)
    print(format_table(headers, rows))
    return 0


def _cmd_formats(args: argparse.Namespace) -> int:
    headers, rows = formats_table()
    print(format_table(headers, rows))
    return 0


def _cmd_encode(args: argparse.Namespace) -> int:
    x = np.array(args.values, dtype=np.float64)
    codes = encode(x, args.format, saturate=args.saturate, rounding=args.rounding)
    back = decode(codes, args.format)
    f = get_format(args.format)
    width = (f.bits + 3) // 4
    rows = [[v, f"0x{int(c):0{width}X}", float(b)] for v, c, b in zip(x.tolist(), codes.tolist(), back.tolist())]
    print(format_table(["x", "code", "value"], rows))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand (sizing commands included when available).

    >>> sorted(build_parser()._subparsers._group_actions[0].choices)[:3]
    ['encode', 'explain', 'fit']
    """
    p = CliParser(prog="fp8lab", description="Low-precision number formats, from the bits up.")
    sub = p.add_subparsers(dest="command", required=True)
    e = sub.add_parser("explain", help="sign, exponent and mantissa of a value, with the arithmetic")
    e.add_argument("value", type=float)
    e.add_argument("--format", "-f", action="append", help="format name (repeatable); default e4m3 and e5m2")
    e.add_argument("--saturate", action="store_true", help="clamp overflow to +-max instead of NaN/inf")
    e.set_defaults(func=_cmd_explain)
    v = sub.add_parser("values", help="every code of a format and its value")
    v.add_argument("format", help="format name, e.g. e4m3 or bf16")
    v.set_defaults(func=_cmd_values)
    f = sub.add_parser("formats", help="one table comparing every registered format")
    f.set_defaults(func=_cmd_formats)
    c = sub.add_parser("encode", help="encode numbers and show the codes and the values they decode to")
    c.add_argument("values", type=float, nargs="+")
    c.add_argument("--format", "-f", default="e4m3")
    c.add_argument("--rounding", default="nearest")
    c.add_argument("--saturate", action="store_true")
    c.set_defaults(func=_cmd_encode)
    try:
        from .sizing.cli import register
    except ImportError:  # pragma: no cover - sizing is part of the package
        pass
    else:
        register(sub)
    from .interview.cli import register as register_quiz
    register_quiz(sub)
    __import__("fp8lab.train.cli", fromlist=["register"]).register(sub)  # fp8lab train (torch only when it runs)
    register_labs(sub)
    return p


def _prepare(args: argparse.Namespace) -> None:
    if getattr(args, "command", None) == "explain" and not args.format:
        args.format = ["e4m3", "e5m2"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default: the process arguments) and return the exit code.

    A bad argument exits with code 2 (SystemExit) after one line on stderr; an error while the
    command runs prints one line too (``fp8lab <command>: error: ...``) and returns 2, or 1 for a
    bug (``FP8LAB_DEBUG=1`` shows its traceback); Ctrl-C returns 130 and a closed pipe 141.

    >>> main(["values", "fp4"])  # doctest: +ELLIPSIS
    code  bits    value  kind
    ...
    0
    >>> main(["values", "fp9"])  # stderr: fp8lab values: error: unknown format 'fp9'; known names: ...
    2
    """
    return run_command(build_parser, argv, prepare=_prepare)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
