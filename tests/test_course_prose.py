"""The numbers-in-prose checker: what counts as a number, how it is read, and when a chapter backs it."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest

from fp8lab.course.prose import NumberPool, numbers_in_prose, numbers_in_text, unbacked_numbers


def texts(md: str) -> list[str]:
    return [n.text for n in numbers_in_prose(md)]


def value(md: str) -> float:
    (n,) = numbers_in_prose(md)
    return float(n.value)


@pytest.mark.parametrize("written, expected", [
    ("1,024 elements", 1024.0), ("65\u202f520 is the threshold", 65520.0), ("65\u00a0520 here", 65520.0),
    ("a gap of 1e-5", 1e-5), ("about 3.39e38", 3.39e38), ("the unit 2^-9", 2.0**-9), ("2^(-9) as well", 2.0**-9),
    ("2**-24 in Python", 2.0**-24), ("75% of them", 75.0), ("8× finer", 8.0), ("1.5x slower", 1.5), ("−448 too", 448.0),
])
def test_numbers_are_normalised(written: str, expected: float) -> None:
    assert value(written) == pytest.approx(expected, rel=1e-12)


def test_a_power_of_ten_with_a_fractional_exponent_states_its_exponent() -> None:
    (n,) = numbers_in_prose("a dynamic range of about 10^2.7")
    assert n.value == Decimal("2.7") and n.unit == Decimal("0.1")


@pytest.mark.parametrize("md", [
    "FP8 and E4M3 and E5M2 on an H100 with sm_90", "LLaMA-3-70B and Qwen2.5-72b and DeepSeek-V3.1", "**Q1.** why",
    "see section 4.2 and sections 4 and 6", "§3.3.2 and §3.5.2", "chapter 03, chapters 07 and 09", "Table 1, Figure 3a",
    "issue #4", "arXiv:2412.19437", "torch 0.9.6 and 2.13.0", "code 0x7E", "IEEE 754-2019", "(Micikevicius et al. 2022)",
    "Shazeer 2019 and (2023)", "[03 FP8](03_fp8.ipynb)", "https://example.com/a/448", "two, 3 and 10 things",
    "`fl.quantize(1e-5, 'e4m3')`", "`bits >> 23`", "`mantissa_bits=23`", "`0 1111 110` and `S.1111.111`",
    "## 4. FP8\n### 4.1 E4M3\n1. the cast", "2^10, 2^20 and 2^30 bytes, and 10^9", "`fp8lab/data/models.json`",
])
def test_what_is_not_a_claim(md: str) -> None:
    assert texts(md) == [], md


def test_shapes_and_bit_counts_are_claims() -> None:
    assert texts("1x128 tiles and 128x128 blocks; 32-element blocks") == ["128", "128", "128", "32"]


def test_everything_after_sources_is_left_out() -> None:
    assert texts("max 448\n\n## Sources\n- Paper, 2022, page 17, 480 values") == ["448"]


@pytest.mark.parametrize("prose, output, backed", [
    ("1.34", "1.3422", True), ("1.3", "1.3422", True), ("1.35", "1.3422", False), ("65504", "6.55e+04", False),
    ("2^-9", "0.00195", True), ("2^-9", "2^-9", True), ("0.3", "0", False), ("75%", "0.753", True),
    ("75%", "75.3%", True), ("448", "448.0", True), ("448", "447.9", True), ("1,342,177,280", "1342177280", True),
    ("3.39e38", "3.38953e+38", True), ("0.001", "0.0010", True), ("11 dB", "+11.5 dB", False), ("+11.5 dB", "11.5", True),
])
def test_an_output_backs_a_number_written_to_its_precision(prose: str, output: str, backed: bool) -> None:
    (n,) = numbers_in_prose(prose)
    assert NumberPool.from_text(output).backs(n) is backed


def test_outputs_are_read_without_exclusions() -> None:
    assert [n.text for n in numbers_in_text("float8_e4m3fn max 448.0")] == ["8", "4", "3", "448.0"]


def cell(kind: str, source: str, out: str | None = None) -> dict:
    c = {"cell_type": kind, "source": source, "metadata": {}}
    if kind == "code":
        c["outputs"] = [] if out is None else [{"output_type": "stream", "name": "stdout", "text": out}]
    return c


def test_an_earlier_output_a_citation_or_the_introduced_cell_backs_a_number() -> None:
    nb = {"metadata": {"fp8lab": {"cited_numbers": {"1024": "TE amax_history_len default"}}}, "cells": [
        cell("markdown", "# 03 — FP8"),
        cell("code", "", "max 448.0"),
        cell("markdown", "448 is backed; 1024 is cited; 512 is printed next; 999 nowhere"),
        cell("code", "", "512"),
        cell("markdown", "and 777 only later"),
        cell("code", "", "777"),
    ]}
    assert [(f.cell, f.text) for f in unbacked_numbers(nb)] == [(2, "999")]


def test_a_later_output_does_not_back_a_number_except_the_hook_and_a_myth_claim() -> None:
    nb = {"metadata": {}, "cells": [
        cell("markdown", "# 03 — FP8\n\n> Why 448?"),           # the hook: any output of the chapter backs it
        cell("code", "", "nothing yet"),
        cell("markdown", "Some text about 240."),               # not printed until later: unbacked
        cell("markdown", "> **Myth: \"The max is 480.\"**\n\nand 300 outside the claim"),
        cell("markdown", "(a note between the claim and its check)"),
        cell("code", "", "480 448 240 300"),
        cell("markdown", "**Correct:** 448."),
    ]}
    assert [(f.cell, f.text) for f in unbacked_numbers(nb)] == [(2, "240"), (3, "300")]


def test_an_explicit_cited_list_overrides_the_metadata() -> None:
    nb = {"metadata": {}, "cells": [cell("markdown", "# 01\n\n"), cell("code", "", ""), cell("markdown", "in 2025")]}
    assert [f.text for f in unbacked_numbers(nb)] == ["2025"]
    assert unbacked_numbers(nb, {"2025": "torchao release notes"}) == []


# --- claims: a comparison sentence marked in the prose, asserted by the code ---------------------------

from fp8lab.course.claims import chapter_claims, claim, claim_markers, claim_mismatches, claims_in_code  # noqa: E402


@pytest.mark.parametrize("condition", [True, 1, np.bool_(True),
                                       np.array([True])])
def test_a_true_claim_is_silent(condition, capsys) -> None:
    assert claim("04-first-step-fits", condition, "the first step fits under 448") is None
    assert capsys.readouterr() == ("", "")


@pytest.mark.parametrize("condition", [False, 0, np.bool_(False), np.float32(0.3) > 0.4])
def test_a_false_claim_raises_naming_its_id_and_statement(condition) -> None:
    with pytest.raises(AssertionError, match=r"claim 01-fp32-sum-equal does not hold: 0\.1 \+ 0\.2 equals 0\.3"):
        claim("01-fp32-sum-equal", condition, "0.1 + 0.2 equals 0.3 in FP32")


@pytest.mark.parametrize("bad_id", ["fp32-sum", "1-x", "01", "01-Upper", "01 x", "01-a b", "", None, 12])
def test_a_malformed_claim_id_is_refused_everywhere(bad_id) -> None:
    with pytest.raises(ValueError, match="claim ID"):
        claim(bad_id, True, "s")
    if isinstance(bad_id, str) and " " not in bad_id:
        with pytest.raises(ValueError, match="claim ID"):
            claim_markers(f"text <!-- claim:{bad_id} -->") if bad_id else claim_markers("<!-- claim:-x -->")


def test_an_ambiguous_condition_or_an_empty_statement_is_refused() -> None:
    with pytest.raises(TypeError, match="one truth value"):
        claim("05-x", np.array([True, True]), "s")
    with pytest.raises(ValueError, match="statement"):
        claim("05-x", True, "  ")


def test_markers_are_read_in_order_and_only_in_their_exact_form() -> None:
    md = ("Equal in FP32. <!-- claim:01-a --> Differs in float64.<!-- claim:01-b -->\n"
          "<!--claim:01-c--> <!-- claim: 01-d --> `claim:01-e`")
    assert claim_markers(md) == ["01-a", "01-b"]


@pytest.mark.parametrize("source, ids", [
    ('claim("03-a", x, "s")', ["03-a"]),
    ("%matplotlib inline\nfrom fp8lab.course import claims\nclaims.claim('03-b', y, 's')", ["03-b"]),
    ("for k in range(3):\n    claim(\"03-c\", k < 3, 's')\nclaim('03-d', 1, 's')", ["03-c", "03-d"]),
    ("!ls\nprint('claim(\"03-e\", 1, 1)')", []),     # a string, not a call
    ("reclaim('03-f', 1, 's')", []),                 # another function
])
def test_claims_are_found_in_code_by_their_calls(source, ids) -> None:
    assert sorted(claims_in_code(source)) == ids


def test_a_claim_whose_id_is_not_a_literal_cannot_be_matched() -> None:
    with pytest.raises(ValueError, match="string literal"):
        claims_in_code("name = '03-a'\nclaim(name, True, 's')")


def test_a_chapter_is_consistent_when_marked_and_asserted_sets_are_equal() -> None:
    nb = {"cells": [cell("markdown", "A. <!-- claim:02-a --> B. <!-- claim:02-b -->"),
                    cell("code", "claim('02-a', 1, 'a')"), cell("markdown", "B again. <!-- claim:02-b -->"),
                    cell("code", "claim('02-b', 1, 'b'); claim('02-b', 1, 'b, twice')")]}
    assert chapter_claims(nb) == ({"02-a": [0], "02-b": [0, 2]}, {"02-a": [1], "02-b": [3, 3]})
    assert claim_mismatches(nb) == []
    nb["cells"][1]["source"] = "pass"                       # the sentence loses its backing
    nb["cells"].append(cell("code", "claim('02-c', 1, 'c')"))  # an assertion no sentence refers to
    assert claim_mismatches(nb) == [
        "claim 02-a is marked in the prose (cells [0]) but no code cell asserts it",
        "claim 02-c is asserted in code (cells [4]) but no sentence of the prose marks it"]


@pytest.mark.parametrize("marker", ["<!-- claim:01-fp32-sum-equal -->", "<!-- claim:05-try-e2m3-7.5 -->",
                                    "<!-- claim:08-70b-cache-is-1.34-gb -->", "<!-- claim:10-h200-ridge-lower -->"])
def test_a_claim_marker_adds_no_number_to_the_prose(marker) -> None:
    assert texts(f"FP32 rounds both to one float {marker} at 448.") == ["448"]
