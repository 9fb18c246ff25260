"""Parameter counts from a model's shape, and the bytes its weights take in a given format.

The count is the sum of every weight matrix, bias, norm and embedding the architecture has, so it
can be checked against the count the publisher reports (for LLaMA-2-7B exactly 6,738,415,616).

>>> param_count("llama-2-7b").total
6738415616
>>> from fp8lab.sizing.units import format_bytes
>>> format_bytes(weights_bytes("llama-3-70b", "fp8"))
'70.55 GB (65.71 GiB)'
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real

from ..formats import Format
from .models import ModelConfig, get_model
from .units import check_count, dtype_bits, packed_bytes

__all__ = ["ParamCount", "param_count", "weights_bytes", "resolve_params"]


@dataclass(frozen=True)
class ParamCount:
    """A parameter count: ``total`` stored, ``active`` used per token (differs for mixtures of experts).

    ``embedding`` is the input embedding plus the output head (once if they are tied) plus learned
    position embeddings.

    >>> ParamCount(total=10, active=4, embedding=2).non_embedding
    8
    """

    total: int
    active: int
    embedding: int

    @property
    def non_embedding(self) -> int:
        """Parameters outside the embeddings and the output head.

        >>> param_count("llama-2-7b").non_embedding
        6476271616
        """
        return self.total - self.embedding

    def __str__(self) -> str:
        return f"{self.total / 1e9:.2f}B parameters ({self.active / 1e9:.2f}B active per token)"


def _attention(c: ModelConfig) -> int:
    h = c.hidden
    if c.attention == "mla":
        if c.qk_nope_head_dim is None or c.v_head_dim is None:
            raise ValueError(f"model {c.name!r}: counting MLA parameters needs qk_nope_head_dim and v_head_dim")
        qk = c.qk_nope_head_dim + c.qk_rope_head_dim
        if c.q_lora_rank:  # down-projection, its RMSNorm, up-projection
            q = h * c.q_lora_rank + c.q_lora_rank + c.q_lora_rank * c.heads * qk
        else:
            q = h * c.heads * qk
        kv = (h * (c.kv_lora_rank + c.qk_rope_head_dim) + c.kv_lora_rank
              + c.kv_lora_rank * c.heads * (c.qk_nope_head_dim + c.v_head_dim))
        return q + kv + c.heads * c.v_head_dim * h
    q_out, kv_out = c.heads * c.head_dim, c.kv_heads * c.head_dim
    n = h * q_out + 2 * h * kv_out + q_out * h
    if c.qkv_bias or c.bias:
        n += q_out + 2 * kv_out
    if c.bias:
        n += h
    return n


def _mlp(c: ModelConfig, width: int) -> int:
    matrices = 3 if c.mlp == "gated" else 2
    n = matrices * c.hidden * width
    if c.bias:
        n += (matrices - 1) * width + c.hidden
    return n


def _norm(c: ModelConfig) -> int:
    return c.hidden * (2 if c.norm == "layernorm" else 1)


def param_count(model: "str | ModelConfig") -> ParamCount:
    """Count a model's parameters from its shape: attention, MLP or experts, norms, embeddings.

    Needs ``vocab_size`` and ``intermediate_size`` (all presets have them). Small terms that
    depend on implementation details (DeepSeek-V3's 256-entry expert-bias vector per layer, rotary
    buffers) are left out.

    >>> pc = param_count("mixtral-8x7b")
    >>> pc.total, pc.active
    (46702792704, 12879925248)
    """
    c = get_model(model)
    if c.vocab_size is None or c.intermediate_size is None:
        raise ValueError(f"model {c.name!r}: a parameter count needs vocab_size and intermediate_size")
    h = c.hidden
    attention = _attention(c) + c.norms_per_layer * _norm(c)
    if c.is_moe:
        width = c.moe_intermediate_size or c.intermediate_size
        dense_layers, moe_layers = c.first_dense_layers, c.layers - c.first_dense_layers
        router = h * c.num_experts
        moe_total = (c.num_experts + c.shared_experts) * _mlp(c, width) + router
        moe_active = (c.experts_per_token + c.shared_experts) * _mlp(c, width) + router
    else:
        dense_layers, moe_layers, moe_total, moe_active = c.layers, 0, 0, 0
    body = c.layers * attention + dense_layers * _mlp(c, c.intermediate_size) + _norm(c)  # + final norm
    embedding = c.vocab_size * h * (1 if c.tie_word_embeddings else 2) + c.learned_positions * h
    return ParamCount(total=body + moe_layers * moe_total + embedding,
                      active=body + moe_layers * moe_active + embedding, embedding=embedding)


def resolve_params(model: "str | ModelConfig | Real", *, active: bool = False) -> int:
    """A parameter count from a preset name, a ModelConfig, or a plain number such as ``7e9``.

    >>> resolve_params(7e9), resolve_params("llama-3-8b")
    (7000000000, 8030261248)
    """
    if isinstance(model, (str, ModelConfig)):
        pc = param_count(model)
        return pc.active if active else pc.total
    return check_count("params", model, minimum=1)


def weights_bytes(model: "str | ModelConfig | Real", dtype: "str | Format" = "bf16", *, active: bool = False) -> int:
    """Bytes of the weights stored in ``dtype`` (bits / 8 per parameter, rounded up); scales not included.

    ``active=True`` counts only the parameters one token uses (mixtures of experts).

    >>> weights_bytes(7e9, "bf16"), weights_bytes(7e9, "fp4")
    (14000000000, 3500000000)
    """
    return packed_bytes(resolve_params(model, active=active), dtype_bits(dtype))

