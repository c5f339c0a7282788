"""The currencies a text writes, by ISO 4217 code: `written_currencies("3 for €4.20")` is {"EUR"}.

A text names a currency by its symbol or its name far more often than by its code ("£18.50",
"65 Swiss francs", "59.95 dollars"); a field whose values are currency codes can only be right
if the code is read back from those, as a date written in words is read back to its ISO
spelling. Ambiguous marks name every currency they may be (a bare "¥" is JPY or CNY, "kr" four
Nordic crowns); a field's own values narrow them further.
"""

from __future__ import annotations

import re

CODES = frozenset({
    "USD", "EUR", "GBP", "JPY", "CHF", "CNY", "CAD", "AUD", "NZD", "HKD", "SGD", "SEK", "NOK", "DKK",
    "ISK", "PLN", "CZK", "HUF", "INR", "KRW", "BRL", "MXN", "ARS", "CLP", "COP", "PHP", "ZAR", "TRY",
    "RUB", "ILS", "THB", "IDR", "MYR", "VND", "NGN", "KES", "EGP", "AED", "SAR",
})
"""The ISO 4217 codes this module reads a text's currencies as."""

_CODE = re.compile(r"\b(?:" + "|".join(sorted(CODES)) + r")\b")  # written in capitals, as codes are

# Each pattern with the codes what it matches may be. Dollars are read from the mark before the
# "$" ("C$", "A$", "R$") or the word before "dollars" (`_DOLLARS`); a bare "$" or "dollars" is USD.
_MARKS: tuple[tuple[re.Pattern[str], frozenset[str]], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE if ignore_case else 0), frozenset(codes.split()))
    for pattern, codes, ignore_case in (
        (r"€|\beuros?\b", "EUR", True),
        (r"(?<![A-Za-z])(?:US)?\$", "USD", False),
        (r"\b(?:CA?|CAD) ?\$", "CAD", False),
        (r"\b(?:AU?|AUD) ?\$", "AUD", False),
        (r"\bNZ ?\$", "NZD", False),
        (r"\bHK ?\$", "HKD", False),
        (r"\bS ?\$", "SGD", False),
        (r"\bMX ?\$|\bmexican pesos?\b", "MXN", True),
        (r"\bR ?\$|\breais\b|\bbrazilian real\b", "BRL", True),
        (r"£|\bpounds? sterling\b|\bsterling\b|\bpounds\b|\bpound\b", "GBP", True),
        (r"¥|\byen\b", "JPY", True),
        (r"¥|\byuan\b|\brenminbi\b|\bRMB\b", "CNY", True),
        (r"\bswiss francs?\b|\bfrancs?\b|\bFr\.", "CHF", True),
        (r"\bkr\b|\bkronor\b|\bkrona\b|\bkroner\b|\bkrone\b|\bkrónur\b",
         "SEK NOK DKK ISK", True),
        (r"\bswedish (?:kronor|krona)\b", "SEK", True),
        (r"\bnorwegian (?:kroner|krone)\b", "NOK", True),
        (r"\bdanish (?:kroner|krone)\b", "DKK", True),
        (r"zł|\bzlot(?:y|ys|ych)\b|\bzłot(?:y|ych)\b", "PLN", True),
        (r"\bKč\b|\bkorun(?:a|y)\b", "CZK", True),
        (r"\bforints?\b", "HUF", True),
        (r"₹|\brupees?\b|\bRs\.?", "INR", True),
        (r"₩", "KRW", False),
        (r"\bpesos?\b", "MXN ARS CLP COP PHP", True),
        (r"\brand\b", "ZAR", True),
        (r"₺|\blira\b", "TRY", True),
        (r"₽|\brub(?:les?|ls?)\b", "RUB", True),
        (r"₪|\bshekels?\b", "ILS", True),
        (r"฿|\bbaht\b", "THB", True),
        (r"₦|\bnaira\b", "NGN", True),
        (r"\bdirhams?\b", "AED", True),
        (r"\briyals?\b", "SAR", True),
        (r"₫|\bdong\b", "VND", True),
    )
)


_DOLLARS = re.compile(r"(?:(\w+)\s+)?dollars?\b", re.IGNORECASE)
_DOLLAR_OF = {"canadian": "CAD", "australian": "AUD", "zealand": "NZD", "kong": "HKD", "singapore": "SGD"}


def written_currencies(text: str) -> frozenset[str]:
    """The ISO 4217 codes of the currencies `text` writes, by code, symbol or name."""
    found = set(_CODE.findall(text))
    for pattern, codes in _MARKS:
        if pattern.search(text):
            found |= codes
    for match in _DOLLARS.finditer(text):
        found.add(_DOLLAR_OF.get((match.group(1) or "").casefold(), "USD"))
    return frozenset(found)
