"""String formats the validator checks, as languages of decoded strings.

Each language is contained in what `jsonschema`'s format checker (with the format-nongpl extras)
accepts, so enforcing it is sound; most are the checker's own language, a few are narrower
(hostnames bounded to six labels, URIs without IPv6 literals, templates without operators).
Which formats are checked depends on the dialect of the root schema: the validator is built with
that dialect's `FORMAT_CHECKER` and keeps it for every subschema. Other formats are annotations.
"""

from __future__ import annotations

from functools import lru_cache

from .._ir import ANY_CHAR, Node, alt, char_set, chars, lit, opt, plus, repeat, seq, star
from .lang import DFA, from_node

_D4 = {"date-time", "email", "hostname", "idn-email", "ipv4", "ipv6", "regex", "uri"}
_D6 = _D4 | {"json-pointer", "uri-reference", "uri-template"}
_D7 = _D6 | {"date", "time", "idn-hostname", "iri", "iri-reference", "relative-json-pointer"}
_D2019 = _D7 | {"duration", "uuid"}

CHECKED: dict[str, frozenset[str]] = {
    "draft4": frozenset(_D4),
    "draft6": frozenset(_D6),
    "draft7": frozenset(_D7),
    "draft2019-09": frozenset(_D2019),
    "draft2020-12": frozenset(_D2019),
}

DIGIT = chars([(0x30, 0x39)])
HEX = chars([(0x30, 0x39), (0x41, 0x46), (0x61, 0x66)])
ALPHA = chars([(0x41, 0x5A), (0x61, 0x7A)])
ALNUM = chars([(0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)])
LOWER_ALNUM = chars([(0x30, 0x39), (0x61, 0x7A)])


def _digits(n: int) -> Node:
    return repeat(DIGIT, n, n)


def _two_digit(lo: int, hi: int) -> Node:
    return alt(*(lit(f"{v:02d}") for v in range(lo, hi + 1)))


# --- dates and times ---------------------------------------------------------------------------

_YEAR = alt(
    seq(lit("000"), chars([(0x31, 0x39)])),
    seq(lit("00"), chars([(0x31, 0x39)]), DIGIT),
    seq(lit("0"), chars([(0x31, 0x39)]), _digits(2)),
    seq(chars([(0x31, 0x39)]), _digits(3)),
)
# Years divisible by 4 and (not by 100, or by 400), 0001..9999.
_LEAP_LAST_TWO = alt(*(lit(f"{v:02d}") for v in range(4, 100, 4)))
_LEAP_YEAR = alt(
    seq(_digits(2), _LEAP_LAST_TWO),
    seq(alt(*(lit(f"{v:02d}") for v in range(4, 100, 4))), lit("00")),
)
_MONTH_DAY = alt(
    seq(alt(*(lit(m) for m in ("01", "03", "05", "07", "08", "10", "12"))), lit("-"), _two_digit(1, 31)),
    seq(alt(*(lit(m) for m in ("04", "06", "09", "11"))), lit("-"), _two_digit(1, 30)),
    seq(lit("02-"), _two_digit(1, 28)),
)
DATE = alt(seq(_YEAR, lit("-"), _MONTH_DAY), seq(_LEAP_YEAR, lit("-02-29")))

_TIME_OF_DAY = seq(_two_digit(0, 23), lit(":"), _two_digit(0, 59), lit(":"), _two_digit(0, 59))
_OFFSET = alt(char_set("Zz"), seq(char_set("+-"), _two_digit(0, 23), lit(":"), _two_digit(0, 59)))
TIME = seq(_TIME_OF_DAY, opt(seq(lit("."), plus(DIGIT))), _OFFSET)
DATE_TIME = seq(DATE, char_set("Tt"), TIME)

# PnYnMnWnD and TnHnMnS parts, in order, at least one of each kind it opens.
_N = repeat(DIGIT, 1, 9)


def _some_in_order(parts: list[Node]) -> Node:
    """At least one of `parts`, each at most once, in order."""
    if not parts:
        return lit("")
    head, rest = parts[0], parts[1:]
    return alt(seq(head, *(opt(p) for p in rest)), _some_in_order(rest)) if rest else head


DURATION = seq(
    lit("P"),
    alt(
        seq(_some_in_order([seq(_N, lit(u)) for u in "YMD"]), opt(seq(lit("T"), _some_in_order([seq(_N, lit(u)) for u in "HMS"])))),
        seq(lit("T"), _some_in_order([seq(_N, lit(u)) for u in "HMS"])),
        seq(_N, lit("W")),
    ),
)

