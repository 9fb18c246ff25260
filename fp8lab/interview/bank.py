"""The question bank: TOML files in ``data/`` loaded into frozen :class:`Question` objects, with schema checks.

One file per topic (``data/<topic>.toml``, the format is described in ``data/README.md``). Loading
never raises on a bad question: :func:`read_bank` returns the questions it could build *and* the
problems it found, so that :func:`fp8lab.interview.verify` can report every mistake at once.

>>> q = get_question("fp8-e4m3fn-max")
>>> q.kind, q.answer, q.unit
('numeric', 448.0, '')
>>> q.text("prompt", "zh").endswith("最大有限值是多少？")
True
"""

from __future__ import annotations

import math
import pathlib
import re
import tomllib
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterable, Mapping, Sequence

__all__ = [
    "Question", "Problem", "LANGS", "TOPICS", "KINDS", "DIFFICULTIES", "DATA_DIR",
    "read_bank", "read_file", "parse_questions", "load_bank", "get_question", "schema_problems", "letters",
    "parse_precision", "stated_precisions", "DEFAULT_PRECISION",
]

#: The two languages every text is written in.
LANGS: tuple[str, ...] = ("en", "zh")
#: The topics, in course order (one data file each; ``myths`` questions usually name a topic of their own).
TOPICS: tuple[str, ...] = ("float_anatomy", "fp16_bf16", "fp8", "microscaling", "scaling", "gemm", "training",
                           "int8_fp4", "kv_memory", "hardware", "myths")
#: Question kinds: one choice, several choices, a number with a unit, or a free answer self-assessed.
KINDS: tuple[str, ...] = ("single", "multiple", "numeric", "open")
#: Difficulties, easiest first.
DIFFICULTIES: tuple[str, ...] = ("easy", "medium", "hard")
#: Where the bank's TOML files live.
DATA_DIR = pathlib.Path(__file__).with_name("data")

_ID = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
_TAG = re.compile(r"^[a-z0-9]+(?:[-_.][a-z0-9]+)*$")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_TEXT_FIELDS = ("prompt", "explanation", "model_answer", "weak_answer", "claim", "correction")
_LIST_FIELDS = ("hints", "choices", "points")
_KEYS = {
    "id", "topic", "difficulty", "kind", "tags", "prompt", "hints", "explanation", "answer", "unit", "tolerance",
    "rel_tolerance", "choices", "choice_values", "check", "check_tol", "check_expect", "model_answer", "points",
    "weak_answer", "claim", "claim_source", "correction", "source", "precision",
}
_FILE_KEYS = {"topic", "question"}


