"""GPUs and their memory, with the marketed "GB" read for what it is: binary GiB.

A card sold as "80GB" has 80 GiB of DRAM (memory chips come in powers of two): 85.9e9 bytes. The
driver reports a little less (nvidia-smi shows 81559 MiB on an H100 80GB), and that total is what a
program can allocate: :attr:`GPU.budget_bytes`, the one number sizing uses (the DRAM size where the
driver's figure is not recorded). Both GB and GiB are shown wherever a figure is printed.

>>> gpu = get_gpu("h100")
>>> gpu.memory_bytes, round(gpu.memory_gb, 2), gpu.memory_gib, gpu.budget_bytes
(85899345920, 85.9, 80.0, 85520809984)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from ..validation import lookup_key
from .units import GB, GiB, MiB, format_bytes

__all__ = ["GPU", "get_gpu", "list_gpus"]


@dataclass(frozen=True)
class GPU:
    """A GPU's memory: ``memory_gib`` (binary GiB) of DRAM, the driver's total, and the spec-sheet label.

    >>> GPU(name="my-card", memory_gib=16).memory_bytes == 16 * 2**30
    True
    """

    name: str
    memory_gib: float
    full_name: str = ""
    marketed: str = ""
    memory_type: str = ""
    nvidia_smi_total_mib: int | None = None
    source: str = ""

    def __post_init__(self) -> None:
        if isinstance(self.memory_gib, bool) or not isinstance(self.memory_gib, (int, float)) or not self.memory_gib > 0:
            raise ValueError(f"GPU {self.name!r}: memory_gib must be a positive number, got {self.memory_gib!r}")
        object.__setattr__(self, "memory_gib", float(self.memory_gib))

    @property
    def memory_bytes(self) -> int:
        """Memory in bytes: ``memory_gib * 2**30``.

        >>> get_gpu("rtx-4090").memory_bytes
        25769803776
        """
        return int(self.memory_gib * GiB)

    @property
    def memory_gb(self) -> float:
        """Memory in decimal gigabytes (10^9 bytes), the unit people wrongly assume the label uses.

        >>> round(get_gpu("h200").memory_gb, 1)
        151.4
        """
        return self.memory_bytes / GB

    @property
    def driver_bytes(self) -> int | None:
        """The total nvidia-smi reports, in bytes, where we have seen it (else None).

        >>> get_gpu("h100").driver_bytes
        85520809984
        """
        return None if self.nvidia_smi_total_mib is None else self.nvidia_smi_total_mib * MiB

    @property
    def budget_bytes(self) -> int:
        """What sizing may fill: the driver's total where recorded, else the DRAM size ``memory_gib * 2**30``.

        >>> get_gpu("h100").budget_bytes / 2**30 < get_gpu("h100").memory_gib
        True
        """
        return self.driver_bytes if self.driver_bytes is not None else self.memory_bytes

    @property
    def budget_source(self) -> str:
        """Where :attr:`budget_bytes` comes from, in words.

        >>> get_gpu("h100").budget_source
        "nvidia-smi's total, 81,559 MiB"
        """
        if self.driver_bytes is not None:
            return f"nvidia-smi's total, {self.nvidia_smi_total_mib:,} MiB"
        return f"{self.memory_gib:g} GiB of DRAM (the driver's total is not recorded)"

    def __str__(self) -> str:
        label = f", sold as {self.marketed}" if self.marketed else ""
        return f"{self.full_name or self.name}: {format_bytes(self.memory_bytes)}{label}"


@lru_cache(maxsize=1)
def _gpus() -> dict[str, dict]:
    text = resources.files("fp8lab").joinpath("data/gpus.json").read_text(encoding="utf-8")
    return json.loads(text)["gpus"]


def _key(name: str) -> str:
    k = lookup_key(name)
    return k[len("nvidia_"):] if k.startswith("nvidia_") else k


@lru_cache(maxsize=1)
def _index() -> dict[str, str]:
    index = {}
    for key, entry in _gpus().items():
        for n in (key, *entry.get("aliases", ())):
            index[_key(n)] = key
    return index


def list_gpus() -> list[str]:
    """Names of the GPUs in the data file.

    >>> list_gpus()
    ['h100', 'h200', 'a100-80gb', 'a100-40gb', 'l40', 'rtx-4090']
    """
    return list(_gpus())


@lru_cache(maxsize=None)
def _build(key: str) -> GPU:
    e = _gpus()[key]
    return GPU(name=key, memory_gib=e["memory_gib"], full_name=e["full_name"], marketed=e["marketed"],
               memory_type=e["memory_type"], nvidia_smi_total_mib=e.get("nvidia_smi_total_mib"), source=e["source"])


def get_gpu(name: "str | GPU") -> GPU:
    """A GPU by name or alias ("h100", "A100", "RTX 4090"); a GPU passes through; unknown names raise.

    >>> get_gpu("A100").name, get_gpu("RTX 4090").memory_gib
    ('a100-80gb', 24.0)
    """
    if isinstance(name, GPU):
        return name
    if not isinstance(name, str):
        raise TypeError(f"a GPU is a name (str) or a GPU, got {type(name).__name__}")
    try:
        return _build(_index()[_key(name)])
    except KeyError:
        raise ValueError(f"unknown GPU {name!r}; known GPUs: {', '.join(list_gpus())}") from None