# --- network names and addresses -----------------------------------------------------------------

_OCTET = alt(
    seq(lit("25"), chars([(0x30, 0x35)])),
    seq(lit("2"), chars([(0x30, 0x34)]), DIGIT),
    seq(lit("1"), _digits(2)),
    seq(chars([(0x31, 0x39)]), DIGIT),
    DIGIT,
)
IPV4 = seq(_OCTET, lit("."), _OCTET, lit("."), _OCTET, lit("."), _OCTET)

_H16 = repeat(HEX, 1, 4)
_LS32 = alt(seq(_H16, lit(":"), _H16), IPV4)


def _h16_colon(n: int) -> Node:
    return repeat(seq(_H16, lit(":")), n, n)


def _upto_h16(n: int) -> Node:
    """Up to n groups separated by colons (possibly none), before a '::'."""
    if n == 0:
        return lit("")
    return opt(seq(repeat(seq(_H16, lit(":")), 0, n - 1), _H16))


IPV6 = alt(
    seq(_h16_colon(6), _LS32),
    seq(lit("::"), _h16_colon(5), _LS32),
    seq(_upto_h16(1), lit("::"), _h16_colon(4), _LS32),
    seq(_upto_h16(2), lit("::"), _h16_colon(3), _LS32),
    seq(_upto_h16(3), lit("::"), _h16_colon(2), _LS32),
    seq(_upto_h16(4), lit("::"), _h16_colon(1), _LS32),
    seq(_upto_h16(5), lit("::"), _LS32),
    seq(_upto_h16(6), lit("::"), _H16),
    seq(_upto_h16(7), lit("::")),
)

_LABEL_CHAR = chars([(0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A), (0x2D, 0x2D)])
_LABEL = seq(ALNUM, opt(seq(repeat(_LABEL_CHAR, 0, 38), ALNUM)))
# At most six labels of at most 40 characters: never past the 253-character limit.
HOSTNAME = seq(_LABEL, repeat(seq(lit("."), _LABEL), 0, 5), opt(lit(".")))
# Under a maxLength of at most 63 every label is within the label limit and the name within the
# name's: the checker's own language needs no count of labels or of their characters.
LABEL_LIMIT = 63
_SHORT_LABEL = seq(ALNUM, opt(seq(star(_LABEL_CHAR), ALNUM)))
SHORT_HOSTNAME = seq(_SHORT_LABEL, star(seq(lit("."), _SHORT_LABEL)), opt(lit(".")))
# Past that, the checker's own names (labels of up to 63 characters, as many as fit) within the
# name's limit, which the length bound counts (see `Counted`): the limit is 253 characters, 254
# with a final dot, which is left out.
NAME_LIMIT = 253
_CHECKED_LABEL = seq(ALNUM, opt(seq(repeat(_LABEL_CHAR, 0, LABEL_LIMIT - 2), ALNUM)))
CHECKED_HOSTNAME = seq(_CHECKED_LABEL, star(seq(lit("."), _CHECKED_LABEL)), opt(lit(".")))
_IDN_LABEL = repeat(LOWER_ALNUM, 1, 40)
IDN_HOSTNAME = seq(_IDN_LABEL, repeat(seq(lit("."), _IDN_LABEL), 0, 5))

EMAIL = seq(star(ANY_CHAR), lit("@"), star(ANY_CHAR))

UUID = seq(
    repeat(HEX, 8, 8), lit("-"), repeat(HEX, 4, 4), lit("-"), repeat(HEX, 4, 4), lit("-"),
    repeat(HEX, 4, 4), lit("-"), repeat(HEX, 12, 12),
)

# --- URIs (RFC 3986, as rfc3986-validator's expression, without IP literals) ---------------------