def letters(n: int) -> tuple[str, ...]:
    """The answer letters of ``n`` choices.

    >>> letters(4)
    ('A', 'B', 'C', 'D')
    """
    return tuple(chr(ord("A") + i) for i in range(n))


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the bank: which question (or file), what kind of problem, and what was found.

    >>> print(Problem("fp8-e4m3fn-max", "check", "check computed 480.0, stored answer is 448.0"))
    fp8-e4m3fn-max: check computed 480.0, stored answer is 448.0
    """

    question_id: str | None
    kind: str  # "load" (a file), "schema" (a field), "check" (a computation that disagrees or fails)
    message: str
    file: str | None = None

    def __str__(self) -> str:
        where = self.question_id or self.file or "bank"
        return f"{where}: {self.message}"


@dataclass(frozen=True, eq=False)
class Question:
    """One interview question; texts are ``{"en": ..., "zh": ...}`` mappings, lists are tuples.

    ``answer`` is a letter (single), a tuple of letters (multiple), a float (numeric) or None (open).
    Use :meth:`text` and :meth:`items` to read a field in one language.

    >>> get_question("fp8-e4m3fn-max").items("hints", "en")[0][:20]
    'E4M3FN has no infini'
    """

    id: str
    topic: str
    difficulty: str
    kind: str
    prompt: Mapping[str, str]
    explanation: Mapping[str, str]
    answer: Any = None
    tags: tuple[str, ...] = ()
    hints: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    choices: Mapping[str, tuple[str, ...]] | None = None
    choice_values: tuple[Any, ...] | None = None
    unit: str | None = None
    tolerance: float | None = None
    rel_tolerance: float | None = None
    check: str | None = None
    check_tol: float | None = None
    check_expect: Any = None
    model_answer: Mapping[str, str] | None = None
    points: Mapping[str, tuple[str, ...]] | None = None
    weak_answer: Mapping[str, str] | None = None
    claim: Mapping[str, str] | None = None
    claim_source: str | None = None
    correction: Mapping[str, str] | None = None
    source: str | None = None
    precision: str | None = None
    file: str | None = None

    def __hash__(self) -> int:
        return hash(self.id)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Question):
            return NotImplemented
        return all(getattr(self, k) == getattr(other, k) for k in self.__dataclass_fields__)

    @property
    def is_myth(self) -> bool:
        """Whether the question debunks a circulating claim (tagged ``myth``).

        >>> get_question("fp8-e4m3fn-max").is_myth
        False
        """
        return "myth" in self.tags

    @property
    def letters(self) -> tuple[str, ...]:
        """The answer letters of a choice question (empty for numeric and open ones).

        >>> get_question("fp8-e4m3fn-max").letters
        ()
        """
        return letters(len(self.choices["en"])) if self.choices else ()

    def text(self, name: str, lang: str = "en") -> str:
        """A text field (``prompt``, ``explanation``, ``model_answer``, ...) in ``lang``; "" when absent.

        >>> get_question("fp8-e4m3fn-max").text("prompt")[:24]
        'What is the largest fini'
        """
        _check_lang(lang)
        value = getattr(self, name)
        return "" if value is None else str(value.get(lang, ""))

    def items(self, name: str, lang: str = "en") -> tuple[str, ...]:
        """A list field (``hints``, ``choices``, ``points``) in ``lang``; () when absent.

        >>> len(get_question("fp8-e4m3fn-max").items("choices"))
        0
        """
        _check_lang(lang)
        value = getattr(self, name)
        return () if value is None else tuple(value.get(lang, ()))


def _check_lang(lang: str) -> None:
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {LANGS}, got {lang!r}")


# ----- parsing: build what can be built, report the rest -------------------------------------

def _freeze_text(value: Any) -> Mapping[str, str] | None:
    if not isinstance(value, dict):
        return None
    return MappingProxyType({k: v for k, v in value.items()})


def _freeze_list(value: Any) -> Mapping[str, tuple[str, ...]] | None:
    if not isinstance(value, dict):
        return None
    return MappingProxyType({k: tuple(v) if isinstance(v, list) else v for k, v in value.items()})


def _freeze_value(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_freeze_value(v) for v in value)
    if isinstance(value, dict):
        return MappingProxyType({k: _freeze_value(v) for k, v in value.items()})
    return value


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _build(raw: dict, file_topic: Any, file: str) -> Question:
    answer = raw.get("answer")
    if isinstance(answer, list):
        answer = tuple(answer)
    elif raw.get("kind") == "numeric" and _number(answer) is not None:
        answer = float(answer)
    tags = raw.get("tags", ())
    return Question(
        id=str(raw.get("id", "")), topic=str(raw.get("topic", file_topic)), difficulty=str(raw.get("difficulty", "")),
        kind=str(raw.get("kind", "")), prompt=_freeze_text(raw.get("prompt")) or MappingProxyType({}),
        explanation=_freeze_text(raw.get("explanation")) or MappingProxyType({}), answer=answer,
        tags=tuple(tags) if isinstance(tags, list) else (), hints=_freeze_list(raw.get("hints")) or MappingProxyType({}),
        choices=_freeze_list(raw.get("choices")),
        choice_values=_freeze_value(raw["choice_values"]) if "choice_values" in raw else None,
        unit=raw.get("unit"), tolerance=_number(raw.get("tolerance")), rel_tolerance=_number(raw.get("rel_tolerance")),
        check=raw.get("check"), check_tol=_number(raw.get("check_tol")), check_expect=_freeze_value(raw.get("check_expect")),
        model_answer=_freeze_text(raw.get("model_answer")), points=_freeze_list(raw.get("points")),
        weak_answer=_freeze_text(raw.get("weak_answer")), claim=_freeze_text(raw.get("claim")),
        claim_source=raw.get("claim_source"), correction=_freeze_text(raw.get("correction")),
        source=raw.get("source"), precision=raw.get("precision"), file=file,
    )


def _text_problems(qid: str, name: str, value: Any, *, required: bool, cjk: bool = True) -> list[str]:
    if value is None:
        return [f"{name} is missing ({name}.en and {name}.zh)"] if required else []
    if not isinstance(value, dict):
        return [f"{name} must be a table with en and zh, got {type(value).__name__}"]
    out = []
    for lang in LANGS:
        v = value.get(lang)
        if not isinstance(v, str) or not v.strip():
            out.append(f"{name}.{lang} is missing or empty")
        elif lang == "zh" and cjk and not _CJK.search(v):
            out.append(f"{name}.zh has no Chinese characters: {v[:40]!r}")
    extra = sorted(set(value) - set(LANGS))
    if extra:
        out.append(f"{name} has keys other than en/zh: {extra}")
    return out


def _list_problems(name: str, value: Any, *, required: bool, min_len: int = 1, max_len: int | None = None,
                   cjk: bool = True) -> list[str]:
    if value is None:
        return [f"{name} is missing ({name}.en and {name}.zh, lists)"] if required else []
    if not isinstance(value, dict):
        return [f"{name} must be a table with en and zh lists, got {type(value).__name__}"]
    out = []
    lengths = {}
    for lang in LANGS:
        v = value.get(lang)
        if not isinstance(v, list):
            out.append(f"{name}.{lang} must be a list of strings")
            continue
        lengths[lang] = len(v)
        if len(v) < min_len or (max_len is not None and len(v) > max_len):
            limit = f"{min_len}..{max_len}" if max_len is not None else f"at least {min_len}"
            out.append(f"{name}.{lang} has {len(v)} entries, expected {limit}")
        bad = [i for i, s in enumerate(v) if not isinstance(s, str) or not s.strip()]
        if bad:
            out.append(f"{name}.{lang} has empty or non-string entries at positions {bad}")
        elif lang == "zh" and cjk and v and not any(_CJK.search(s) for s in v):
            out.append(f"{name}.zh has no Chinese characters in any entry")
        if name == "choices" and isinstance(v, list) and len(set(map(str, v))) != len(v):
            out.append(f"choices.{lang} has duplicate entries")
    if len(lengths) == 2 and lengths["en"] != lengths["zh"]:
        out.append(f"{name}.en has {lengths['en']} entries but {name}.zh has {lengths['zh']}")
    extra = sorted(set(value) - set(LANGS))
    if extra:
        out.append(f"{name} has keys other than en/zh: {extra}")
    return out


def _question_problems(raw: dict, file_topic: Any) -> list[str]:  # noqa: C901 - one rule per line, on purpose
    out: list[str] = []
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        out.append(f"unknown keys {unknown} (allowed: {sorted(_KEYS)})")
    qid = raw.get("id")
    if not isinstance(qid, str) or not _ID.match(qid):
        out.append(f"id must be lowercase letters, digits and single hyphens, got {qid!r}")
    topic = raw.get("topic", file_topic)
    if topic not in TOPICS:
        out.append(f"topic must be one of {TOPICS}, got {topic!r}")
    if raw.get("difficulty") not in DIFFICULTIES:
        out.append(f"difficulty must be one of {DIFFICULTIES}, got {raw.get('difficulty')!r}")
    kind = raw.get("kind")
    if kind not in KINDS:
        out.append(f"kind must be one of {KINDS}, got {kind!r}")
    tags = raw.get("tags")
    if not isinstance(tags, list) or not tags:
        out.append("tags must be a non-empty list of strings")
    else:
        bad = [t for t in tags if not isinstance(t, str) or not _TAG.match(t)]
        if bad:
            out.append(f"tags must be lowercase words ([a-z0-9], joined by - _ .), got {bad}")
        if len(set(map(str, tags))) != len(tags):
            out.append("tags has duplicates")
    out += _text_problems(str(qid), "prompt", raw.get("prompt"), required=True)
    out += _text_problems(str(qid), "explanation", raw.get("explanation"), required=True)
    out += _list_problems("hints", raw.get("hints"), required=True, cjk=True)
    for name in ("unit", "claim_source", "source", "check"):
        if name in raw and not isinstance(raw[name], str):
            out.append(f"{name} must be a string, got {type(raw[name]).__name__}")
    for name in ("tolerance", "rel_tolerance", "check_tol"):
        if name in raw and (_number(raw[name]) is None or not raw[name] >= 0 or not math.isfinite(raw[name])):
            out.append(f"{name} must be a non-negative number, got {raw[name]!r}")
    if isinstance(raw.get("check"), str) and not raw["check"].strip():
        out.append("check is empty")
    if "check" not in raw and not (isinstance(raw.get("source"), str) and raw["source"].strip()):
        out.append("a question without a check needs a source (paper with section, spec and section, library docs)")

    answer = raw.get("answer")
    if kind in ("single", "multiple"):
        out += _list_problems("choices", raw.get("choices"), required=True, min_len=2, max_len=6, cjk=False)
        ch = raw.get("choices")
        n = len(ch["en"]) if isinstance(ch, dict) and isinstance(ch.get("en"), list) else 0
        valid = letters(n)
        if kind == "single":
            if not isinstance(answer, str) or answer not in valid:
                out.append(f"a single-choice answer is one letter of {valid}, got {answer!r}")
        else:
            if (not isinstance(answer, list) or not answer or not all(isinstance(a, str) for a in answer)
                    or any(a not in valid for a in answer)):
                out.append(f"a multiple-choice answer is a non-empty list of letters of {valid}, got {answer!r}")
            elif answer != sorted(set(answer)):
                out.append(f"multiple-choice answer letters must be sorted and unique, got {answer!r}")
        cv = raw.get("choice_values")
        if cv is not None and (not isinstance(cv, list) or len(cv) != n):
            out.append(f"choice_values must be a list with one value per choice ({n}), got {cv!r}")
        for name in ("unit", "tolerance", "rel_tolerance", "model_answer", "points", "weak_answer", "check_expect",
                     "precision"):
            if name in raw:
                out.append(f"{name} does not belong to a {kind}-choice question")
    elif kind == "numeric":
        if _number(answer) is None or (isinstance(answer, float) and math.isnan(answer)):
            out.append(f"a numeric answer is a number (int or float, not NaN), got {answer!r}")
        if not isinstance(raw.get("unit"), str):
            out.append('a numeric question needs unit = "..." ("" for a pure number)')
        if ("tolerance" in raw) == ("rel_tolerance" in raw):
            out.append("a numeric question needs exactly one of tolerance (absolute) or rel_tolerance")
        for name in ("choices", "choice_values", "model_answer", "points", "weak_answer", "check_expect"):
            if name in raw:
                out.append(f"{name} does not belong to a numeric question")
        out += _precision_problems(raw)
    elif kind == "open":
        out += _text_problems(str(qid), "model_answer", raw.get("model_answer"), required=True)
        out += _list_problems("points", raw.get("points"), required=True, cjk=True)
        out += _text_problems(str(qid), "weak_answer", raw.get("weak_answer"), required=True)
        if "answer" in raw:
            out.append("an open question has model_answer, not answer")
        if "check" in raw and "check_expect" not in raw:
            out.append("an open question with a check needs check_expect (the value the check must produce)")
        if "check_expect" in raw and "check" not in raw:
            out.append("check_expect without a check")
        for name in ("choices", "choice_values", "unit", "tolerance", "rel_tolerance", "precision"):
            if name in raw:
                out.append(f"{name} does not belong to an open question")

    myth = isinstance(tags, list) and "myth" in tags
    myth_fields = ("claim", "claim_source", "correction")
    if myth:
        out += _text_problems(str(qid), "claim", raw.get("claim"), required=True)
        out += _text_problems(str(qid), "correction", raw.get("correction"), required=True)
        src = raw.get("claim_source")
        if not isinstance(src, str) or not src.strip():
            out.append('a myth needs claim_source = "..." (the kind of source, e.g. "Chinese LLM interview-prep article")')
        elif re.search(r"https?:|www\.|@", src):
            out.append(f"claim_source names the kind of source, never a link or a person: {src!r}")
    else:
        present = [k for k in myth_fields if k in raw]
        if present:
            out.append(f"{present} belong to myths: add the tag 'myth' or remove them")
    return out


# ----- how precisely a numeric answer must be given -------------------------------------------

#: The precision of a numeric question whose prompt states none: three significant figures.
DEFAULT_PRECISION: tuple[str, int] = ("sig", 3)
_PRECISION = re.compile(r"^(?:(exact)|([1-9]|1[0-5]) (significant|decimals))$")
_EN_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
               "ten": 10}
_ZH_NUMBERS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
_EN_COUNT = r"(\d+|one|two|three|four|five|six|seven|eight|nine|ten)"
_ZH_COUNT = r"(\d+|[一二两三四五六七八九十])"
_STATEMENTS = {
    "en": [("exact", re.compile(r"\bexact (?:value|answer|result|integer|number)\b", re.I)),
           ("sig", re.compile(_EN_COUNT + r"\s+significant\s+(?:figures?|digits?)\b", re.I)),
           ("dp", re.compile(_EN_COUNT + r"\s+(?:decimals\b|decimal places?\b|decimal\b(?!\s+[a-z]))", re.I))],
    "zh": [("exact", re.compile(r"精确值|精确答案|精确结果|精确的值")),
           ("sig", re.compile(_ZH_COUNT + r"\s*位有效数字")),
           ("dp", re.compile(_ZH_COUNT + r"\s*位小数"))],
}


def parse_precision(text: str | None) -> tuple[str, int]:
    """A ``precision`` field read: ``("exact", 0)``, ``("sig", n)`` significant figures or ``("dp", n)`` decimals.

    Absent (None) means the prompt states no precision: :data:`DEFAULT_PRECISION`, three significant figures.

    >>> parse_precision(None), parse_precision("exact"), parse_precision("4 decimals"), parse_precision("2 significant")
    (('sig', 3), ('exact', 0), ('dp', 4), ('sig', 2))
    """
    if text is None:
        return DEFAULT_PRECISION
    m = _PRECISION.match(text) if isinstance(text, str) else None
    if not m:
        raise ValueError(f'precision is "exact", "N significant" or "N decimals" (N from 1 to 15), got {text!r}')
    if m.group(1):
        return ("exact", 0)
    return ("sig" if m.group(3) == "significant" else "dp", int(m.group(2)))


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _EN_NUMBERS.get(word.lower(), _ZH_NUMBERS.get(word, 0))


def stated_precisions(text: str, lang: str) -> set[tuple[str, int]]:
    """The precisions a prompt states in words ("Give the exact value.", "three significant figures", "4 decimals").

    >>> sorted(stated_precisions("What is it? (Give 2^k or three significant digits.)", "en"))
    [('sig', 3)]
    >>> stated_precisions("请给出精确值。", "zh"), stated_precisions("多少位有效数字？", "zh")
    ({('exact', 0)}, set())
    """
    _check_lang(lang)
    found = set()
    for kind, pattern in _STATEMENTS[lang]:
        for m in pattern.finditer(text):
            found.add((kind, 0 if kind == "exact" else _count(m.group(1))))
    return found


def _precision_problems(raw: dict) -> list[str]:
    """A numeric question's precision field against what its prompt says, in both languages."""
    prompt = raw.get("prompt") if isinstance(raw.get("prompt"), dict) else {}
    try:
        precision = parse_precision(raw.get("precision"))
    except ValueError as err:
        return [str(err)]
    out = []
    for lang in LANGS:
        text = prompt.get(lang)
        if not isinstance(text, str):
            continue
        stated = stated_precisions(text, lang)
        if "precision" in raw and precision not in stated:
            out.append(f"precision = {raw['precision']!r} but prompt.{lang} does not say so "
                       f"(e.g. \"Give the exact value.\", \"Two significant figures are enough.\", \"Give 4 decimals.\"; "
                       f"\"请给出精确值。\", \"保留两位有效数字即可。\", \"保留 4 位小数。\")")
        if "precision" not in raw and stated - {DEFAULT_PRECISION}:
            out.append(f"prompt.{lang} states a precision {sorted(stated)} but the question has no precision field "
                       f"(without one, three significant figures are accepted)")
    return out


