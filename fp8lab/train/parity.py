"""Loss parity over seeds: each recipe's final validation loss as mean ± sd, its gap to ``fp32``, and whether the gap is real.

A gap between two recipes is a difference of two noisy numbers: the seed moves the initialisation
and the batches, and after 2000 steps that moves the final loss by more than most recipes differ.
So a gap is called *real* only where Welch's t-test (unequal variances) rejects "same mean" at 5%;
anything else is *within noise* and is not ranked. A recipe run from one seed (the controls) has no
spread of its own and is labelled so.

>>> rows = [{"recipe": "fp32", "seed": s, "control": False, "final_val_loss": v} for s, v in enumerate([2.0, 2.1, 1.9])]
>>> rows += [{"recipe": "x", "seed": s, "control": False, "final_val_loss": v} for s, v in enumerate([3.0, 3.1, 2.9])]
>>> [(r.recipe, r.verdict) for r in parity_table(rows)]
[('fp32', 'baseline'), ('x', 'real')]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

__all__ = ["student_t_sf2", "welch", "ParityRow", "parity_table", "markdown_table", "ALPHA"]

#: The significance level at which a gap is called real.
ALPHA = 0.05


def _betacf(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            return h
    raise ArithmeticError("the incomplete beta continued fraction did not converge")


def _betainc(a: float, b: float, x: float, y: float) -> float:
    """The regularized incomplete beta function I_x(a, b) for x in [0, 1], with y = 1 - x given exactly by the caller."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(y))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, y) / b


def student_t_sf2(t: float, df: float) -> float:
    """Two-sided tail probability P(|T| >= |t|) of Student's t with ``df`` degrees of freedom (df may be fractional).

    >>> round(student_t_sf2(2.776445, 4), 4), round(student_t_sf2(1.959964, 1e9), 4)
    (0.05, 0.05)
    """
    if not df > 0 or math.isnan(t):
        raise ValueError(f"Student's t needs df > 0 and a number, got t={t}, df={df}")
    if math.isinf(t):
        return 0.0
    return _betainc(df / 2.0, 0.5, df / (df + t * t), t * t / (df + t * t))


@dataclass(frozen=True)
class Welch:
    """Welch's unequal-variance t-test of two samples: the statistic, its degrees of freedom, the two-sided p."""

    t: float
    df: float
    p: float


def welch(a: Sequence[float], b: Sequence[float]) -> Welch:
    """Welch's t-test of "a and b have the same mean" (each at least 2 values; both without spread: p is 0 or 1).

    >>> w = welch([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]); round(w.t, 3), round(w.df, 1), round(w.p, 4)
    (-3.674, 4.0, 0.0213)
    """
    if len(a) < 2 or len(b) < 2:
        raise ValueError(f"Welch's test needs at least 2 values per sample, got {len(a)} and {len(b)}")
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va = sum((x - ma) ** 2 for x in a) / (len(a) - 1)
    vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1)
    sa, sb = va / len(a), vb / len(b)
    if sa + sb == 0:
        return Welch(math.copysign(math.inf, ma - mb) if ma != mb else 0.0, math.inf, 0.0 if ma != mb else 1.0)
    t = (ma - mb) / math.sqrt(sa + sb)
    df = (sa + sb) ** 2 / ((sa ** 2 / (len(a) - 1) if sa else 0.0) + (sb ** 2 / (len(b) - 1) if sb else 0.0))
    return Welch(t, df, student_t_sf2(t, df))


@dataclass(frozen=True)
class ParityRow:
    """One recipe over its seeds: final validation loss mean and sd, the gap to the baseline with its standard error, the verdict."""

    recipe: str
    control: bool
    seeds: tuple[int, ...]
    mean: float
    sd: float | None
    gap: float | None
    gap_se: float | None
    gap_pct: float | None
    p: float | None
    verdict: str  # "baseline", "real", "within noise", "one seed", "diverged"


