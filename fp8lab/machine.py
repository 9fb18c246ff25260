"""The machine a result came from: CPU model, instruction-set flags, BLAS and its version, threads.

Bits reproduce only on the same machine and versions (a BLAS picks its kernels, and so its order of
summation, by CPU and instruction set), so every recorded result carries this record beside
:func:`fp8lab.train.loop.versions`.

>>> m = describe()
>>> sorted(m)[:4]
['blas', 'cpu_count', 'cpu_model', 'isa_flags']
"""

from __future__ import annotations

import os
import platform
import re
from typing import Any

__all__ = ["describe", "same_machine"]

#: The instruction-set flags that change which kernels a BLAS or gcc's -march=native picks.
ISA_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "avx512_fp16",
             "avx512_vnni", "avx_vnni", "amx_bf16", "amx_tile", "amx_int8", "asimd", "sve", "sve2", "bf16")


def _cpuinfo() -> tuple[str, list[str]]:
    """(model name with its family/model/stepping numbers, flags) from /proc/cpuinfo, or from platform where there is none."""
    model, flags = platform.processor() or platform.machine(), []
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return model, flags
    m = re.search(r"^(model name|Hardware|cpu model)\s*:\s*(.+)$", text, re.M)
    if m:
        model = m.group(2).strip()
    ids = [re.search(rf"^{k}\s*:\s*(\S+)$", text, re.M) for k in ("cpu family", "model", "stepping")]
    if all(ids):  # a virtual machine often names only "AMD EPYC": the numbers tell Zen 4 from Zen 5
        model += " (family {}, model {}, stepping {})".format(*(i.group(1) for i in ids))
    m = re.search(r"^(flags|Features)\s*:\s*(.+)$", text, re.M)
    if m:
        flags = m.group(2).split()
    return model, flags


def _blas() -> dict[str, Any]:
    """torch's BLAS (name and version from its build configuration) and numpy's."""
    out: dict[str, Any] = {}
    try:
        import torch

        cfg = torch.__config__.show()
        m = re.search(r"BLAS_INFO=(\w+)", cfg)
        out["torch_blas"] = m.group(1) if m else "unknown"
        m = re.search(r"(Math Kernel Library Version [^\n]+|OpenBLAS[^\n]*)", cfg)
        out["torch_blas_version"] = m.group(1).strip() if m else "unknown"
        out["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
        out["torch_threads"] = torch.get_num_threads()
    except Exception:  # noqa: BLE001 - torch is optional; a record without it says so
        out["torch_blas"] = "torch not installed"
    try:
        import numpy as np

        cfg = np.show_config(mode="dicts")  # type: ignore[call-arg]
        blas = cfg.get("Build Dependencies", {}).get("blas", {})
        out["numpy_blas"] = f"{blas.get('name', 'unknown')} {blas.get('version', '')}".strip()
    except Exception:  # noqa: BLE001 - older numpy: no dict form
        out["numpy_blas"] = "unknown"
    return out


def describe() -> dict[str, Any]:
    """A JSON-ready record of this machine: CPU model, its ISA flags that matter for kernels, BLAS, thread counts.

    >>> d = describe(); isinstance(d["cpu_model"], str) and isinstance(d["isa_flags"], list)
    True
    """
    model, flags = _cpuinfo()
    env = {k: os.environ[k] for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                       "OPENBLAS_CORETYPE") if k in os.environ}
    return {"cpu_model": model, "machine": platform.machine(), "cpu_count": os.cpu_count(),
            "isa_flags": [f for f in ISA_FLAGS if f in flags], "blas": _blas(), "thread_env": env,
            "os": platform.platform()}


def same_machine(record: dict[str, Any] | None) -> bool:
    """Whether ``record`` (a :func:`describe` result) names this machine's CPU, ISA flags and BLAS, so bits may be compared.

    >>> same_machine(describe()), same_machine(None), same_machine({"cpu_model": "a 6502"})
    (True, False, False)
    """
    if not isinstance(record, dict):
        return False
    here = describe()
    keys = ("cpu_model", "machine", "isa_flags")
    if any(record.get(k) != here[k] for k in keys):
        return False
    theirs, ours = record.get("blas") or {}, here["blas"]
    return all(theirs.get(k) == ours.get(k) for k in ("torch_blas", "torch_blas_version", "torch_cpu_capability"))
