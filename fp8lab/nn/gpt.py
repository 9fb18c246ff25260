"""A character-level GPT with nanoGPT's architecture (Karpathy's nanoGPT ``model.py``), FP32 by default.

Token and position embeddings; ``n_layer`` pre-LayerNorm blocks of causal self-attention
(``c_attn`` to q, k, v; ``c_proj``) and a GELU MLP (``c_fc``, ``c_proj``); a final LayerNorm; an
``lm_head`` tied to the token embedding. ``bias=False`` everywhere, weights initialised
N(0, 0.02) and the residual projections ``c_proj`` N(0, 0.02 / sqrt(2 n_layer)), as nanoGPT does.
:func:`fp8lab.nn.convert` then swaps its Linear layers (not ``lm_head``) for Fp8Linear.

>>> import torch
>>> torch.manual_seed(0) is not None
True
>>> m = GPT(GPTConfig(vocab_size=10, block_size=8, n_layer=1, n_head=2, n_embd=16))
>>> logits, loss = m(torch.zeros(2, 8, dtype=torch.long), torch.zeros(2, 8, dtype=torch.long))
>>> tuple(logits.shape), m.lm_head.weight is m.wte.weight, m.num_params()
((2, 8, 10), True, 3408)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from ..validation import check_bool, check_int

__all__ = ["GPTConfig", "GPT"]


@dataclass(frozen=True)
class GPTConfig:
    """The model's shape: nanoGPT's ``shakespeare_char`` CPU example by default (4 layers, 4 heads, width 128, context 64).

    >>> GPTConfig().n_embd // GPTConfig().n_head
    32
    """

    vocab_size: int = 65
    block_size: int = 64
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    bias: bool = False

    def __post_init__(self) -> None:
        for name in ("vocab_size", "block_size", "n_layer", "n_head", "n_embd"):
            check_int("GPTConfig", name, getattr(self, name), minimum=1)
        check_bool("GPTConfig", "bias", self.bias)
        if self.n_embd % self.n_head:
            raise ValueError(f"GPTConfig.n_embd ({self.n_embd}) must be a multiple of n_head ({self.n_head})")

    def as_dict(self) -> dict:
        """The fields as a plain dict.

        >>> GPTConfig().as_dict()["n_layer"]
        4
        """
        return asdict(self)


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention (softmax in FP32)."""

    def __init__(self, c: GPTConfig) -> None:
        super().__init__()
        self.c_attn = nn.Linear(c.n_embd, 3 * c.n_embd, bias=c.bias)
        self.c_proj = nn.Linear(c.n_embd, c.n_embd, bias=c.bias)
        self.n_head = c.n_head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.n_head, d // self.n_head).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, d))


class MLP(nn.Module):
    """Two linear layers with a GELU between them (4x width)."""

    def __init__(self, c: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(c.n_embd, 4 * c.n_embd, bias=c.bias)
        self.c_proj = nn.Linear(4 * c.n_embd, c.n_embd, bias=c.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c_proj(F.gelu(self.c_fc(x)))


class Block(nn.Module):
    """A pre-LayerNorm transformer block."""

    def __init__(self, c: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(c.n_embd, bias=c.bias)
        self.attn = CausalSelfAttention(c)
        self.ln_2 = nn.LayerNorm(c.n_embd, bias=c.bias)
        self.mlp = MLP(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """nanoGPT's GPT: embeddings, blocks, final LayerNorm, tied ``lm_head``; ``forward(idx, targets)`` gives (logits, loss).

    >>> import torch
    >>> GPT(GPTConfig(vocab_size=5, n_layer=1, n_embd=8, n_head=2, block_size=4))(torch.zeros(1, 4, dtype=torch.long))[1] is None
    True
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"GPT takes a GPTConfig, got {type(config).__name__}")
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.h = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying, as nanoGPT
        self.apply(self._init_weights)
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init_weights(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)

    def num_params(self) -> int:
        """Parameters, the tied head counted once (position embeddings included).

        >>> GPT(GPTConfig(vocab_size=3, n_layer=1, n_embd=4, n_head=1, block_size=2)).num_params()
        224
        """
        return sum(p.numel() for p in self.parameters())

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        """Logits (B, T, vocab) and the mean cross-entropy against ``targets`` (None without targets)."""
        b, t = idx.shape
        if t > self.config.block_size:
            raise ValueError(f"sequence of {t} tokens is longer than block_size={self.config.block_size}")
        pos = torch.arange(t, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss
