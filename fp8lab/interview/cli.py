"""The ``quiz`` subcommand of the ``fp8lab`` command line: ask, list, export or verify bank questions.

    fp8lab quiz                                   # 10 questions from the whole bank
    fp8lab quiz --topic fp8 --difficulty hard --n 5 --lang zh --seed 3
    fp8lab quiz --myths                           # only the myths (the same as --topic myths)
    fp8lab quiz --list [--topic T ...]            # id, topic, kind, difficulty, prompt
    fp8lab quiz --export cards.apkg [--lang both] # Anki package (genanki); cards.txt: Anki text import
    fp8lab quiz --verify [--tag T ...]            # every schema problem and failing check; exit 1 if any

Every --topic, --kind and --difficulty value offered selects at least one question; a --tag that no
question carries is an error. Exit codes: 0 done, 1 --verify found problems, 2 a bad argument
(``--export`` into a missing folder or onto a folder, an unknown id or tag: one line on stderr),
130 Ctrl+C (one line, ``fp8lab quiz: interrupted``), 141 a closed stdout (``fp8lab quiz --list | head``:
quiet, like a process ended by SIGPIPE, so that ``set -o pipefail`` sees it).

>>> import argparse
>>> parser = argparse.ArgumentParser(prog="fp8lab")
>>> register(parser.add_subparsers(dest="command"))
>>> args = parser.parse_args(["quiz", "--list", "--topic", "fp8", "--kind", "numeric"])
>>> args.func(args)  # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
id topic kind difficulty prompt
...
0
"""

from __future__ import annotations

import argparse

from ..cli_types import output_path, positive_int
from ..lang import current
from .bank import DIFFICULTIES, KINDS, TOPICS, get_question, load_bank, read_bank
from .layout import fit, text_table
from .messages import name, say

__all__ = ["register", "list_rows"]


def list_rows(questions, lang: str = "en") -> list[list[str]]:
    """The rows of ``--list``: id, topic, kind, difficulty and the prompt in ``lang``, cut to 70 columns.

    >>> list_rows([get_question("fp8-e4m3fn-max")])[0][:4]
    ['fp8-e4m3fn-max', 'fp8', 'numeric', 'easy']
    >>> list_rows([get_question("fp8-e4m3fn-max")], "zh")[0][1:4]
    ['FP8', '数值', '易']
    """
    return [[q.id, name("topic", q.topic, lang), name("kind", q.kind, lang), name("difficulty", q.difficulty, lang),
             fit(q.text("prompt", lang), 70)] for q in questions]


def _selected(args: argparse.Namespace):
    if args.id:
        return [get_question(i) for i in args.id]
    if args.tag:
        known = {t for q in read_bank()[0] for t in q.tags}
        unknown = [t for t in args.tag if t not in known]
        if unknown:
            raise ValueError(f"no question has the tag {unknown[0]!r} (fp8lab quiz --list shows the questions; "
                             f"tags are lowercase words such as {', '.join(sorted(known)[:3])})")
    return load_bank(topic=args.topic, difficulty=args.difficulty, kind=args.kind, tags=args.tag,
                     myths=True if args.myths else None)


def _cmd_quiz(args: argparse.Namespace) -> int:
    if args.verify:
        from .checks import verify

        filtered = bool(args.id or args.tag or args.topic or args.difficulty or args.kind or args.myths)
        questions = _selected(args) if filtered else None  # None: every file, load problems included
        what = f"{len(questions)} selected question{'s' if len(questions) != 1 else ''}" if filtered else "the whole bank"
        print(f"verifying {what}: the schema, then every check", flush=True)
        problems = verify(questions)
        for p in problems:
            print(p)
        print(f"{len(problems) or 'no'} problem{'s' if len(problems) != 1 else ''}")
        return 1 if problems else 0
    try:
        questions = _selected(args)
    except KeyError as err:
        raise ValueError(err.args[0]) from None
    if args.list:
        lang = current() if args.lang is None else "en" if args.lang == "both" else args.lang
        headers = [say(k, lang) for k in ("id", "topic", "kind", "difficulty", "prompt")]
        print(text_table(headers, list_rows(questions, lang)))
        count = say("one_question", lang) if len(questions) == 1 else say("n_questions", lang, n=len(questions))
        print(f"\n{count}")
        return 0
    if args.export:
        from .export import export

        lang = args.lang or current()
        path = export(args.export, questions, lang=lang, deck=args.deck)
        print(say("wrote_cards", "zh" if lang == "zh" else "en", n=len(questions), path=path))
        return 0
    lang = args.lang or current()
    if lang == "both":
        raise ValueError("--lang both is for --export; the quiz runs in en or zh")
    from .quiz import run_quiz, select_questions

    chosen = questions if args.id else select_questions(questions, args.n, args.seed)
    run_quiz(chosen, lang=lang)
    return 0


def register(subparsers: "argparse._SubParsersAction") -> None:
    """Add the ``quiz`` subcommand to an argparse subparsers object.

    >>> p = argparse.ArgumentParser(prog="fp8lab"); register(p.add_subparsers(dest="command"))
    >>> p.parse_args(["quiz", "--n", "3", "--lang", "zh"]).n
    3
    """
    q = subparsers.add_parser("quiz", help="interview questions: an interactive quiz, a list, Anki flash cards",
                              description="Interview questions whose every checkable answer is computed by fp8lab. "
                                          "In the quiz: letters or a number to answer, h = hint, s = skip, q = quit.")
    q.add_argument("--topic", action="append", choices=TOPICS,
                   help="only this topic (repeatable); myths selects the myths, whatever topic they name")
    q.add_argument("--difficulty", action="append", choices=DIFFICULTIES, help="only this difficulty (repeatable)")
    q.add_argument("--kind", action="append", choices=KINDS, help="only this kind (repeatable)")
    q.add_argument("--tag", action="append", help="only questions with this tag (repeatable)")
    q.add_argument("--myths", action="store_true", help="only the myths (claims that circulate, checked by code)")
    q.add_argument("--id", action="append", help="ask exactly these questions, in this order (repeatable)")
    q.add_argument("--n", type=positive_int, default=10, help="number of questions (default 10)")
    q.add_argument("--seed", type=int, default=None, help="seed for the choice and order of questions")
    q.add_argument("--lang", choices=["en", "zh", "both"], default=None,
                   help="language: en or zh (default: the edition's, $FP8LAB_LANG, else en); both (one card, "
                        "two languages) for --export")
    q.add_argument("--list", action="store_true", help="list the matching questions instead of asking them")
    q.add_argument("--export", metavar="FILE", type=output_path,
                   help="write Anki flash cards: FILE.apkg (an Anki package, needs genanki) or FILE.txt "
                        "(Anki's text import, with its headers)")
    q.add_argument("--deck", default="fp8lab interview", help="the Anki deck name for --export")
    q.add_argument("--verify", action="store_true",
                   help="check the bank's schema and every check (the whole bank, or the questions the filters select)")
    q.set_defaults(func=_cmd_quiz)