_PCT = seq(lit("%"), HEX, HEX)
_UNRESERVED_SUB = char_set("_.~-!$&'()*+,;=")
_PCHAR = alt(ALNUM, _UNRESERVED_SUB, char_set(":@"), _PCT)
_QUERY = star(alt(ALNUM, _UNRESERVED_SUB, char_set(":@/?"), _PCT))
_USERINFO = seq(star(alt(ALNUM, _UNRESERVED_SUB, lit(":"), _PCT)), lit("@"))
_REG_NAME = star(alt(ALNUM, _UNRESERVED_SUB, _PCT))
_AUTHORITY = seq(opt(_USERINFO), _REG_NAME, opt(seq(lit(":"), star(DIGIT))))
_SEGMENTS = star(seq(lit("/"), star(_PCHAR)))
_TAIL = seq(opt(seq(lit("?"), _QUERY)), opt(seq(lit("#"), _QUERY)))
_SCHEME = seq(ALPHA, star(alt(ALNUM, char_set("+.-"))))
_HIER = alt(
    seq(lit("//"), _AUTHORITY, _SEGMENTS),
    seq(lit("/"), opt(seq(plus(_PCHAR), _SEGMENTS))),
    seq(plus(_PCHAR), _SEGMENTS),
    lit(""),
)
URI = seq(_SCHEME, lit(":"), _HIER, _TAIL)
_RELATIVE = seq(
    alt(
        seq(lit("//"), _AUTHORITY, _SEGMENTS),
        seq(lit("/"), opt(seq(plus(_PCHAR), _SEGMENTS))),
        seq(plus(alt(ALNUM, _UNRESERVED_SUB, lit("@"), _PCT)), _SEGMENTS),
        lit(""),
    ),
    _TAIL,
)
URI_REFERENCE = alt(URI, _RELATIVE)

# --- pointers, templates, regexes ----------------------------------------------------------------

_POINTER_CHAR = alt(chars([(0, 0x2E), (0x30, 0x7D), (0x7F, 0x10FFFF)]), seq(lit("~"), char_set("01")))
JSON_POINTER = star(seq(lit("/"), star(_POINTER_CHAR)))
# The checker refuses any digit after a "0", so zeros may only end the number.
_NON_NEGATIVE = alt(lit("0"), seq(plus(chars([(0x31, 0x39)])), opt(lit("0"))))
RELATIVE_JSON_POINTER = seq(_NON_NEGATIVE, alt(lit("#"), JSON_POINTER))

_TEMPLATE_LITERAL = alt(ALNUM, char_set("-._~:/?#[]@!$&'()*+,;="))
URI_TEMPLATE = star(alt(_TEMPLATE_LITERAL, seq(lit("{"), plus(alt(ALNUM, lit("_"))), lit("}"))))

# Strings every `re.compile` accepts: no metacharacter but optional anchors at the ends.
REGEX = seq(opt(lit("^")), star(alt(ALNUM, char_set(" _-,:;/@#!%&=<>'\"~`"))), opt(lit("$")))

_LANGUAGES: dict[str, Node] = {
    "date": DATE,
    "time": TIME,
    "date-time": DATE_TIME,
    "duration": DURATION,
    "email": EMAIL,
    "idn-email": EMAIL,
    "ipv4": IPV4,
    "ipv6": IPV6,
    "hostname": HOSTNAME,
    "idn-hostname": IDN_HOSTNAME,
    "uuid": UUID,
    "uri": URI,
    "uri-reference": URI_REFERENCE,
    "iri": URI,
    "iri-reference": URI_REFERENCE,
    "json-pointer": JSON_POINTER,
    "relative-json-pointer": RELATIVE_JSON_POINTER,
    "uri-template": URI_TEMPLATE,
    "regex": REGEX,
}
_SHORT_HOSTNAME = "hostname within a label's length"
_LANGUAGES[_SHORT_HOSTNAME] = SHORT_HOSTNAME
_CHECKED_HOSTNAME = "hostname within a counted length"
_LANGUAGES[_CHECKED_HOSTNAME] = CHECKED_HOSTNAME


def is_checked(name: str, root_dialect: str) -> bool:
    """Whether the oracle's format checker (the root dialect's) checks `name`."""
    return name in CHECKED[root_dialect]


def format_language(name: str, max_len: int | None = None) -> Node:
    """Decoded strings the grammar allows for a checked format `name`, for strings of at most
    `max_len` characters (the whole format where no bound narrows it)."""
    return _LANGUAGES[_variant(name, max_len)]


def format_automaton(name: str, max_len: int | None = None) -> DFA:
    """The automaton of `format_language(name, max_len)`, built once per process."""
    return _automaton(_variant(name, max_len))


def longest(name: str) -> int | None:
    """The most characters the checker takes in a `name` value, where it bounds them."""
    return NAME_LIMIT if name == "hostname" else None


def _variant(name: str, max_len: int | None) -> str:
    if name == "hostname" and max_len is not None:
        return _SHORT_HOSTNAME if max_len <= LABEL_LIMIT else _CHECKED_HOSTNAME
    return name


@lru_cache(maxsize=None)
def _automaton(variant: str) -> DFA:
    return from_node(_LANGUAGES[variant])