def _sd(xs: Sequence[float]) -> float | None:
    if len(xs) < 2:
        return None
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def parity_table(rows: Iterable[dict[str, Any]], baseline: str = "fp32", alpha: float = ALPHA) -> list[ParityRow]:
    """Group run rows (recipe, seed, control, final_val_loss) by recipe and test each recipe's gap to ``baseline``.

    The gap's standard error is sqrt(sd_r²/n_r + sd_b²/n_b). A recipe run from one seed is compared
    with the baseline's run of that seed (same initialisation and batches), has no standard error and
    gets the verdict "one seed" (no test). A recipe whose runs diverged (no final loss) is
    "diverged". Order: the rows' first appearance.

    >>> rows = [{"recipe": r, "seed": s, "control": False, "final_val_loss": v}
    ...         for r, vs in (("fp32", [2.0, 2.1, 1.9]), ("y", [2.01, 2.12, 1.93])) for s, v in enumerate(vs)]
    >>> parity_table(rows)[1].verdict
    'within noise'
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(r["recipe"], []).append(r)
    if baseline not in groups:
        raise ValueError(f"no {baseline!r} rows to compare with; recipes: {sorted(groups)}")
    seen_seeds = {}
    for name, rs in groups.items():
        seeds = [r["seed"] for r in rs]
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"{name} has two rows for one seed: {sorted(seeds)}")
        seen_seeds[name] = tuple(sorted(seeds))
    base = [r["final_val_loss"] for r in groups[baseline] if r["final_val_loss"] is not None]
    bmean, bsd = sum(base) / len(base), _sd(base)
    out = []
    for name, rs in groups.items():
        vals = [r["final_val_loss"] for r in rs]
        control = any(bool(r.get("control")) for r in rs)
        if any(v is None or not math.isfinite(v) for v in vals):
            out.append(ParityRow(name, control, seen_seeds[name], math.nan, None, None, None, None, None, "diverged"))
            continue
        mean, sd = sum(vals) / len(vals), _sd(vals)
        if name == baseline:
            out.append(ParityRow(name, control, seen_seeds[name], mean, sd, None, None, None, None, "baseline"))
            continue
        if len(vals) < 2 or len(base) < 2:
            # one seed: against the baseline run of the same seed(s) where there is one (same initialisation and
            # batches), else its mean; no spread of its own, so no standard error and no test
            same = [r["final_val_loss"] for r in groups[baseline] if r["seed"] in seen_seeds[name]
                    and r["final_val_loss"] is not None]
            ref = sum(same) / len(same) if len(same) == len(vals) else bmean
            gap = mean - ref
            out.append(ParityRow(name, control, seen_seeds[name], mean, sd, gap, None, 100 * gap / ref, None, "one seed"))
            continue
        gap = mean - bmean
        se = math.sqrt((sd ** 2 if sd is not None else 0.0) / len(vals) + (bsd ** 2 if bsd is not None else 0.0) / len(base))
        w = welch(vals, base)
        out.append(ParityRow(name, control, seen_seeds[name], mean, sd, gap, se, 100 * gap / bmean, w.p,
                             "real" if w.p < alpha else "within noise"))
    return out


def markdown_table(table: Sequence[ParityRow], extra: dict[str, dict[str, str]] | None = None) -> str:
    """The README's table: recipe, seeds, val loss mean ± sd, gap to fp32 ± se (and %), Welch's p, verdict (+ extra columns).

    ``extra`` maps a column name to {recipe: text}.

    >>> rows = [{"recipe": "fp32", "seed": s, "control": False, "final_val_loss": v} for s, v in enumerate([2.0, 2.1])]
    >>> print(markdown_table(parity_table(rows)).splitlines()[2])
    | `fp32` | 0, 1 | 2.0500 ± 0.0707 |  |  |  | baseline |
    """
    extra = extra or {}
    head = ["recipe", "seeds", "val loss (mean ± sd)", "gap to `fp32` (± se)", "gap %", "Welch p", "verdict", *extra]
    lines = ["| " + " | ".join(head) + " |", "|---|---|---:|---:|---:|---:|---|" + "---:|" * len(extra)]
    for r in table:
        name = f"`{r.recipe}`" + (" (control)" if r.control else "")
        seeds = ", ".join(str(s) for s in r.seeds)
        loss = "diverged" if r.verdict == "diverged" else f"{r.mean:.4f}" + (f" ± {r.sd:.4f}" if r.sd is not None else "")
        gap = "" if r.gap is None else f"{r.gap:+.4f}" + (f" ± {r.gap_se:.4f}" if r.gap_se is not None else "")
        pct = "" if r.gap_pct is None else f"{r.gap_pct:+.2f}%"
        p = "" if r.p is None else f"{r.p:.2f}" if r.p >= 0.01 else f"{r.p:.0e}"
        cells = [name, seeds, loss, gap, pct, p, r.verdict, *(extra[c].get(r.recipe, "") for c in extra)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
