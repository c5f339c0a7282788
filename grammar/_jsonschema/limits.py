"""The bounds on a schema's compile: past one, a `LimitError` (or, for a few, a narrower grammar
the docs name).
"""

from __future__ import annotations



MAX_RULES = 50_000


MAX_ALTERNATIVES = 256


MAX_DEPTH = 200


MAX_REPEAT = 100_000


MAX_PATTERN_SUBSETS = 4


MAX_DEPENDENCIES = 6


MAX_COUNT_STATES = 4_000


MAX_UNCOUNTED_EXTRAS = 16  # members a lenient grammar asks for where minProperties is left to the validator


MAX_NEGATION_DEPTH = 6


MAX_NEGATED_ONE_OF = 8  # its negation names every pair of branches


MAX_VALUE_DEPTH = 64  # nesting of a const/enum value


MAX_EXCLUDED_NUMBERS = 1_000  # numbers a `not` (of an enum, a const) may leave out of a range


_POSITIONS_PER_RULE = 32  # array positions (prefixItems) lowered into one rule


LENGTH_CAP = 512  # longest string an automaton-built string language allows


SMALL_LENGTH = 64  # up to this maxLength, patterns and lengths are intersected exactly


COUNTED_STATES = 200_000  # automaton states x counts past which a counted length is brought down

EXACT_LENGTH_STATES = 4_000  # product states past which a length is spread over a language's parts


MAX_OTHER_KEY = 3


MAX_INTEGER_DIGITS = 4_000
