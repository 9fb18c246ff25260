"""Model shapes as data: :class:`ModelConfig`, built by hand or from a Hugging Face ``config.json``.

The presets in ``fp8lab/data/models.json`` copy the fields of the published configuration files
(each entry cites its source); :func:`get_model` turns one into a :class:`ModelConfig`.

>>> cfg = get_model("llama-3-70b")
>>> cfg.attention, cfg.layers, cfg.kv_heads, cfg.head_dim
('gqa', 80, 8, 128)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

import numpy as np

from ..validation import lookup_key
from .units import check_count

__all__ = ["ModelConfig", "get_model", "list_models", "model_info", "ATTENTIONS"]

Attention = Literal["mha", "gqa", "mqa", "mla"]

#: The attention kinds a :class:`ModelConfig` can have, and what each one caches.
ATTENTIONS: dict[str, str] = {
    "mha": "multi-head attention: one K and one V head per query head (kv_heads == heads)",
    "gqa": "grouped-query attention: kv_heads K/V heads, each shared by heads // kv_heads query heads",
    "mqa": "multi-query attention: a single K/V head shared by all query heads (kv_heads == 1)",
    "mla": "multi-head latent attention (DeepSeek-V2/V3): a compressed latent of kv_lora_rank plus a "
           "decoupled RoPE key of qk_rope_head_dim per token, not K and V heads",
}


def _opt_count(name: str, value: Any, minimum: int = 1) -> int | None:
    return None if value is None else check_count(name, value, minimum=minimum)


@dataclass(frozen=True)
class ModelConfig:
    """The shape of a decoder-only transformer: what the KV cache and the parameter count depend on.

    Only ``name``, ``layers``, ``hidden`` and ``heads`` are required. ``attention`` is inferred when
    left out (``kv_heads == heads`` -> "mha", ``1`` -> "mqa", else "gqa"; "mla" when ``kv_lora_rank``
    is given); ``kv_heads`` defaults to ``heads`` for MHA and 1 for MQA; ``head_dim`` to
    ``hidden // heads``. ``sliding_window`` is the number of tokens a rolling-buffer cache keeps.

    The remaining fields serve :func:`fp8lab.param_count` (vocabulary, MLP width, mixture of experts,
    biases, norms, tied embeddings) and record where a preset came from.

    >>> ModelConfig(name="tiny", layers=2, hidden=256, heads=8, kv_heads=2)
    ModelConfig(name='tiny', layers=2, hidden=256, heads=8, kv_heads=2, head_dim=32, attention='gqa')
    """

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int | None = None
    head_dim: int | None = None
    attention: Attention | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    sliding_window: int | None = None
    # MLA projections (for the parameter count)
    q_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    v_head_dim: int | None = None
    # the rest of the network (for the parameter count)
    vocab_size: int | None = None
    intermediate_size: int | None = None
    mlp: Literal["gated", "plain"] = "gated"
    norm: Literal["rmsnorm", "layernorm"] = "rmsnorm"
    norms_per_layer: int = 2
    qkv_bias: bool = False
    bias: bool = False
    tie_word_embeddings: bool = False
    learned_positions: int = 0
    # mixture of experts
    num_experts: int = 0
    experts_per_token: int = 0
    shared_experts: int = 0
    moe_intermediate_size: int | None = None
    first_dense_layers: int = 0
    # provenance
    max_position_embeddings: int | None = None
    published_params: int | None = None
    published_active_params: int | None = None
    source: str | None = None

    def __post_init__(self) -> None:  # noqa: C901 - one check per field, in order
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731 - frozen dataclass
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        where = f"model {self.name!r}"
        for k in ("layers", "hidden", "heads"):
            set_(k, check_count(f"{where}: {k}", getattr(self, k), minimum=1))
        for k in ("kv_heads", "head_dim", "kv_lora_rank", "qk_rope_head_dim", "sliding_window", "q_lora_rank",
                  "qk_nope_head_dim", "v_head_dim", "vocab_size", "intermediate_size", "moe_intermediate_size",
                  "max_position_embeddings", "published_params", "published_active_params"):
            set_(k, _opt_count(f"{where}: {k}", getattr(self, k)))
        for k in ("learned_positions", "num_experts", "experts_per_token", "shared_experts", "first_dense_layers",
                  "norms_per_layer"):
            set_(k, check_count(f"{where}: {k}", getattr(self, k), minimum=0))
        for k in ("qkv_bias", "bias", "tie_word_embeddings"):  # numpy bools too, as every bool keyword takes them
            v = getattr(self, k)
            if not isinstance(v, (bool, np.bool_)):
                raise ValueError(f"{where}: {k} must be True or False, got {v!r}")
            set_(k, bool(v))
        if self.mlp not in ("gated", "plain"):
            raise ValueError(f"{where}: mlp must be 'gated' (SwiGLU, 3 matrices) or 'plain' (2 matrices), got {self.mlp!r}")
        if self.norm not in ("rmsnorm", "layernorm"):
            raise ValueError(f"{where}: norm must be 'rmsnorm' or 'layernorm', got {self.norm!r}")

        attention = self.attention
        if attention is None:
            if self.kv_lora_rank is not None:
                attention = "mla"
            elif self.kv_heads is None or self.kv_heads == self.heads:
                attention = "mha"
            else:
                attention = "mqa" if self.kv_heads == 1 else "gqa"
        if not isinstance(attention, str) or attention.lower() not in ATTENTIONS:
            raise ValueError(f"{where}: attention must be one of {list(ATTENTIONS)}, got {attention!r}")
        attention = attention.lower()
        set_("attention", attention)

        kv = self.kv_heads
        if attention == "mha":
            kv = self.heads if kv is None else kv
            if kv != self.heads:
                raise ValueError(f"{where}: attention='mha' means kv_heads == heads ({self.heads}), got kv_heads={kv}; "
                                 "use attention='gqa' for fewer K/V heads")
        elif attention == "mqa":
            kv = 1 if kv is None else kv
            if kv != 1:
                raise ValueError(f"{where}: attention='mqa' means a single K/V head (kv_heads == 1), got kv_heads={kv}")
        elif attention == "gqa":
            if kv is None:
                raise ValueError(f"{where}: attention='gqa' needs kv_heads (a divisor of heads={self.heads})")
        else:  # mla: kv_heads does not size the cache; keep the config's value (often == heads)
            kv = self.heads if kv is None else kv
            if self.kv_lora_rank is None or self.qk_rope_head_dim is None:
                raise ValueError(f"{where}: attention='mla' needs kv_lora_rank (the latent width) and "
                                 f"qk_rope_head_dim (the decoupled RoPE key), got {self.kv_lora_rank!r} and "
                                 f"{self.qk_rope_head_dim!r}")
        if kv > self.heads or self.heads % kv:
            raise ValueError(f"{where}: kv_heads ({kv}) must divide heads ({self.heads}): each K/V head serves "
                             "a whole group of query heads")
        set_("kv_heads", kv)
        if attention != "mla" and (self.kv_lora_rank is not None or self.qk_rope_head_dim is not None):
            raise ValueError(f"{where}: kv_lora_rank and qk_rope_head_dim belong to attention='mla', "
                             f"not {attention!r}")

        if self.head_dim is None:
            if attention == "mla" and self.qk_nope_head_dim is not None:
                set_("head_dim", self.qk_nope_head_dim + self.qk_rope_head_dim)
            elif self.hidden % self.heads:
                raise ValueError(f"{where}: hidden ({self.hidden}) is not a multiple of heads ({self.heads}); "
                                 "give head_dim explicitly")
            else:
                set_("head_dim", self.hidden // self.heads)

        if self.num_experts:
            if not 1 <= self.experts_per_token <= self.num_experts:
                raise ValueError(f"{where}: experts_per_token must be 1..num_experts ({self.num_experts}), "
                                 f"got {self.experts_per_token}")
            if self.first_dense_layers > self.layers:
                raise ValueError(f"{where}: first_dense_layers ({self.first_dense_layers}) exceeds layers ({self.layers})")
        elif self.experts_per_token or self.shared_experts:
            raise ValueError(f"{where}: experts_per_token/shared_experts need num_experts > 0")

    def __repr__(self) -> str:
        shown = ["name", "layers", "hidden", "heads", "kv_heads", "head_dim", "attention"]
        if self.attention == "mla":
            shown += ["kv_lora_rank", "qk_rope_head_dim"]
        if self.sliding_window is not None:
            shown.append("sliding_window")
        return f"ModelConfig({', '.join(f'{k}={getattr(self, k)!r}' for k in shown)})"

    @property
    def group_size(self) -> int:
        """Query heads per K/V head (1 for MHA, ``heads`` for MQA).

        >>> get_model("llama-2-70b").group_size
        8
        """
        return self.heads // self.kv_heads

    @property
    def is_moe(self) -> bool:
        """Whether the MLP is a mixture of experts.

        >>> get_model("mixtral-8x7b").is_moe, get_model("mistral-7b").is_moe
        (True, False)
        """
        return self.num_experts > 0

    @classmethod
    def from_hf_config(cls, config: dict, *, name: str, **overrides: Any) -> "ModelConfig":
        """Build a ModelConfig from a Hugging Face ``config.json`` dict; keyword arguments override fields.

        Reads ``num_hidden_layers``, ``hidden_size``, ``num_attention_heads``, ``num_key_value_heads``
        (``multi_query: true`` means one), ``head_dim``, the MLA fields, ``sliding_window`` (ignored when
        ``use_sliding_window`` is false), the MoE fields of Mixtral (``num_local_experts``) and DeepSeek
        (``n_routed_experts``, ``n_shared_experts``, ``first_k_dense_replace``), ``vocab_size``,
        ``intermediate_size`` and ``tie_word_embeddings``.

        >>> ModelConfig.from_hf_config({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
        ...                             "num_key_value_heads": 2}, name="toy").attention
        'gqa'
        """
        if not isinstance(config, dict):
            raise TypeError(f"config must be a dict (a parsed config.json), got {type(config).__name__}")
        c = config

        def first(*keys: str) -> Any:
            for k in keys:
                if c.get(k) is not None:
                    return c[k]
            return None

        required = {"num_hidden_layers": "n_layer", "hidden_size": "n_embd", "num_attention_heads": "n_head"}
        missing = [k for k, old in required.items() if first(k, old) is None]
        if missing:
            raise ValueError(f"config for {name!r} lacks {missing}")
        kw: dict[str, Any] = dict(
            name=name,
            layers=first("num_hidden_layers", "n_layer"),
            hidden=first("hidden_size", "n_embd"),
            heads=first("num_attention_heads", "n_head"),
            head_dim=c.get("head_dim"),
            vocab_size=c.get("vocab_size"),
            intermediate_size=c.get("intermediate_size"),
            max_position_embeddings=c.get("max_position_embeddings"),
        )
        if c.get("tie_word_embeddings") is not None:
            kw["tie_word_embeddings"] = bool(c["tie_word_embeddings"])
        if c.get("kv_lora_rank") is not None:
            kw.update(attention="mla", kv_lora_rank=c["kv_lora_rank"], qk_rope_head_dim=c.get("qk_rope_head_dim"),
                      q_lora_rank=c.get("q_lora_rank"), qk_nope_head_dim=c.get("qk_nope_head_dim"),
                      v_head_dim=c.get("v_head_dim"), kv_heads=c.get("num_key_value_heads"))
            kw["head_dim"] = None  # MLA's config.json has no head_dim; use nope + rope
        elif c.get("multi_query") and not c.get("new_decoder_architecture"):
            kw["kv_heads"] = 1
        else:
            kw["kv_heads"] = first("num_key_value_heads", "num_kv_heads")
        if c.get("use_sliding_window") is not False and c.get("sliding_window") is not None:
            kw["sliding_window"] = c["sliding_window"]
        experts = first("num_local_experts", "n_routed_experts", "num_experts")
        if experts:
            kw.update(num_experts=experts, experts_per_token=c.get("num_experts_per_tok", 0),
                      shared_experts=c.get("n_shared_experts") or 0,
                      moe_intermediate_size=c.get("moe_intermediate_size"),
                      first_dense_layers=c.get("first_k_dense_replace") or 0)
        kw.update(overrides)
        return cls(**kw)


# ----------------------------------------------------------------------------------------------
# presets
@lru_cache(maxsize=1)
def _presets() -> dict[str, dict]:
    text = resources.files("fp8lab").joinpath("data/models.json").read_text(encoding="utf-8")
    return json.loads(text)["models"]



@lru_cache(maxsize=1)
def _index() -> dict[str, str]:
    index: dict[str, str] = {}
    for key, entry in _presets().items():
        for n in (key, entry.get("hf_id"), *(entry.get("aliases") or ())):
            if n:
                index[lookup_key(n)] = key
                index[lookup_key(n.split("/")[-1])] = key
    return index


def list_models() -> list[str]:
    """Names of the preset models, in the order of the data file.

    >>> "deepseek-v3" in list_models(), len(list_models()) >= 12
    (True, True)
    """
    return list(_presets())


def model_info(name: str) -> dict:
    """The raw preset entry (published config fields, source, parameter count) for a model name.

    >>> model_info("llama-2-7b")["config"]["num_hidden_layers"]
    32
    """
    return json.loads(json.dumps(_presets()[_resolve(name)]))  # a deep copy the caller may change


def _resolve(name: str) -> str:
    if not isinstance(name, str):
        raise TypeError(f"a model is a preset name (str) or a ModelConfig, got {type(name).__name__}")
    try:
        return _index()[lookup_key(name)]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; known models: {', '.join(list_models())}") from None


@lru_cache(maxsize=None)
def _build(key: str) -> ModelConfig:
    entry = _presets()[key]
    return ModelConfig.from_hf_config(
        entry["config"], name=key, source=entry["source"], published_params=entry.get("published_params"),
        published_active_params=entry.get("published_active_params"), **entry.get("arch", {}))


def get_model(name: "str | ModelConfig") -> ModelConfig:
    """A preset :class:`ModelConfig` by name, Hugging Face id or alias (a ModelConfig passes through).

    >>> get_model("meta-llama/Llama-2-7b-hf").name
    'llama-2-7b'
    >>> get_model("gpt-5")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown model 'gpt-5'; known models: llama-2-7b, ...
    """
    if isinstance(name, ModelConfig):
        return name
    return _build(_resolve(name))

