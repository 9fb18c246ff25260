"""Tensor-core throughput and memory bandwidth per GPU, read from ``throughput.json`` with every figure's source.

A datasheet's headline tensor figure is usually *with sparsity* (2:4 structured sparsity: two of
every four weights are zero and skipped), marked ``*``. :class:`Throughput` keeps what the source
prints and derives the dense figure as half the sparse one only when the source prints nothing
else, flagging it (``dense_derived``).

>>> h100 = get_gpu_spec("h100")
>>> t = h100.throughput("fp8")
>>> t.sparse, t.dense, t.dense_derived
(3958.0, 1979.0, True)
>>> h100.peak_flops("fp8") / h100.memory_bandwidth   # FLOP per byte at the ridge point
590.7462686567164
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

__all__ = ["Source", "Throughput", "GPUSpec", "get_gpu_spec", "list_gpu_specs", "get_source", "TENSOR_FORMATS"]

#: Tensor-core input formats the data file may list, in the order tables show them.
TENSOR_FORMATS = ("fp64", "tf32", "bf16", "fp16", "fp8", "fp6", "fp4", "int8", "int4")


@dataclass(frozen=True)
class Source:
    """Where figures come from: a title, a URL, how direct it is (``kind``), its footnotes and the copies read.

    >>> get_source("h100-datasheet").kind
    'datasheet'
    """

    key: str
    title: str
    url: str
    kind: str
    footnotes: tuple[str, ...] = ()
    checked_via: tuple[str, ...] = ()

    def cite(self) -> str:
        """One line: title and URL.

        >>> get_source("cuda-gpus").cite()
        'NVIDIA CUDA GPUs: compute capability by GPU, https://developer.nvidia.com/cuda-gpus'
        """
        return f"{self.title}, {self.url}"


@dataclass(frozen=True)
class Throughput:
    """One tensor-core rate in TFLOP/s (TOPS for integers): dense, and with 2:4 sparsity where the source gives it.

    ``dense_derived`` is True when the source printed only the sparse figure and ``dense`` is half
    of it (the footnote's rule). ``accumulate`` names the accumulator the rate assumes where the
    source distinguishes (``"fp32"``); ``fp16_accumulate`` holds the rates with FP16 accumulation.

    >>> Throughput("fp8", dense=1979.0, sparse=3958.0).dense
    1979.0
    """

    format: str
    dense: float
    sparse: float | None = None
    dense_derived: bool = False
    accumulate: str | None = None
    fp16_accumulate: "Throughput | None" = None
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("dense", "sparse"):
            v = getattr(self, name)
            if v is None and name == "sparse":
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise ValueError(f"Throughput {self.format}: {name} must be a positive number of TFLOP/s, got {v!r}")
            object.__setattr__(self, name, float(v))

    def tflops(self, sparse: bool = False) -> float:
        """The dense rate, or the sparse one (ValueError where the source gives none).

        >>> get_gpu_spec("a100").throughput("bf16").tflops(sparse=True)
        624.0
        """
        if not sparse:
            return self.dense
        if self.sparse is None:
            raise ValueError(f"no sparse {self.format} figure is recorded ({self.source}); use sparse=False")
        return self.sparse


def _throughput(fmt: str, entry: dict, source: str) -> Throughput:
    dense, sparse = entry.get("dense"), entry.get("sparse")
    if dense is None and sparse is None:
        raise ValueError(f"{fmt}: a tensor entry needs 'dense' or 'sparse'")
    derived = dense is None
    alt = entry.get("fp16_accumulate")
    return Throughput(fmt, dense=sparse / 2 if derived else dense, sparse=sparse, dense_derived=derived,
                      accumulate=entry.get("accumulate"), source=entry.get("source", source),
                      fp16_accumulate=_throughput(fmt, alt, entry.get("source", source)) if alt else None)


@dataclass(frozen=True)
class GPUSpec:
    """A GPU's tensor-core rates (:class:`Throughput` per format), memory bandwidth and where they come from.

    ``memory_bandwidth`` is in bytes/s (decimal, as datasheets print it). ``sizing_gpu`` is the
    name of the same card in :func:`fp8lab.get_gpu` (memory capacity), or None.

    >>> get_gpu_spec("rtx-4090").memory_bandwidth
    1008000000000.0
    """

    name: str
    full_name: str
    architecture: str
    compute_capability: str
    memory: str
    memory_bandwidth_gb_s: float
    tensor: dict[str, Throughput] = field(default_factory=dict)
    source: str = ""
    sizing_gpu: str | None = None
    nvlink_gb_s: float | None = None
    tensor_same_as: str | None = None
    notes: tuple[str, ...] = ()
    cross_check: dict[str, Any] = field(default_factory=dict)

    @property
    def memory_bandwidth(self) -> float:
        """Memory bandwidth in bytes per second (GB/s x 10^9).

        >>> get_gpu_spec("h200").memory_bandwidth / 1e12
        4.8
        """
        return float(self.memory_bandwidth_gb_s) * 1e9

    @property
    def formats(self) -> list[str]:
        """The tensor-core formats with a recorded rate, in :data:`TENSOR_FORMATS` order.

        >>> get_gpu_spec("a100").formats
        ['fp64', 'tf32', 'bf16', 'fp16', 'int8']
        """
        return [f for f in TENSOR_FORMATS if f in self.tensor]

    def supports(self, fmt: str) -> bool:
        """Whether the tensor cores take ``fmt`` as input (a rate is recorded).

        >>> get_gpu_spec("a100").supports("fp8"), get_gpu_spec("h100").supports("fp8")
        (False, True)
        """
        return _format_key(fmt) in self.tensor

    def throughput(self, fmt: str) -> Throughput:
        """The :class:`Throughput` of one format; ValueError naming the recorded formats if there is none.

        >>> get_gpu_spec("b200").throughput("fp4").dense
        9000.0
        """
        key = _format_key(fmt)
        if key not in self.tensor:
            raise ValueError(f"{self.full_name} has no recorded {key} tensor-core rate; recorded: {', '.join(self.formats)}")
        return self.tensor[key]

    def peak_flops(self, fmt: str, sparse: bool = False) -> float:
        """Peak tensor-core rate in FLOP/s (operations per second for integers), dense unless ``sparse``.

        >>> get_gpu_spec("h100").peak_flops("bf16") / 1e12
        989.5
        """
        return self.throughput(fmt).tflops(sparse) * 1e12

    def ridge_point(self, fmt: str, sparse: bool = False) -> float:
        """FLOP per byte of memory traffic at which ``fmt`` GEMMs turn from memory-bound to compute-bound.

        >>> round(get_gpu_spec("h100").ridge_point("bf16"), 1)
        295.4
        """
        return self.peak_flops(fmt, sparse) / self.memory_bandwidth

    def memory_bytes(self) -> int | None:
        """Memory capacity in bytes from :func:`fp8lab.get_gpu` (the sizing data), or None where it has no entry.

        >>> get_gpu_spec("h100").memory_bytes() == 80 * 2**30
        True
        """
        if self.sizing_gpu is None:
            return None
        from ..sizing import get_gpu

        return get_gpu(self.sizing_gpu).memory_bytes

    def sources(self) -> list[Source]:
        """The sources of this GPU's figures (its own and any per-format ones), deduplicated.

        >>> [s.key for s in get_gpu_spec("h800").sources()]
        ['h800-third-party', 'h100-datasheet']
        """
        keys = [self.source] + [t.source for t in self.tensor.values()]
        return [get_source(k) for k in dict.fromkeys(k for k in keys if k)]

    def __str__(self) -> str:
        rates = ", ".join(f"{f} {self.tensor[f].dense:g}" for f in self.formats)
        return f"{self.full_name} ({self.architecture}, sm_{self.compute_capability.replace('.', '')}): {rates} TFLOP/s dense; {self.memory_bandwidth_gb_s:g} GB/s"


def _format_key(fmt: str) -> str:
    if not isinstance(fmt, str):
        raise TypeError(f"a tensor-core format is a name such as 'fp8' or 'bf16', got {type(fmt).__name__}")
    key = fmt.strip().lower()
    aliases = {"e4m3": "fp8", "e5m2": "fp8", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "bfloat16": "bf16",
               "float16": "fp16", "half": "fp16", "e2m1": "fp4", "float4_e2m1fn": "fp4", "nvfp4": "fp4", "mxfp4": "fp4",
               "mxfp8": "fp8", "mxfp6": "fp6", "e2m3": "fp6", "e3m2": "fp6"}
    key = aliases.get(key, key)
    if key not in TENSOR_FORMATS:
        raise ValueError(f"unknown tensor-core format {fmt!r}; known: {', '.join(TENSOR_FORMATS)} (and e4m3, e5m2, bfloat16, nvfp4, ...)")
    return key


@lru_cache(maxsize=1)
def _data() -> dict:
    text = resources.files("fp8lab.hardware").joinpath("throughput.json").read_text(encoding="utf-8")
    return json.loads(text)


def _key(name: str) -> str:
    k = name.strip().lower().replace("_", "-").replace(" ", "-")
    return k[len("nvidia-"):] if k.startswith("nvidia-") else k


@lru_cache(maxsize=1)
def _index() -> dict[str, str]:
    index: dict[str, str] = {}
    for key, entry in _data()["gpus"].items():
        for n in (key, *entry.get("aliases", ())):
            index[_key(n)] = key
    return index


def get_source(key: str) -> Source:
    """A source of the data file by key; ValueError listing the keys if unknown.

    >>> get_source("blackwell-techbrief").title.startswith("NVIDIA Blackwell")
    True
    """
    sources = _data()["sources"]
    if key not in sources:
        raise ValueError(f"unknown source {key!r}; known: {', '.join(sources)}")
    s = sources[key]
    return Source(key, s["title"], s["url"], s["kind"], tuple(s.get("footnotes", ())), tuple(s.get("checked_via", ())))


def list_gpu_specs() -> list[str]:
    """Names of the GPUs in the data file.

    >>> list_gpu_specs()[:3]
    ['h100-sxm', 'h100-pcie', 'h200']
    """
    return list(_data()["gpus"])


@lru_cache(maxsize=None)
def _build(key: str) -> GPUSpec:
    e = _data()["gpus"][key]
    same = e.get("tensor_same_as")
    if same:
        tensor = dict(_build(same).tensor)  # resolved through the other card, sources kept
    else:
        tensor = {f: _throughput(f, v, e["source"]) for f, v in e["tensor"].items()}
    for f in tensor:
        _format_key(f)
    return GPUSpec(name=key, full_name=e["full_name"], architecture=e["architecture"],
                   compute_capability=e["compute_capability"], memory=e["memory"],
                   memory_bandwidth_gb_s=e["memory_bandwidth_gb_s"], tensor=tensor, source=e["source"],
                   sizing_gpu=e.get("sizing_gpu"), nvlink_gb_s=e.get("nvlink_gb_s"), tensor_same_as=same,
                   notes=tuple(e.get("notes", ())), cross_check=e.get("cross_check", {}))


def get_gpu_spec(name: "str | GPUSpec") -> GPUSpec:
    """A GPU by name or alias ("h100", "H100 SXM", "A100", "RTX 4090"); a GPUSpec passes through; unknown names raise.

    >>> get_gpu_spec("H100 SXM").name, get_gpu_spec("NVIDIA L40S").architecture
    ('h100-sxm', 'Ada Lovelace')
    """
    if isinstance(name, GPUSpec):
        return name
    if not isinstance(name, str):
        raise TypeError(f"a GPU is a name (str) or a GPUSpec, got {type(name).__name__}")
    try:
        return _build(_index()[_key(name)])
    except KeyError:
        raise ValueError(f"unknown GPU {name!r}; known GPUs: {', '.join(list_gpu_specs())}") from None
