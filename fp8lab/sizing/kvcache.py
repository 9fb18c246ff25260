"""KV-cache size: K and V for every layer and every cached token, in any registered format.

Per token and layer the cache holds ``2 * kv_heads * head_dim`` elements for MHA, GQA and MQA, and
``kv_lora_rank + qk_rope_head_dim`` for MLA (DeepSeek-V2/V3 cache one compressed latent plus a
decoupled RoPE key, shared by all heads). A sliding window caps the cached tokens at the window.

A quantized cache also stores scales. ``scale_granularity`` says how many there are per layer for
MHA, GQA and MQA:

- ``None``: no scales, plain elements (the default, for every dtype): 0;
- ``"tensor"``: one static scale for the layer's whole K and one for its V: 2;
- ``"token"``: one per token, shared by all K/V heads of that token: ``2 * tokens``;
- ``"head"``: one per token and K/V head: ``2 * kv_heads * tokens``;
- ``"block"``: one per ``block_size`` consecutive elements of a head's vector:
  ``2 * kv_heads * ceil(head_dim / block_size) * tokens``

(times ``batch`` for all but "tensor"). For MLA the latent vector of ``kv_lora_rank +
qk_rope_head_dim`` elements plays the part of K and V together: 1 scale per token, or
``ceil((kv_lora_rank + qk_rope_head_dim) / block_size)`` per token for blocks; "head" does not apply.
Scales are ``scale_dtype`` (default float32; "e8m0" for MX-style power-of-two scales).

>>> kv_cache_bytes("llama-2-7b", seq_len=1, dtype="fp16")   # the famous 0.5 MiB per token
524288
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from ..formats import Format
from ..registry import get_format
from .models import ModelConfig, get_model
from .units import GB, GiB, check_count, dtype_bits, format_bytes, packed_bytes

__all__ = ["KVCacheSize", "kv_cache_bytes", "kv_cache_size", "kv_cache_table", "kv_elements_per_token",
           "SCALE_GRANULARITIES"]

#: The scale granularities a quantized cache can have (see the module docstring for the counts).
SCALE_GRANULARITIES: tuple[str, ...] = ("tensor", "token", "head", "block")


def kv_elements_per_token(model: "str | ModelConfig") -> int:
    """Cached elements per token per layer: ``2 * kv_heads * head_dim``, or ``kv_lora_rank + qk_rope_head_dim`` for MLA.

    >>> kv_elements_per_token("llama-3-70b"), kv_elements_per_token("deepseek-v3")
    (2048, 576)
    """
    c = get_model(model)
    if c.attention == "mla":
        return c.kv_lora_rank + c.qk_rope_head_dim
    return 2 * c.kv_heads * c.head_dim


def _scales_per_token_per_layer(c: ModelConfig, granularity: str, block_size: int | None) -> int:
    if granularity == "token":
        return 1 if c.attention == "mla" else 2
    if granularity == "head":
        if c.attention == "mla":
            raise ValueError("MLA caches one latent vector per token, shared by all heads: "
                             "use scale_granularity='token' or 'block', not 'head'")
        return 2 * c.kv_heads
    # block
    if c.attention == "mla":
        return -(-(c.kv_lora_rank + c.qk_rope_head_dim) // block_size)
    return 2 * c.kv_heads * -(-c.head_dim // block_size)


@dataclass(frozen=True)
class KVCacheSize:
    """The size of a KV cache, split into elements and scales, with the figures a table needs.

    >>> s = kv_cache_size("llama-3-70b", seq_len=4096, dtype="fp8", scale_granularity="head")
    >>> s.element_bytes, s.scale_bytes, s.total_bytes
    (671088640, 20971520, 692060160)
    """

    model: str
    dtype: str
    seq_len: int
    batch: int
    tokens: int
    layers: int
    elements: int
    element_bits: int
    scale_granularity: str | None
    scale_dtype: str | None
    scales: int
    scale_bits: int

    @property
    def element_bytes(self) -> int:
        """Bytes of the K/V (or latent) elements, packed, rounded up to a whole byte.

        >>> kv_cache_size("llama-2-7b", seq_len=3, dtype="fp4").element_bytes
        393216
        """
        return packed_bytes(self.elements, self.element_bits)

    @property
    def scale_bytes(self) -> int:
        """Bytes of the scales (0 without scales).

        >>> kv_cache_size("llama-2-7b", seq_len=10, dtype="fp8", scale_granularity="token").scale_bytes
        2560
        """
        return packed_bytes(self.scales, self.scale_bits)

    @property
    def total_bytes(self) -> int:
        """Elements plus scales, in bytes.

        >>> kv_cache_size("llama-2-7b", seq_len=4096).total_bytes == 2 * 2**30
        True
        """
        return self.element_bytes + self.scale_bytes

    @property
    def gb(self) -> float:
        """Total in decimal gigabytes (10^9 bytes).

        >>> round(kv_cache_size("llama-2-7b", seq_len=4096).gb, 3)
        2.147
        """
        return self.total_bytes / GB

    @property
    def gib(self) -> float:
        """Total in binary gibibytes (2^30 bytes).

        >>> kv_cache_size("llama-2-7b", seq_len=4096).gib
        2.0
        """
        return self.total_bytes / GiB

    @property
    def bytes_per_token(self) -> float:
        """Bytes per cached token of one sequence, all layers, scales included.

        >>> kv_cache_size("llama-3-70b", seq_len=8).bytes_per_token
        327680.0
        """
        n = self.tokens * self.batch
        return self.total_bytes / n if n else 0.0

    @property
    def bytes_per_token_per_layer(self) -> float:
        """Bytes per cached token per layer, scales included.

        >>> kv_cache_size("deepseek-v3", seq_len=1).bytes_per_token_per_layer
        1152.0
        """
        return self.bytes_per_token / self.layers

    def as_dict(self) -> dict:
        """The figures as a flat dict (one table row, units in the keys).

        >>> kv_cache_size("llama-2-7b", seq_len=1).as_dict()["bytes_per_token"]
        524288.0
        """
        return {
            "model": self.model, "dtype": self.dtype, "bits": self.element_bits, "seq_len": self.seq_len,
            "batch": self.batch, "tokens_cached": self.tokens, "scale_granularity": self.scale_granularity,
            "scale_dtype": self.scale_dtype, "element_bytes": self.element_bytes, "scale_bytes": self.scale_bytes,
            "total_bytes": self.total_bytes, "total_GB": self.gb, "total_GiB": self.gib,
            "bytes_per_token": self.bytes_per_token, "bytes_per_token_per_layer": self.bytes_per_token_per_layer,
        }

    def __str__(self) -> str:
        scales = f" + {self.scale_granularity} scales in {self.scale_dtype}" if self.scale_granularity else ""
        return (f"{self.model}: KV cache of {self.tokens} tokens x batch {self.batch} in {self.dtype}{scales} "
                f"= {format_bytes(self.total_bytes)}")


def kv_cache_size(model: "str | ModelConfig", seq_len: int, batch: int = 1, dtype: "str | Format" = "bf16", *,
                  scale_granularity: str | None = None, scale_dtype: "str | Format" = "float32",
                  block_size: int | None = None) -> KVCacheSize:
    """The KV cache of ``batch`` sequences of ``seq_len`` tokens as a :class:`KVCacheSize` breakdown.

    ``dtype`` is any registered format name; ``scale_granularity`` is None, "tensor", "token",
    "head" or "block" (which needs ``block_size``), see the module docstring.

    >>> print(kv_cache_size("mistral-7b", seq_len=32768))   # the 4096-token rolling buffer
    mistral-7b: KV cache of 4096 tokens x batch 1 in bfloat16 = 536.87 MB (512.00 MiB)
    """
    c = get_model(model)
    seq_len = check_count("seq_len", seq_len, minimum=0)
    batch = check_count("batch", batch, minimum=1)
    fmt = get_format(dtype)
    tokens = seq_len if c.sliding_window is None else min(seq_len, c.sliding_window)
    elements = c.layers * kv_elements_per_token(c) * tokens * batch

    scales, scale_bits, scale_name = 0, 0, None
    if scale_granularity is not None:
        if scale_granularity not in SCALE_GRANULARITIES:
            raise ValueError(f"scale_granularity must be None or one of {list(SCALE_GRANULARITIES)}, "
                             f"got {scale_granularity!r}")
        if scale_granularity == "block":
            if block_size is None:
                raise ValueError("scale_granularity='block' needs block_size (elements per scale, e.g. 32 or 128)")
            block_size = check_count("block_size", block_size, minimum=1)
        elif block_size is not None:
            raise ValueError(f"block_size only applies to scale_granularity='block', not {scale_granularity!r}")
        sfmt = get_format(scale_dtype)
        scale_bits, scale_name = dtype_bits(sfmt), sfmt.name
        if scale_granularity == "tensor":
            scales = (1 if c.attention == "mla" else 2) * c.layers if tokens else 0
        else:
            scales = c.layers * _scales_per_token_per_layer(c, scale_granularity, block_size) * tokens * batch
    elif block_size is not None:
        raise ValueError("block_size was given without scale_granularity='block'")
    return KVCacheSize(model=c.name, dtype=fmt.name, seq_len=seq_len, batch=batch, tokens=tokens, layers=c.layers,
                       elements=elements, element_bits=dtype_bits(fmt), scale_granularity=scale_granularity,
                       scale_dtype=scale_name, scales=scales, scale_bits=scale_bits)


def kv_cache_bytes(model: "str | ModelConfig", seq_len: int, batch: int = 1, dtype: "str | Format" = "bf16", *,
                   scale_granularity: str | None = None, scale_dtype: "str | Format" = "float32",
                   block_size: int | None = None) -> int:
    """Bytes of the KV cache (K and V, all layers, ``batch`` sequences of ``seq_len`` tokens) as an int.

    Elements take ``bits / 8`` bytes each in ``dtype`` (the whole cache is rounded up to a byte for
    4- and 6-bit formats); scales are added when ``scale_granularity`` is set (module docstring).

    >>> kv_cache_bytes("llama-3-70b", seq_len=4096, batch=1, dtype="fp8")
    671088640
    >>> kv_cache_bytes("deepseek-v3", seq_len=1, dtype="bf16")   # (512 + 64) x 61 x 2 bytes
    70272
    """
    return kv_cache_size(model, seq_len, batch, dtype, scale_granularity=scale_granularity,
                         scale_dtype=scale_dtype, block_size=block_size).total_bytes


def kv_cache_table(model: "str | ModelConfig", seq_len: int, batch: int = 1,
                   dtypes: Iterable["str | Format"] = ("float32", "bf16", "fp8", "fp4"), *,
                   scale_granularity: str | None = None, scale_dtype: "str | Format" = "float32",
                   block_size: int | None = None) -> list[dict]:
    """One row per dtype (bytes per token and layer, total bytes, GB and GiB): figures-ready data.

    16- and 32-bit formats never get scales here, whatever ``scale_granularity`` says.

    >>> [(r["dtype"], r["total_GiB"]) for r in kv_cache_table("llama-2-7b", 4096, dtypes=["fp16", "fp8"])]
    [('float16', 2.0), ('float8_e4m3fn', 1.0)]
    """
    rows = []
    for d in dtypes:
        quantized = dtype_bits(d) < 16
        rows.append(kv_cache_size(model, seq_len, batch, d,
                                  scale_granularity=scale_granularity if quantized else None,
                                  scale_dtype=scale_dtype,
                                  block_size=block_size if quantized else None).as_dict())
    return rows
