"""How many coins a Public Goods reply puts into the pool, read from free text as the paper's referee reads it.

The paper's referee (a language model) rewrote each player's free-text answer into ``{"reason", "coins"}``. This
module is its rule-based stand-in: three tables and one rule.

* **Amounts** (:data:`_KINDS`): digits, English number words ("five", "twenty-one"), Chinese numerals (五, 十二),
  a share of the endowment E ("all", "everything", 全部: E; "nothing", "none": 0; "half", 一半: E / 2; "40%"),
  and alternatives ("5 or 6", "4-6", "between 4 and 6"), each with an optional unit ("coins", 个金币).
* **Phrases** (:data:`_PHRASES`): what an amount next to a verb means, by rank. 0: an answer label
  ("Investment = 8", "coins: 4", 投资额：5); 1: what the seat says it does itself ("I'll invest 4", 我投入4个);
  2: any put-in phrase ("invest 4", "put in 4", "4 coins into the pool", 投入五; a refusal, "I won't invest
  anything" or 不投, is 0); 3: what it keeps ("keep 6", 保留6个: E - 6 is put in); 4: a number standing alone
  ("7", "five coins"), or a reply that is only an amount ("Five.", 全部).
* **Not amounts** (:data:`_NOT_AN_AMOUNT`): numbers that name something else (round 3, 4 players, of my 10, 1.6).

The rule: the first rank that holds an amount decides, and it must hold one value only, whole and in 0..E. Anything
else is never guessed: the reading names the problem (no amount, more than one, not whole, out of range) and the
seat is asked again. A clause that asks a question, and what follows "if", "suppose", "otherwise", 如果 (and the
like) in a clause, are hypotheses, not answers: no amount is read there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from llm_bots.parsing import normalize

__all__ = ["Problem", "Reading", "read_amount"]

Problem = Literal["no_amount", "ambiguous", "not_whole", "out_of_range"]
"""Why a reply states no usable amount."""

# -- amounts ---------------------------------------------------------------------------------------------------

_UNITS_EN = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
_TEENS_EN = ("thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")
_TENS_EN = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_EN_WORDS = {word: n for n, word in enumerate(_UNITS_EN + _TEENS_EN)} | {w: 10 * n for n, w in enumerate(_TENS_EN, 2)}
_ZH_DIGITS = dict(zip("零〇一二两三四五六七八九", (0, 0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9), strict=True))
_ZH_UNITS = {"十": 10, "百": 100}


def _either(words: Iterable[str]) -> str:
    """A regex alternation of ``words``, longest first (so "seventeen" is never read as "seven")."""
    return "|".join(sorted(words, key=len, reverse=True))


_TENS = _either(w for w, n in _EN_WORDS.items() if n >= 20)
_ONES = _either(w for w, n in _EN_WORDS.items() if 1 <= n <= 9)
_EN_NUMBER = rf"\b(?:(?:{_TENS})(?:[- ](?:{_ONES}))?|(?:{_either(_EN_WORDS)})|(?:a|one) hundred)\b"
_ZH_NUMBER = f"[{''.join(_ZH_DIGITS)}{''.join(_ZH_UNITS)}]+"
_DIGITS = r"-?[0-9]+(?:\.[0-9]+)?"
_NUMBER = rf"(?:{_DIGITS}|{_EN_NUMBER}|{_ZH_NUMBER})"
_UNIT = r"(?:\s*(?:gold\s+)?(?:coins?|tokens?)\b|\s*[个枚]?\s*(?:金币|硬币)|\s*[个枚块])?"

_KINDS: tuple[tuple[str, str], ...] = (
    # (kind, form): at a place, the first form that matches decides what the amount is (longer forms first)
    ("either", rf"between\s+{_NUMBER}\s+and\s+{_NUMBER}|{_NUMBER}\s*(?:\bor\b|\bto\b|或|到|至)\s*{_NUMBER}"),
    ("either", r"[0-9]+\s*[-–~]\s*[0-9]+"),
    ("percent", rf"{_DIGITS}\s*(?:%|percent\b|per\s+cent\b)"),
    ("number", rf"\ball\s+(?:of\s+)?(?:my\s+|the\s+|those\s+)?{_NUMBER}"),
    ("all", r"\ball\b(?:\s+of)?(?:\s+(?:my|the|them|these|those|our)\b)?|\beverything\b|\bevery(?:\s+single)?\s+coin"),
    ("all", r"\b(?:the|my)\s+(?:whole|entire|full)\s+(?:amount|endowment|sum)\b|\b(?:the\s+)?max(?:imum)?\b"),
    ("all", "全部(?:的)?|所有(?:的)?|全都"),
    (
        "nothing",
        r"\bnothing\b|\bnone\b(?:\s+of\s+(?:my|the|them)\b)?|\bno\s+coins?\b|\bnot\s+(?:a\s+)?(?:single\s+)?coin\b",
    ),
    ("nothing", r"\b(?:the\s+)?min(?:imum)?\b"),
    ("half", r"\bhalf\b(?:\s+of)?(?:\s+(?:my|the|them|those)\b)?|一半"),
    ("number", _NUMBER),
)
_AMOUNT = f"(?P<amount>(?:{'|'.join(form for _, form in _KINDS)}){_UNIT})"
_KIND_OF = [(kind, re.compile(f"(?:{form}){_UNIT}")) for kind, form in _KINDS]
_NUMBERS_IN = re.compile(rf"(?:(?<![0-9\s~–-])-)?[0-9]+(?:\.[0-9]+)?|{_EN_NUMBER}|{_ZH_NUMBER}")
"""The numbers in an amount (a minus sign only where it is no range's dash: "4-6" is 4 and 6)."""
_HUGE = Fraction(10**18)


def _number(text: str) -> Fraction | None:
    """Digits, an English number word or a Chinese numeral as a number; None for a malformed numeral (五五)."""
    if text[0] in "-0123456789":
        if len(text.lstrip("-")) > 18:  # far out of range (and int() refuses 4,300 digits and more)
            return -_HUGE if text[0] == "-" else _HUGE
        return Fraction(text)
    if text[0].isascii():
        words = re.split(r"[- ]", text)
        return Fraction(100) if words[-1] == "hundred" else Fraction(sum(_EN_WORDS[w] for w in words))
    total, digit = 0, None
    for char in text:
        if char in _ZH_DIGITS:
            if digit is not None:
                return None  # two digits in a row: not a numeral
            digit = _ZH_DIGITS[char]
        else:
            total += (1 if digit is None else digit) * _ZH_UNITS[char]
            digit = None
    return Fraction(total + (digit or 0))


def _values(amount: str, endowment: int) -> list[Fraction]:
    """The value(s) an amount names: one, or two for alternatives ("5 or 6"); [] for a malformed numeral."""
    kind = next((kind for kind, pattern in _KIND_OF if pattern.fullmatch(amount)), None)
    shares = {"all": Fraction(endowment), "nothing": Fraction(0), "half": Fraction(endowment, 2)}
    if kind in shares:
        return [shares[kind]]
    numbers = [_number(m) for m in _NUMBERS_IN.findall(amount)] if kind else []
    found = [n for n in numbers if n is not None]
    if not found or len(found) < len(numbers):
        return []
    if kind == "percent":
        return [endowment * found[0] / 100]
    return found[:2] if kind == "either" else found[-1:]


# -- phrases ---------------------------------------------------------------------------------------------------

_PUT_EN = (
    r"invest(?:s|ing)?|contribut(?:e|es|ing)|commit(?:s|ting)?|allocat(?:e|es|ing)|donat(?:e|es|ing)|add(?:s|ing)?"
    r"|plac(?:e|es|ing)|giv(?:e|es|ing)|choos(?:e|es|ing)|pick(?:s|ing)?|go(?:es|ing)?\s+with|opt(?:s|ing)?\s+for"
    r"|settl(?:e|es|ing)\s+on|chip(?:s|ping)?\s+in|put(?:s|ting)?\s+in"
)
_PUT_ZH = "投资|投入|投进|投放|投|贡献|捐出|捐|拿出|放入|放进|存入|出资"
_KEEP_EN = r"keep(?:s|ing)?|sav(?:e|es|ing)|retain(?:s|ing)?|withhold(?:s|ing)?|hold(?:s|ing)?\s+back"
_KEEP_ZH = "保留|留下|留着|自己留|留|存着"
_MODIFIER = r"(?:(?:only|just|exactly|precisely|about|around|roughly|another|a\s+total\s+of)\s+|了\s*)?"


def _verb(english: str, chinese: str) -> str:
    """One of the verbs, at a word start, then the amount."""
    return rf"(?:(?<![\w'])(?:{english})\s+|(?:{chinese})\s*){_MODIFIER}{_AMOUNT}"


_POOL = r"(?:(?:the|our)\s+(?:\w+\s+)?(?:pool|pot)\b|(?:公共)?(?:资金池|奖池|池|基金))"
_EN_NO = r"\b(?:won't|will\s+not|wouldn't|would\s+not|don't|do\s+not|not(?:\s+to)?|never|refuse\s+to)"
_EN_NO_OBJECT = r"(?:anything|any\s+of\s+(?:my|the)\s+coins|any(?:\s+coins?)?|a\s+(?:single\s+)?coin)\b"
_ZH_NO = "(?:不|没有|别)再?(?:投资|投入|投)"
_SELF = (
    r"(?:\b(?:i|we)(?:'ll|'m|'d|'ve)?\s+(?:(?:will|shall|would|am|are|have|has|going\s+to|gonna|like\s+to|want\s+to"
    r"|plan\s+to|intend\s+to|prefer\s+to|(?:choose|chose|decide|decided)\s+to|also|again|therefore|thus|then|now"
    r"|just|only|still|\w+ly)\s+)*"
    r"|我们?\s*(?:(?:决定|选择|打算|准备|将|会|要|想|愿意|就|还是|继续|仍然|依然|也|只|这轮|本轮|这一轮|这次|这回)\s*)*)"
)
"""What a seat says of itself before its verb: "I", "I'll", "I have decided to", "we will also", 我决定, 我这轮."""


@dataclass(frozen=True)
class _Phrase:
    rank: int
    """0 an answer label, 1 the seat's own put-in phrase, 2 any put-in phrase, 3 a keep phrase (4: a lone number)."""
    pattern: re.Pattern[str]
    keep: bool = False
    """The amount is what the seat keeps: E minus it is put in."""
    fixed: str | None = None
    """For a phrase with no amount in it ("all in", a refusal): the amount it means, as text."""


def _put(form: str, fixed: str | None = None) -> list[_Phrase]:
    """A put-in phrase that starts with its verb: rank 1 after the seat's own subject ("I'll ..."), else rank 2."""
    return [_Phrase(1, re.compile(_SELF + form), fixed=fixed), _Phrase(2, re.compile(form), fixed=fixed)]


_PHRASES: tuple[_Phrase, ...] = (
    _Phrase(
        0,
        re.compile(
            r"(?<![\w'])(?:my\s+|final\s+)?(?:investment|invest|contribution|amount(?:\s+(?:invested|to\s+invest))?"
            r"|coins(?:\s+(?:invested|to\s+invest))?|answer|decision|choice)\s*(?:is|will\s+be|would\s+be|[:=])\s*"
            + _AMOUNT
        ),
    ),
    _Phrase(
        0,
        re.compile(rf"(?:投资(?:额|金额|数额|数量)?|投入(?:金额|数额|数量)?|金额|答案)\s*(?:[:=：]|为|是)\s*{_AMOUNT}"),
    ),
    *_put(_verb(_PUT_EN, _PUT_ZH)),
    *_put(rf"\bput(?:s|ting)?\s+{_AMOUNT}\s+(?:in|into|to|towards)\b"),
    *_put(r"\bgo(?:es|ing)?\s+all[- ]in\b", fixed="all"),
    *_put(rf"{_EN_NO}\s+(?:invest|contribute|put\s+in|put)\s+{_EN_NO_OBJECT}", fixed="nothing"),
    *_put(rf"{_EN_NO}\s+(?:invest|contribute)(?:\s+(?:this\s+round|this\s+time|at\s+all))?\s*$", fixed="nothing"),
    *_put(rf"{_ZH_NO}(?:任何|一分钱|一个金币)?(?:金币|硬币|钱)?[了吧]?\s*$|{_ZH_NO}任何", fixed="nothing"),
    _Phrase(2, re.compile(r"\ball[- ]in\b(?!\s+all)"), fixed="all"),
    _Phrase(2, re.compile("全(?:部|都)?投"), fixed="all"),
    _Phrase(2, re.compile(rf"{_AMOUNT}\s+(?:into|to|towards)\s+{_POOL}")),
    _Phrase(2, re.compile(rf"{_AMOUNT}\s*(?:投入|投进|投到|放入|放进|放到|存入)")),
    _Phrase(
        2, re.compile(r"[一1]\s*[个枚分]?\s*(?:金币|硬币|钱)?\s*[都也]\s*不\s*(?:投资|投入|投|出)"), fixed="nothing"
    ),
    _Phrase(3, re.compile(_verb(_KEEP_EN, _KEEP_ZH)), keep=True),
    _Phrase(3, re.compile(rf"{_AMOUNT}\s+for\s+myself\b"), keep=True),
)
"""The phrase table (see the module docs), ranks 0 to 3."""

_LONE = (
    re.compile(r"(?<![A-Za-z0-9.])(?P<amount>[0-9]+\s*[-–~]\s*[0-9]+|-?[0-9]+)(?![A-Za-z0-9]|\.[0-9])"),
    re.compile(rf"(?P<amount>{_EN_NUMBER}\s+(?:gold\s+)?coins?\b)"),
    re.compile(rf"(?P<amount>{_ZH_NUMBER}\s*(?:[个枚]\s*(?:金币|硬币)?|金币|硬币))"),
)
"""Rank 4: a number standing alone (digits), or a number word that counts coins."""
_NOT_AN_AMOUNT = (
    re.compile(
        r"(?:\brounds?|\bplayers?|\bparticipants?|\bseats?|#|\bno\.|\bnumber|\balpha|α|\bmultiplier|\bfactor|\bby"
        r"|\btimes|\bx|×|\bout\s+of|\bof(?:\s+(?:my|the|our|all))?|/|第|共|总共|[<>≤≥]=?)\s*$"
    ),
    re.compile(
        r"^\s*(?:players?\b|participants?\b|people\b|others\b|rounds?\b|seats?\b|%|percent\b|x\b|×|times\b|st\b|nd\b"
        r"|rd\b|th\b|-(?:player|round)|[<>≤≥]|倍|轮|回合|名|位|人|[个名位]\s*(?:玩家|人|参与者|回合))"
    ),
)
"""A lone number after (first) or before (second) one of these names something else: round 3, 4 players, of my 10."""

_WHOLE_REPLY = re.compile(rf"\s*(?:i\s+(?:choose|pick|say)\s+|my\s+answer\s*:?\s*)?{_AMOUNT}\s*")
_CLAUSE_END = re.compile(r"[!?;。！？；\n]|[.,，、](?![0-9])")
_HYPOTHESIS = re.compile(
    r"\b(?:if|suppose|supposing|assuming|assume|imagine|unless|whether|otherwise|else|in\s+case"
    r"|for\s+(?:example|instance)|hypothetically)\b|如果|假如|假设|要是|若是|比如|例如|万一|否则|不然"
)
_PAST = re.compile(r"\b(?:last|previous|prior)\s+(?:round|time)\b|上一?轮|上回合|上次")
"""A clause about an earlier round states what was, not the answer: it is left out."""
_MARKUP = str.maketrans({"*": " ", "_": " ", "#": " ", "`": " ", '"': " ", "“": " ", "”": " ", "’": "'"})


@dataclass(frozen=True)
class Reading:
    """What a reply puts into the pool: ``amount``, or the ``problem`` that keeps it from being read."""

    amount: int | None
    problem: Problem | None = None
    stated: tuple[str, ...] = ()
    """The amounts found at the deciding rank, as text (``"5"``, ``"4.5"``), in order of appearance."""


def _shown(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"{float(value):g}"


def _clauses(text: str) -> list[str]:
    """The reply's clauses, each cut where a hypothesis starts; a clause that asks a question, or speaks of an
    earlier round, is left out."""
    out: list[str] = []
    start = 0
    for end in [*_CLAUSE_END.finditer(text), None]:
        stop = len(text) if end is None else end.start()
        clause = text[start:stop]
        if (end is None or end.group() not in "?？") and not _PAST.search(clause):
            hypothesis = _HYPOTHESIS.search(clause)
            out.append(clause[: hypothesis.start()] if hypothesis else clause)
        start = stop + 1
    return out


def _found(clauses: list[str], endowment: int) -> list[tuple[int, int, list[Fraction]]]:
    """Every amount the phrases and lone numbers state: (rank, order of appearance, the values put in)."""
    found: list[tuple[int, int, list[Fraction]]] = []
    place = 0  # where the clause starts among the clauses kept
    for clause in clauses:
        for phrase in _PHRASES:
            for match in phrase.pattern.finditer(clause):
                values = _values(phrase.fixed or match.group("amount").strip(), endowment)
                found.append(
                    (phrase.rank, place + match.start(), [endowment - v for v in values] if phrase.keep else values)
                )
        for pattern in _LONE:
            for match in pattern.finditer(clause):
                before = clause[max(0, match.start() - 20) : match.start()]
                if not (_NOT_AN_AMOUNT[0].search(before) or _NOT_AN_AMOUNT[1].search(clause[match.end() :][:20])):
                    found.append((4, place + match.start(), _values(match.group("amount").strip(), endowment)))
        place += len(clause) + 1
    return [f for f in found if f[2]]


def read_amount(reply: str, endowment: int) -> Reading:
    """What ``reply`` (free text, English or Chinese) puts into the pool, the endowment being ``endowment``.

    See the module docs. For example ``read_amount("I keep 6 coins and invest 4.", 10).amount == 4`` and
    ``read_amount("5 or 6", 10).problem == "ambiguous"``.
    """
    text = re.sub(r"\s+", " ", normalize(reply).translate(_MARKUP).casefold()).strip()
    text = text.replace("e.g.", "for example")
    whole = _WHOLE_REPLY.fullmatch(text.strip(" .!。！"))
    found = [(4, 0, _values(whole.group("amount").strip(), endowment))] if whole else _found(_clauses(text), endowment)
    if not found or not found[0][2]:
        return Reading(None, "no_amount")
    rank = min(r for r, _, _ in found)
    values: list[Fraction] = []
    for _, _, stated in sorted((f for f in found if f[0] == rank), key=lambda f: f[1]):
        values += [v for v in stated if v not in values]
    shown = tuple(map(_shown, values))
    if len(values) > 1:
        return Reading(None, "ambiguous", shown)
    value = values[0]
    if value.denominator != 1:
        return Reading(None, "not_whole", shown)
    if not 0 <= value <= endowment:
        return Reading(None, "out_of_range", shown)
    return Reading(int(value), None, shown)
