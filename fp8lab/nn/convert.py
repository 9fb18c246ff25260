"""``convert``: swap a model's ``torch.nn.Linear`` layers for :class:`Fp8Linear` in place, and say what was left.

By default the output head (a Linear named ``lm_head``, ``head``, ``output`` or ``classifier``)
stays FP32, as do every module that is not a Linear (embeddings, norms, attention's softmax), as
DeepSeek-V3 keeps the embedding, output head, normalisations and attention in BF16/FP32
(arXiv 2412.19437, section 3.3.1).

>>> import torch
>>> m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.LayerNorm(4), torch.nn.Linear(4, 2))
>>> rep = convert(m, "fp8-tensorwise-current", skip=("2",))
>>> rep.swapped, rep.left
(('0',), {'1': 'not a linear layer (LayerNorm): stays FP32', '2': "skipped: matches 'skip' pattern '2'"})
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Iterable

import torch

from .linear import Fp8Linear
from .recipe import LinearRecipe

__all__ = ["convert", "ConvertReport", "HEAD_NAMES"]

#: Names of output heads that stay FP32 by default.
HEAD_NAMES = ("lm_head", "head", "output", "classifier")


@dataclass(frozen=True)
class ConvertReport:
    """What :func:`convert` did: the names it swapped, and the names it left with the reason.

    >>> ConvertReport(("a",), {"b": "why"}).swapped
    ('a',)
    """

    swapped: tuple[str, ...]
    left: dict[str, str] = field(default_factory=dict)
    recipe: str = ""

    def __str__(self) -> str:
        lines = [f"recipe {self.recipe}: swapped {len(self.swapped)} Linear layers"]
        lines += [f"  swapped  {n}" for n in self.swapped]
        lines += [f"  left     {n}: {why}" for n, why in self.left.items()]
        return "\n".join(lines)


def convert(model: torch.nn.Module, recipe: "LinearRecipe | str", skip: Iterable[str] = ()) -> ConvertReport:
    """Replace each ``nn.Linear`` of ``model`` (not the output head, nor a name matching a ``skip`` glob) by an Fp8Linear.

    The new layers share the old ones' Parameter objects (weight tying and optimizers keep
    working); each gets its own scaling state. A Linear reachable under several names (a shared
    module) becomes one Fp8Linear placed under all of them, and the report lists every name; if one
    of its names is skipped (or is a head), it stays an ``nn.Linear`` under all of them. ``skip`` holds glob patterns matched against the
    qualified module name (``"blocks.0.*"``) or its last component.

    >>> import torch
    >>> m = torch.nn.Sequential(torch.nn.Linear(2, 2)); convert(m, "bf16").swapped, type(m[0]).__name__
    (('0',), 'Fp8Linear')
    >>> lin = torch.nn.Linear(2, 2); m = torch.nn.Sequential(lin, torch.nn.ReLU(), lin)
    >>> convert(m, "mxfp8").swapped, m[0] is m[2]
    (('0', '2'), True)
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"convert takes a torch.nn.Module, got {type(model).__name__}")
    if isinstance(skip, str):
        skip = (skip,)
    patterns = tuple(skip)
    if not all(isinstance(p, str) for p in patterns):
        raise TypeError("skip is an iterable of glob patterns (strings) matched against module names")
    recipe = LinearRecipe.from_name(recipe)
    swapped: list[str] = []
    left: dict[str, str] = {}
    # every path, shared modules under each of their names (named_modules() alone lists a module once)
    paths = [(n, m) for n, m in model.named_modules(remove_duplicate=False) if n]
    names_of: dict[int, list[str]] = {}
    for name, module in paths:
        names_of.setdefault(id(module), []).append(name)

    def why_left(name: str) -> str | None:
        short = name.rsplit(".", 1)[-1]
        hit = next((p for p in patterns if fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(short, p)), None)
        if hit is not None:
            return f"skipped: matches 'skip' pattern {hit!r}"
        if short in HEAD_NAMES:
            return "output head: stays FP32"
        return None

    new: dict[int, Fp8Linear] = {}  # one Fp8Linear per Linear object, however many names reach it
    for name, module in paths:
        if name in left or name in swapped:
            continue
        if isinstance(module, Fp8Linear):
            left[name] = f"already an Fp8Linear (recipe {module.recipe.name})"
        elif type(module) is torch.nn.Linear or id(module) in new:
            names = names_of[id(module)]
            reasons = {n: why_left(n) for n in names}
            kept = next(((n, w) for n, w in reasons.items() if w is not None), None)
            if kept is not None:  # one object cannot be both: a shared Linear left under one name stays under all
                for n in names:
                    left[n] = reasons[n] or f"{kept[1]} (shared with {kept[0]})"
                continue
            layer = new.get(id(module))
            if layer is None:
                layer = new[id(module)] = Fp8Linear.from_linear(module, recipe)
            for n in names:
                parent = model.get_submodule(n.rsplit(".", 1)[0]) if "." in n else model
                setattr(parent, n.rsplit(".", 1)[-1], layer)
                swapped.append(n)
        elif any(True for _ in module.parameters(recurse=False)):
            left[name] = f"not a linear layer ({type(module).__name__}): stays FP32"
    return ConvertReport(tuple(swapped), left, recipe.name)