def parse_questions(doc: dict, file: str = "<memory>") -> tuple[list[Question], list[Problem]]:
    """Questions and schema problems from one parsed TOML document (``{"topic": ..., "question": [...]}``).

    >>> qs, problems = parse_questions({"topic": "fp8", "question": [{"id": "Bad Id"}]})
    >>> len(qs), problems[0].message[:14]
    (1, 'id must be low')
    """
    problems: list[Problem] = []
    if not isinstance(doc, dict):
        return [], [Problem(None, "load", "the document is not a table", file)]
    extra = sorted(set(doc) - _FILE_KEYS)
    if extra:
        problems.append(Problem(None, "schema", f"unknown top-level keys {extra} (a question is [[question]])", file))
    file_topic = doc.get("topic")
    if file_topic not in TOPICS:
        problems.append(Problem(None, "schema", f"file topic must be one of {TOPICS}, got {file_topic!r}", file))
    raws = doc.get("question", [])
    if not isinstance(raws, list) or not all(isinstance(r, dict) for r in raws):
        problems.append(Problem(None, "schema", "questions are [[question]] tables", file))
        return [], problems
    questions = []
    for i, raw in enumerate(raws):
        qid = raw.get("id") if isinstance(raw.get("id"), str) else f"{file}#{i + 1}"
        problems += [Problem(qid, "schema", m, file) for m in _question_problems(raw, file_topic)]
        questions.append(_build(raw, file_topic, file))
    return questions, problems


