"""fp8lab.train.parity: Student's t against closed forms and textbook critical values, Welch's test, the verdicts."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fp8lab.train.parity import parity_table, student_t_sf2, welch

#: Two-sided 5% critical values of Student's t (any statistics table, e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2).
CRITICAL_5PCT = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 8: 2.306, 10: 2.228, 20: 2.086, 30: 2.042,
                 100: 1.984}


@pytest.mark.parametrize("df,t", sorted(CRITICAL_5PCT.items()))
def test_the_tail_at_the_textbook_critical_values_is_five_percent(df, t):
    assert student_t_sf2(t, df) == pytest.approx(0.05, abs=2e-4)


@settings(max_examples=300, deadline=None)
@given(st.floats(-1e6, 1e6, allow_nan=False))
def test_one_and_two_degrees_of_freedom_match_their_closed_forms(t):
    """df=1 is Cauchy's (1 - 2 atan|t| / pi); df=2 is 1 - |t| / sqrt(2 + t^2)."""
    assert student_t_sf2(t, 1) == pytest.approx(1 - 2 * math.atan(abs(t)) / math.pi, rel=1e-9, abs=1e-12)
    assert student_t_sf2(t, 2) == pytest.approx(1 - abs(t) / math.sqrt(2 + t * t), rel=1e-9, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 50), st.floats(0, 50), st.floats(0.5, 200))
def test_the_tail_falls_as_t_grows(t1, t2, df):
    lo, hi = sorted((t1, t2))
    assert 0.0 <= student_t_sf2(hi, df) <= student_t_sf2(lo, df) + 1e-12 <= 1.0 + 1e-12


def test_welch_by_hand():
    """Samples (1,2,3) and (4,5,6): t = -3/sqrt(2/3), df = 4 (equal variances and sizes), p from the df-4 tail."""
    w = welch([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])
    assert w.t == pytest.approx(-3 / math.sqrt(2 / 3)) and w.df == pytest.approx(4.0)
    assert w.p == pytest.approx(student_t_sf2(w.t, 4))
    with pytest.raises(ValueError, match="at least 2"):
        welch([1.0], [1.0, 2.0])


def _rows(name, values, control=False, start=0):
    return [{"recipe": name, "seed": start + i, "control": control, "final_val_loss": v} for i, v in enumerate(values)]


def test_verdicts_cover_every_case():
    rows = (_rows("fp32", [1.95, 1.98, 1.94]) + _rows("far", [2.50, 2.52, 2.49]) + _rows("near", [1.951, 1.99, 1.93])
            + _rows("ctl", [3.0], control=True) + [{"recipe": "dead", "seed": 0, "control": True, "final_val_loss": None}])
    got = {r.recipe: r for r in parity_table(rows)}
    assert [r for r in got] == ["fp32", "far", "near", "ctl", "dead"]
    assert got["fp32"].verdict == "baseline" and got["far"].verdict == "real" and got["near"].verdict == "within noise"
    assert got["ctl"].verdict == "one seed" and got["ctl"].p is None and got["dead"].verdict == "diverged"
    assert got["ctl"].gap == pytest.approx(3.0 - 1.95) and got["ctl"].gap_se is None  # against fp32's seed-0 run
    far = got["far"]
    assert far.gap == pytest.approx(sum([2.50, 2.52, 2.49]) / 3 - sum([1.95, 1.98, 1.94]) / 3)
    with pytest.raises(ValueError, match="two rows for one seed"):
        parity_table(_rows("fp32", [1.0, 2.0]) + _rows("fp32", [1.0]))
    with pytest.raises(ValueError, match="no 'fp32' rows"):
        parity_table(_rows("x", [1.0, 2.0]))
