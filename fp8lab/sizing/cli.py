"""The ``kv``, ``fit`` and ``memory`` subcommands of the ``fp8lab`` command line.

``register(subparsers)`` adds them to an argparse subparsers object; each sets ``func`` to a
handler that prints a table to stdout and returns an exit code; bad input (an unknown model, say)
raises, and ``fp8lab.cli.main`` turns that into a message on stderr and exit code 2.

    fp8lab kv --model llama-3-70b --seq 4096 --batch 1            # a table over dtypes
    fp8lab kv --model deepseek-v3 --seq 131072 --dtype fp8 --scales block --block-size 128
    fp8lab fit --model llama-3-70b --gpu h100 --weights-dtype fp8 --kv-dtype fp8
    fp8lab memory --params 7e9                                    # a table over memory plans
    fp8lab memory --params 7.5e9 --plan mixed-fp16 --num-gpus 64 --zero-stage 1

>>> import argparse
>>> parser = argparse.ArgumentParser(prog="fp8lab")
>>> register(parser.add_subparsers(dest="command"))
>>> args = parser.parse_args(["memory", "--params", "7B", "--plan", "fp32"])
>>> args.func(args)  # doctest: +ELLIPSIS
Training memory for 7.00B parameters, memory plan fp32, per GPU...
0
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from typing import Sequence

from ..cli_types import MAX_WHOLE, fraction, positive_int
from ..registry import get_format
from ..tables import format_table
from .fit import fit_report
from .gpus import get_gpu, list_gpus
from .kvcache import SCALE_GRANULARITIES, kv_cache_table, kv_elements_per_token
from .memory import list_memory_plans, training_memory
from .models import get_model, list_models
from .params import param_count
from .units import GB, GiB

__all__ = ["register", "parse_count", "positive_int", "print_table"]

_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}


def parse_count(text: str) -> int:
    """A parameter count from text: ``7e9``, ``7B``, ``70b``, ``1.5T``, ``175000000000``.

    >>> parse_count("7B"), parse_count("1.5t"), parse_count("7e9")
    (7000000000, 1500000000000, 7000000000)
    """
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmbgt]?)\s*", str(text).lower())
    if not m:
        raise argparse.ArgumentTypeError(f"expected a count such as 7e9, 7B or 70b, got {text!r}")
    value = float(m.group(1)) * _SUFFIX[m.group(2)]
    if not math.isfinite(value) or value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive count, got {text!r}")
    if not float(value).is_integer():
        raise argparse.ArgumentTypeError(f"a parameter count is a whole number (7e9, 7.5B), got {text!r}")
    if value > MAX_WHOLE:
        raise argparse.ArgumentTypeError(f"expected a count up to 2^63 - 1, got {text!r}")
    return int(value)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]], file=None) -> None:
    """Print rows under headers with :func:`fp8lab.tables.format_table`, numbers right-aligned with separators.

    >>> print_table(["dtype", "bytes"], [["bf16", 2048], ["fp8", 1024]])
    dtype  bytes
    -----  -----
    bf16   2,048
    fp8    1,024
    """
    print(format_table(headers, rows, align="auto", cell_text=_cell), file=file or sys.stdout)


def _cell(c: object) -> str:
    if isinstance(c, str):
        return c
    if isinstance(c, int):
        return f"{c:,}"
    return f"{c:,.3f}"


def _whole(x: float) -> "int | float":
    return int(x) if float(x).is_integer() else x


def _dtypes(values: list[str] | None) -> list[str]:
    if not values:
        return ["float32", "bf16", "fp8", "e5m2", "fp4"]
    names = [d.strip() for v in values for d in v.split(",")]
    if not all(names):
        raise ValueError(f"--dtype takes format names separated by commas (e.g. bf16,fp8), got "
                         f"{', '.join(repr(v) for v in values)}")
    return names


def _describe(model) -> str:
    c = get_model(model)
    if c.attention == "mla":
        shape = f"MLA, latent {c.kv_lora_rank} + RoPE key {c.qk_rope_head_dim}"
    else:
        shape = f"{c.attention.upper()}, {c.heads} query / {c.kv_heads} KV heads of head_dim {c.head_dim}"
    window = f", sliding window {c.sliding_window:,} tokens" if c.sliding_window else ""
    return f"{c.name}: {c.layers} layers, {shape}{window}; {kv_elements_per_token(c):,} elements per token per layer"


def _kv(args: argparse.Namespace) -> int:
    """KV-cache size over dtypes."""
    scales = None if args.scales == "none" else args.scales
    get_format(args.scale_dtype)  # an unknown name is refused even where no scales are stored
    rows = kv_cache_table(args.model, args.seq, args.batch, _dtypes(args.dtype), scale_granularity=scales,
                          scale_dtype=args.scale_dtype, block_size=args.block_size)
    print(_describe(args.model))
    r0 = rows[0]
    print(f"KV cache (K and V, all layers) for {args.seq:,} tokens x batch {args.batch}"
          + (f" ({r0['tokens_cached']:,} tokens kept by the window)" if r0["tokens_cached"] != args.seq else "")
          + (f"; {scales} scales in {args.scale_dtype} for formats under 16 bits" if scales else ""))
    print("GB = 10^9 bytes, GiB = 2^30 bytes\n")
    print_table(["dtype", "bits", "bytes/token/layer", "bytes/token", "scale bytes", "total bytes", "GB", "GiB"],
                [[r["dtype"], r["bits"], _whole(r["bytes_per_token_per_layer"]), _whole(r["bytes_per_token"]),
                  r["scale_bytes"],
                  r["total_bytes"], r["total_GB"], r["total_GiB"]] for r in rows])
    return 0


def _fit(args: argparse.Namespace) -> int:
    """What fits on a GPU: one report, or a table over all GPUs when --gpu is not given."""
    common = dict(seq_len=args.seq, batch=args.batch, weights_dtype=args.weights_dtype, kv_dtype=args.kv_dtype,
                  num_gpus=args.num_gpus, utilization=args.utilization)
    if args.gpu is not None:  # compute first, so that bad arguments print nothing but the error
        g = get_gpu(args.gpu)
        r = fit_report(args.model, g, **common)
        print(_describe(args.model))
        smi = f"; nvidia-smi reports {g.nvidia_smi_total_mib:,} MiB" if g.nvidia_smi_total_mib else ""
        print(f"{g.full_name}: sold as {g.marketed}, which is {g.memory_gib:g} GiB = {g.memory_gb:.2f} GB{smi}")
        print(f"budget = {args.num_gpus} x {g.budget_source} x utilization {args.utilization:g}; "
              "GB = 10^9 bytes, GiB = 2^30 bytes\n")
        print_table(["item", "value"], r.rows())
        return 0
    rows = []
    for name in list_gpus():
        r = fit_report(args.model, name, **common)
        ctx = "inf" if r.max_context == math.inf else r.max_context
        rows.append([name, r.budget_bytes / GB, r.budget_bytes / GiB, r.weights_bytes / GB,
                     "yes" if r.fits else "no", ctx, r.max_batch])
    limit = get_model(args.model).max_position_embeddings
    print(_describe(args.model))
    print(f"weights in {args.weights_dtype}, KV cache in {args.kv_dtype}, {args.seq:,} tokens x batch {args.batch}, "
          f"{args.num_gpus} GPU(s) each, utilization {args.utilization:g}; budget: the driver's total where recorded; "
          "GB = 10^9 bytes, GiB = 2^30 bytes")
    print("max context is what memory allows; the model itself was trained for "
          + (f"{limit:,} tokens (max_position_embeddings)\n" if limit else "a length its preset does not record\n"))
    print_table(["gpu", "budget GB", "budget GiB", "weights GB", "fits", "max context", "max batch"], rows)
    return 0


def _memory(args: argparse.Namespace) -> int:
    """Training memory per parameter by memory plan."""
    if args.model:
        params = param_count(args.model).total
        what = f"{args.model} ({params / 1e9:.2f}B parameters)"
    else:
        params, what = args.params, f"{args.params / 1e9:.2f}B parameters"
    zero = f", ZeRO-{args.zero_stage} over {args.num_gpus} GPUs" if args.zero_stage else \
        (f", {args.num_gpus} GPUs (replicated)" if args.num_gpus > 1 else "")
    if args.plan is not None:
        m = training_memory(params, args.plan, num_gpus=args.num_gpus, zero_stage=args.zero_stage)
        print(f"Training memory for {what}, memory plan {m.plan.name}{zero}, per GPU; activations not included")
        print(f"{m.plan.description}\nsource: {m.plan.source}\nGB = 10^9 bytes, GiB = 2^30 bytes\n")
        print_table(["component", "dtype", "kind", "bytes/param", "bytes", "GB", "GiB"],
                    [[r["component"], r["dtype"], r["kind"], r["bytes_per_param"], r["bytes"], r["GB"], r["GiB"]]
                     for r in m.rows()])
        return 0
    rows = []
    for name in list_memory_plans():
        m = training_memory(params, name, num_gpus=args.num_gpus, zero_stage=args.zero_stage)
        rows.append([name, m.plan.bytes_per_param, m.bytes_per_param, m.total_bytes, m.gb, m.gib])
    print(f"Training memory for {what}{zero}, per GPU: weights, gradients and optimizer states "
          "(activations not included); GB = 10^9 bytes, GiB = 2^30 bytes\n")
    print_table(["plan", "bytes/param", "bytes/param/GPU", "bytes/GPU", "GB", "GiB"], rows)
    return 0


def register(subparsers) -> None:
    """Add the ``kv``, ``fit`` and ``memory`` subcommands to an argparse subparsers object.

    >>> import argparse
    >>> parser = argparse.ArgumentParser(prog="fp8lab")
    >>> register(parser.add_subparsers(dest="command"))
    >>> parser.parse_args(["kv", "--model", "llama-2-7b"]).seq
    4096
    """
    models = ", ".join(list_models())
    kv = subparsers.add_parser("kv", help="KV-cache size of a model over dtypes",
                               description=f"KV-cache size (K and V, all layers). Models: {models}")
    kv.add_argument("--model", required=True, help="preset name or Hugging Face id, e.g. llama-3-70b")
    kv.add_argument("--seq", type=positive_int, default=4096, help="tokens per sequence (default 4096)")
    kv.add_argument("--batch", type=positive_int, default=1, help="sequences (default 1)")
    kv.add_argument("--dtype", action="append", help="format name(s), repeat or comma-separate; "
                    "default: float32, bf16, fp8, e5m2, fp4")
    kv.add_argument("--scales", choices=["none", *SCALE_GRANULARITIES], default="none",
                    help="scale granularity for formats under 16 bits (default none)")
    kv.add_argument("--scale-dtype", default="float32", help="format of the scales (default float32)")
    kv.add_argument("--block-size", type=positive_int, default=None, help="elements per scale for --scales block")
    kv.set_defaults(func=_kv, command="kv")

    fit = subparsers.add_parser("fit", help="longest context / largest batch that fits on a GPU",
                                description=f"What fits on a GPU after the weights. GPUs: {', '.join(list_gpus())}")
    fit.add_argument("--model", required=True, help="preset name, e.g. llama-3-70b")
    fit.add_argument("--gpu", default=None, help="GPU name (default: a table over all GPUs)")
    fit.add_argument("--num-gpus", type=positive_int, default=1, help="GPUs pooled by tensor parallelism (default 1)")
    fit.add_argument("--weights-dtype", default="bf16", help="format of the weights (default bf16)")
    fit.add_argument("--kv-dtype", default="bf16", help="format of the KV cache (default bf16)")
    fit.add_argument("--seq", type=positive_int, default=4096, help="tokens per sequence for max batch (default 4096)")
    fit.add_argument("--batch", type=positive_int, default=1, help="sequences for max context (default 1)")
    fit.add_argument("--utilization", type=fraction, default=1.0,
                     help="fraction of GPU memory to use (vLLM's default is 0.9; default here 1.0)")
    fit.set_defaults(func=_fit, command="fit")

    mem = subparsers.add_parser("memory", help="training memory per parameter by memory plan",
                                description=f"Training memory. Memory plans: {', '.join(list_memory_plans())}")
    what = mem.add_mutually_exclusive_group(required=True)
    what.add_argument("--params", type=parse_count, help="parameter count, e.g. 7e9 or 70B")
    what.add_argument("--model", help="preset name; its parameter count is computed")
    mem.add_argument("--plan", "--recipe", dest="plan", default=None,
                     help="memory plan (--recipe is its old name; default: a table over all plans)")
    mem.add_argument("--num-gpus", type=positive_int, default=1, help="data-parallel GPUs (default 1)")
    mem.add_argument("--zero-stage", type=int, default=0, choices=[0, 1, 2, 3], help="ZeRO stage (default 0)")
    mem.set_defaults(func=_memory, command="memory")