def read_file(path: "str | pathlib.Path") -> tuple[list[Question], list[Problem]]:
    """Questions and problems of one TOML file (a TOML syntax error is one ``load`` problem).

    >>> qs, problems = read_file(DATA_DIR / "fp8.toml")
    >>> problems, qs[0].topic
    ([], 'fp8')
    """
    path = pathlib.Path(path)
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        return [], [Problem(None, "load", f"cannot read {path.name}: {err}", path.name)]
    return parse_questions(doc, path.name)


def cross_problems(questions: Sequence[Question]) -> list[Problem]:
    """Problems that need the whole bank: duplicate ids.

    >>> q = get_question("fp8-e4m3fn-max")
    >>> print(cross_problems([q, q])[0])
    fp8-e4m3fn-max: duplicate id (in fp8.toml and fp8.toml)
    """
    seen: dict[str, Question] = {}
    out = []
    for q in questions:
        if q.id in seen:
            out.append(Problem(q.id, "schema", f"duplicate id (in {seen[q.id].file} and {q.file})", q.file))
        else:
            seen[q.id] = q
    return out


_CACHE: dict[tuple, tuple[tuple[Question, ...], tuple[Problem, ...]]] = {}


def read_bank(data_dir: "str | pathlib.Path | None" = None) -> tuple[tuple[Question, ...], tuple[Problem, ...]]:
    """Every question of every ``*.toml`` file in ``data_dir`` (sorted by name) and every schema problem found.

    Re-reads a file only when it changed (cached on names, sizes and modification times).

    >>> qs, problems = read_bank()
    >>> "fp8-e4m3fn-max" in {q.id for q in qs}, type(problems).__name__
    (True, 'tuple')
    """
    root = pathlib.Path(data_dir) if data_dir is not None else DATA_DIR
    paths = sorted(root.glob("*.toml"))
    key = (str(root), *((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in paths))
    if key not in _CACHE:
        questions: list[Question] = []
        problems: list[Problem] = []
        for p in paths:
            qs, ps = read_file(p)
            questions += qs
            problems += ps
        problems += cross_problems(questions)
        _CACHE.clear()
        _CACHE[key] = (tuple(questions), tuple(problems))
    return _CACHE[key]


def schema_problems(questions: Iterable[Question] | None = None) -> list[Problem]:
    """Schema problems of the bank's files (``questions=None``) or of given (possibly edited) questions.

    Given questions are checked field by field again, so a corrupted copy is caught.

    >>> schema_problems([])
    []
    """
    if questions is None:
        return list(read_bank()[1])
    questions = list(questions)
    out = []
    for q in questions:
        raw = _to_raw(q)
        out += [Problem(q.id, "schema", m, q.file) for m in _question_problems(raw, q.topic)]
    return out + cross_problems(questions)


def _thaw(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    return value


def _to_raw(q: Question) -> dict:
    """The question as the dict its TOML table would parse to (absent fields left out)."""
    raw: dict[str, Any] = {"id": q.id, "topic": q.topic, "difficulty": q.difficulty, "kind": q.kind,
                           "tags": list(q.tags), "prompt": _thaw(q.prompt), "explanation": _thaw(q.explanation),
                           "hints": _thaw(q.hints)}
    for name in ("choices", "choice_values", "unit", "tolerance", "rel_tolerance", "check", "check_tol",
                 "model_answer", "points", "weak_answer", "claim", "claim_source", "correction", "source",
                 "precision"):
        value = getattr(q, name)
        if value is not None:
            raw[name] = _thaw(value)
    if q.answer is not None:
        raw["answer"] = _thaw(q.answer)
    if q.check_expect is not None:
        raw["check_expect"] = _thaw(q.check_expect)
    return raw


def load_bank(*, topic: "str | Sequence[str] | None" = None, difficulty: "str | Sequence[str] | None" = None,
              kind: "str | Sequence[str] | None" = None, tags: "str | Sequence[str] | None" = None,
              myths: bool | None = None) -> list[Question]:
    """The bank's questions, filtered: each filter takes one value or several (any of them matches).

    ``tags`` keeps questions carrying at least one of the tags; ``myths=True`` keeps only myths,
    ``myths=False`` leaves them out. The topic ``myths`` selects the myths whatever topic they name
    (a myth about FP8 has topic ``fp8`` and lives in ``myths.toml``).

    >>> all(q.topic == "fp8" and q.kind == "numeric" for q in load_bank(topic="fp8", kind="numeric"))
    True
    >>> load_bank(topic="myths") == load_bank(myths=True) != []
    True
    >>> load_bank(difficulty="trivial")
    Traceback (most recent call last):
    ...
    ValueError: difficulty must be one of ('easy', 'medium', 'hard'), got 'trivial'
    """
    def wanted(name: str, value: "str | Sequence[str] | None", allowed: Sequence[str] | None) -> set[str] | None:
        if value is None:
            return None
        values = {value} if isinstance(value, str) else set(value)
        for v in values:
            if not isinstance(v, str):
                raise TypeError(f"{name} filters are strings, got {type(v).__name__}")
            if allowed is not None and v not in allowed:
                raise ValueError(f"{name} must be one of {tuple(allowed)}, got {v!r}")
        return values

    topics = wanted("topic", topic, TOPICS)
    diffs = wanted("difficulty", difficulty, DIFFICULTIES)
    kinds = wanted("kind", kind, KINDS)
    tagset = wanted("tags", tags, None)
    if myths is not None and not isinstance(myths, bool):
        raise TypeError(f"myths is True, False or None, got {myths!r}")
    out = []
    for q in read_bank()[0]:
        if topics is not None and q.topic not in topics and not ("myths" in topics and q.is_myth):
            continue
        if diffs is not None and q.difficulty not in diffs:
            continue
        if kinds is not None and q.kind not in kinds:
            continue
        if tagset is not None and not tagset & set(q.tags):
            continue
        if myths is not None and q.is_myth != myths:
            continue
        out.append(q)
    return out


def get_question(qid: str) -> Question:
    """The question with id ``qid``.

    >>> get_question("fp8-e4m3fn-max").topic
    'fp8'
    >>> get_question("no-such-question")
    Traceback (most recent call last):
    ...
    KeyError: "no question with id 'no-such-question'"
    """
    if not isinstance(qid, str):
        raise TypeError(f"a question id is a str, got {type(qid).__name__}")
    for q in read_bank()[0]:
        if q.id == qid:
            return q
    raise KeyError(f"no question with id {qid!r}")
