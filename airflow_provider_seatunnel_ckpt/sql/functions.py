"""SeaTunnel's SQL function names on DuckDB, as macros installed on each query connection.

SeaTunnel's ``Sql`` transform has its own functions (H2's names and meanings:
``transform-v2/sql-functions.md``, ``ZetaSQLFunction``). Those DuckDB has under the same
name and meaning need nothing; the others are DuckDB SQL macros (``CREATE TEMP MACRO``,
expanded when the query is bound, so they run vectorised), with SeaTunnel's meaning,
taken from its Java code where its documentation is silent. A name DuckDB already has is
*extended*, never changed: the macro forwards every call shape DuckDB accepts to
``system.main.<name>`` and gives SeaTunnel's meaning only to the shapes DuckDB rejects.
docs/seatunnel.md ("SQL functions") lists them and where the meanings differ.

Helpers (``seatunnel_*``) are macros too; a format pattern given as a literal (the usual
case) is converted once, when DuckDB folds constants, not per row.
"""

from __future__ import annotations

import re
import string
from typing import Any

from . import des as sql_des

# --- helpers ------------------------------------------------------------------------------


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


#: one token of a java.time.format.DateTimeFormatter pattern: a quoted literal ('it''s'),
#: a run of one pattern letter, other literal characters, or a lone quote (an error)
_JAVA_TOKEN = _quote("'(?:[^']|'')*'|" + "|".join(f"{c}+" for c in string.ascii_letters) + "|[^A-Za-z']+|'")

#: pattern letters -> DuckDB's strftime/strptime specifier (English names, as SeaTunnel's
#: formatters in an English locale)
_JAVA_LETTERS = {
    "y": "%Y",
    "yyy": "%Y",
    "yyyy": "%Y",
    "u": "%Y",
    "uuu": "%Y",
    "uuuu": "%Y",
    "yy": "%y",
    "uu": "%y",
    "M": "%-m",
    "MM": "%m",
    "MMM": "%b",
    "MMMM": "%B",
    "L": "%-m",
    "LL": "%m",
    "LLL": "%b",
    "LLLL": "%B",
    "d": "%-d",
    "dd": "%d",
    "D": "%-j",
    "DDD": "%j",
    "H": "%-H",
    "HH": "%H",
    "h": "%-I",
    "hh": "%I",
    "m": "%-M",
    "mm": "%M",
    "s": "%-S",
    "ss": "%S",
    "a": "%p",
    "E": "%a",
    "EE": "%a",
    "EEE": "%a",
    "EEEE": "%A",
}
_PARSE_LETTERS = {**_JAVA_LETTERS, "SSS": "%g", "SSSSSS": "%f", "SSSSSSSSS": "%n"}


def _token_case(on_letters: dict[str, str], literal: str, otherwise: str, lone_quote: str) -> str:
    """A CASE over the token ``t``: quoted text and other characters give ``literal``
    (with ``{}`` the text), pattern letters their entry or ``otherwise``."""
    whens = "".join(f" WHEN t = {_quote(k)} THEN {v}" for k, v in on_letters.items())
    return (
        "CASE WHEN t = '''''' THEN "
        + literal.format("''''")
        + " WHEN t[1] = '''' AND length(t) > 1 AND t[-1:] = '''' THEN "
        + literal.format("replace(substr(t, 2, length(t) - 2), '''''', '''')")
        + f" WHEN t = '''' THEN {lone_quote}"
        + " WHEN NOT regexp_matches(t, '^[A-Za-z]') THEN "
        + literal.format("t")
        + whens
        + f" ELSE {otherwise} END"
    )


#: the strftime format of one token ``t``. A run of S (fraction of a second) is the first digits
#: of the microseconds: %g (3), %f (6), %f and zeros (7-9), or for 1, 2, 4 and 5 a marker
#: character, cut after formatting (``seatunnel_cut_fractions``).
_FORMAT_LETTERS = {
    **{k: _quote(v) for k, v in _JAVA_LETTERS.items()},
    "SSS": "'%g'",
    "SSSSSS": "'%f'",
    "SSSSSSS": "'%f0'",
    "SSSSSSSS": "'%f00'",
    "SSSSSSSSS": "'%f000'",
    **{"S" * k: f"chr({0xE000 + k}) || '%f'" for k in (1, 2, 4, 5)},
}
_FORMAT_TOKEN = _token_case(_FORMAT_LETTERS, literal="replace({}, '%', '%%')", otherwise="''", lone_quote="''")
_FORMAT_KNOWN = "[" + ", ".join(_quote(k) for k in _FORMAT_LETTERS) + "]"
_CUT_FRACTIONS = "x"
for _k in (1, 2, 4, 5):
    _CUT_FRACTIONS = (
        f"regexp_replace({_CUT_FRACTIONS}, '\\x{{{0xE000 + _k:X}}}(\\d{{{_k}}})\\d{{{6 - _k}}}', '\\1', 'g')"
    )

#: the strptime format of one token ``t``. No error() in it: strptime wants a format DuckDB
#: folds to a constant; ``seatunnel_pattern_problem`` finds what it cannot convert.
_PARSE_TOKEN = _token_case(
    {k: _quote(v) for k, v in _PARSE_LETTERS.items()}, literal="replace({}, '%', '%%')", otherwise="''", lone_quote="''"
)
_PARSE_KNOWN = "[" + ", ".join(_quote(k) for k in _PARSE_LETTERS) + "]"

_TEMPORAL_TYPES = (
    "'DATE', 'TIMESTAMP', 'TIMESTAMP WITH TIME ZONE', 'TIMESTAMP_S', 'TIMESTAMP_MS', 'TIMESTAMP_NS', 'TIME'"
)

# Helper macros: (name, "(parameters) AS body").
#
# A date-time pattern reaches strftime/strptime as a format they want constant: DuckDB folds
# the conversion of a literal pattern when the query is bound. Callers pass ``pattern || ''``:
# that leaves the pattern's type open when DuckDB checks a macro as it is created (it would
# refuse a parameter as the format), so the check waits for a use with a literal.
HELPERS: tuple[tuple[str, str], ...] = (
    # Java integer division (truncates toward zero); DuckDB's // floors
    ("seatunnel_div", "(a, b) AS (a - a % b) // b"),
    # Java's String.indexOf(search, f) + 1 (0 when absent), f 0-based
    (
        "seatunnel_index_of",
        """(s, search, f) AS CASE WHEN search = '' THEN least(greatest(f, 0), length(s)) + 1
        WHEN f >= length(s) THEN 0
        ELSE seatunnel_found_at(system.main.instr(substr(s, greatest(f, 0) + 1), search), greatest(f, 0)) END""",
    ),
    ("seatunnel_found_at", "(p, skipped) AS CASE WHEN p = 0 THEN 0 ELSE p + skipped END"),
    # Java's String.lastIndexOf(search, from) + 1 (0 when absent)
    (
        "seatunnel_last_index_of",
        """(s, search, f) AS CASE WHEN f < 0 THEN 0
        ELSE seatunnel_last_in(left(s, f + length(search)), search) END""",
    ),
    (
        "seatunnel_last_in",
        """(p, search) AS CASE WHEN system.main.instr(reverse(p), reverse(search)) = 0 THEN 0
        ELSE length(p) - system.main.instr(reverse(p), reverse(search)) - length(search) + 2 END""",
    ),
    # H2's LOCATE(search, s, start), as SeaTunnel's StringFunction.location
    (
        "seatunnel_locate",
        """(search, s, start) AS CAST(CASE WHEN s IS NULL THEN 0
        WHEN start < 0 THEN seatunnel_last_index_of(s, search, length(s) + start)
        ELSE seatunnel_index_of(s, search, CASE WHEN start = 0 THEN 0 ELSE start - 1 END) END AS INTEGER)""",
    ),
    # SeaTunnel's regexp flags (i, c, n, m; the last of i/c wins) as an RE2 inline-flag prefix
    (
        "seatunnel_regexp_flags",
        """(flags) AS CASE WHEN flags IS NULL OR flags = '' THEN ''
        WHEN NOT regexp_full_match(flags, '[icnm]*')
          THEN error('regexp flags ' || flags || ': SeaTunnel allows only i, c, n and m')
        WHEN regexp_full_match(flags, 'c*') THEN ''
        ELSE '(?' || CASE WHEN regexp_matches(flags, 'i[nm]*$') THEN 'i' ELSE '' END
          || CASE WHEN contains(flags, 'n') THEN 's' ELSE '' END
          || CASE WHEN contains(flags, 'm') THEN 'm' ELSE '' END || ')' END""",
    ),
    ("seatunnel_java_tokens", f"(pattern) AS regexp_extract_all(pattern, {_JAVA_TOKEN})"),
    # the first token of a Java pattern not in `known` (the letters converted), or null
    (
        "seatunnel_pattern_problem",
        """(pattern, known) AS list_filter(seatunnel_java_tokens(pattern),
        lambda t: t = '''' OR (regexp_matches(t, '^[A-Za-z]') AND NOT list_contains(known, t)))[1]""",
    ),
    (
        "seatunnel_pattern_error",
        """(fn, pattern, problem) AS error(fn || ': the date-time pattern ' || pattern
        || CASE WHEN problem = '''' THEN ' has an unterminated quote'
           ELSE ' has ' || problem || ', which is not supported here' END)""",
    ),
    # a Java pattern as a strftime format
    (
        "seatunnel_format_string",
        f"""(pattern) AS
        array_to_string(list_transform(seatunnel_java_tokens(pattern), lambda t: {_FORMAT_TOKEN}), '')""",
    ),
    ("seatunnel_cut_fractions", f"(x) AS {_CUT_FRACTIONS}"),
    # a timestamp as text by a Java pattern (fn names the function in errors). The pattern
    # must be a constant (strftime's format is), as SeaTunnel's always are in practice.
    (
        "seatunnel_format",
        f"""(v, pattern, fn) AS CASE
        WHEN seatunnel_pattern_problem(pattern, {_FORMAT_KNOWN}) IS NOT NULL
          THEN seatunnel_pattern_error(fn, pattern, seatunnel_pattern_problem(pattern, {_FORMAT_KNOWN}))
        WHEN regexp_matches(pattern, '(?:^|[^S])(?:SS?|SSSSS?)(?:[^S]|$)')
          THEN seatunnel_cut_fractions(strftime(v, seatunnel_format_string(pattern)))
        ELSE strftime(v, seatunnel_format_string(pattern)) END""",
    ),
    # a Java pattern as a strptime format
    (
        "seatunnel_parse_format",
        f"""(pattern) AS
        array_to_string(list_transform(seatunnel_java_tokens(pattern), lambda t: {_PARSE_TOKEN}), '')""",
    ),
    # strptime (try_strptime when `try`) by a Java pattern; fn names the function in errors
    (
        "seatunnel_parse",
        f"""(s, pattern, fn, try) AS CASE
        WHEN seatunnel_pattern_problem(pattern, {_PARSE_KNOWN}) IS NOT NULL
          THEN seatunnel_pattern_error(fn, pattern, seatunnel_pattern_problem(pattern, {_PARSE_KNOWN}))
        WHEN try THEN try_strptime(s, seatunnel_parse_format(pattern))
        ELSE strptime(s, seatunnel_parse_format(pattern)) END""",
    ),
    # a date, time or timestamp as a TIMESTAMP (a time on 1970-01-01); anything else is refused
    (
        "seatunnel_timestamp",
        f"""(v, fn) AS CASE WHEN typeof(v) = 'TIME' THEN DATE '1970-01-01' + TRY_CAST(v AS TIME)
        WHEN typeof(v) IN ({_TEMPORAL_TYPES}) THEN TRY_CAST(v AS TIMESTAMP)
        WHEN v IS NULL THEN NULL
        ELSE error(fn || ': ' || typeof(v) || ' is not a date, time or timestamp') END""",
    ),
    # a TIMESTAMPTZ as the local time of a Java ZoneId: an offset (+8, +08:00, UTC+8, GMT-05:30, Z)
    # or a region (Asia/Shanghai)
    (
        "seatunnel_at_zone",
        r"""(ts, zone) AS CASE
        WHEN zone = 'Z' THEN timezone('UTC', ts)
        WHEN regexp_full_match(zone, '(?:UTC|GMT|UT)?[+-]\d{1,2}(?::?\d{2}(?::?\d{2})?)?')
          THEN timezone('UTC', ts) + to_seconds(seatunnel_offset_seconds(
            regexp_extract(zone, '([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?$', ['sign', 'h', 'm', 's'])))
        ELSE timezone(zone, ts) END""",
    ),
    (
        "seatunnel_offset_seconds",
        """(p) AS (CASE WHEN p.sign = '-' THEN -1 ELSE 1 END)
        * (p.h::INTEGER * 3600 + coalesce(nullif(p.m, '')::INTEGER, 0) * 60
           + coalesce(nullif(p.s, '')::INTEGER, 0))""",
    ),
    # Java's Period.between(a, b) in whole months (SeaTunnel's datediff YEAR and MONTH)
    (
        "seatunnel_period_months",
        """(a, b) AS
        seatunnel_period_adjust((year(b) * 12 + month(b)) - (year(a) * 12 + month(a)), day(b) - day(a))""",
    ),
    (
        "seatunnel_period_adjust",
        """(tm, dd) AS
        tm - CASE WHEN tm > 0 AND dd < 0 THEN 1 WHEN tm < 0 AND dd > 0 THEN -1 ELSE 0 END""",
    ),
    # SeaTunnel's DateTimeFunction.datediff over two timestamps (Java's Duration: whole seconds
    # floored, then divided toward zero)
    (
        "seatunnel_datediff",
        """(a, b, unit) AS
        seatunnel_datediff_us(a, b, coalesce(upper(unit), 'DAY'), epoch_us(b) - epoch_us(a))""",
    ),
    (
        "seatunnel_datediff_us",
        """(a, b, u, us) AS CASE u
        WHEN 'YEAR' THEN seatunnel_div(seatunnel_period_months(a::DATE, b::DATE), 12)
        WHEN 'MONTH' THEN seatunnel_period_months(a::DATE, b::DATE) % 12
        WHEN 'DAY' THEN b::DATE - a::DATE
        WHEN 'WEEK' THEN seatunnel_div(seatunnel_div(us // 1000000, 86400), 7)
        WHEN 'DAYTIME' THEN seatunnel_div(us // 1000000, 86400)
        WHEN 'HOUR' THEN seatunnel_div(us // 1000000, 3600)
        WHEN 'MINUTE' THEN seatunnel_div(us // 1000000, 60)
        WHEN 'SECOND' THEN seatunnel_div(us // 1000, 1000)
        WHEN 'MILLISECOND' THEN us // 1000
        ELSE error('datediff: unsupported unit ' || u) END""",
    ),
    # SeaTunnel's DateTimeFunction.dateadd
    (
        "seatunnel_dateadd",
        """(v, n, unit) AS CASE coalesce(upper(unit), 'DAY')
        WHEN 'YEAR' THEN v + to_years(n::INTEGER)
        WHEN 'MONTH' THEN v + to_months(n::INTEGER)
        WHEN 'WEEK' THEN v + to_weeks(n::INTEGER)
        WHEN 'DAY' THEN v + to_days(n::INTEGER)
        WHEN 'HOUR' THEN v + to_hours(n::BIGINT)
        WHEN 'MINUTE' THEN v + to_minutes(n::BIGINT)
        WHEN 'SECOND' THEN v + to_seconds(n::BIGINT)
        WHEN 'MILLISECOND' THEN v + to_milliseconds(n::BIGINT)
        ELSE error('dateadd: unsupported unit ' || unit) END""",
    ),
    # java.util.Random(seed).nextDouble(): the 48-bit generator's first two steps
    (
        "seatunnel_java_random",
        """(seed) AS
        seatunnel_java_double(seatunnel_lcg(xor(seed::HUGEINT, 25214903917) & 281474976710655))""",
    ),
    ("seatunnel_lcg", "(s) AS (s * 25214903917 + 11) & 281474976710655"),
    (
        "seatunnel_java_double",
        """(s1) AS
        ((s1 >> 22) * 134217728 + (seatunnel_lcg(s1) >> 21))::DOUBLE / 9007199254740992.0""",
    ),
    # RAND(seed): java.util.Random(seed).nextDouble(); no seed: DuckDB's random()
    (
        "seatunnel_random",
        """(seed) AS
        CASE WHEN seed IS NULL THEN system.main.random() ELSE seatunnel_java_random(seed::INTEGER) END""",
    ),
    # H2's SOUNDEX code of the ASCII letters of s: the first letter, then the digits of the later
    # consonants (H and W skipped; vowels dropped, but a digit repeats only after one)
    (
        "seatunnel_soundex",
        """(letters) AS CASE WHEN letters = '' THEN '0000'
        ELSE upper(letters[1]) || rpad(left(replace(substr(seatunnel_soundex_runs(
          seatunnel_soundex_digits(letters)[1] || replace(substr(seatunnel_soundex_digits(letters), 2), '8', '')),
          2), '7', ''), 3), 3, '0') END""",
    ),
    (
        "seatunnel_soundex_digits",
        """(letters) AS translate(upper(letters), 'ABCDEFGHIJKLMNOPQRSTUVWXYZ',
                                                           '71237128722455712623718272')""",
    ),
    # each run of one digit as one digit
    (
        "seatunnel_soundex_runs",
        """(d) AS regexp_replace(regexp_replace(regexp_replace(regexp_replace(regexp_replace(
        regexp_replace(d, '1+', '1', 'g'), '2+', '2', 'g'), '3+', '3', 'g'), '4+', '4', 'g'), '5+', '5', 'g'),
        '6+', '6', 'g')""",
    ),
)

# SeaTunnel's functions, by SeaTunnel's name: (name, "(parameters) AS body[, (parameters) AS body]").
# Only names DuckDB lacks, or call shapes DuckDB rejects, are here.
MACROS: tuple[tuple[str, str], ...] = (
    # --- string functions ---
    # OCTET_LENGTH(string): the number of bytes of its UTF-8 encoding. DuckDB's takes only
    # BLOB and BIT; those keep DuckDB's meaning.
    (
        "octet_length",
        """(x) AS CASE WHEN typeof(x) = 'VARCHAR' THEN strlen(TRY_CAST(x AS VARCHAR))
        WHEN typeof(x) = 'BIT' THEN system.main.octet_length(TRY_CAST(x AS BIT))
        ELSE system.main.octet_length(TRY_CAST(x AS BLOB)) END""",
    ),
    # HEXTORAW(string): 4 hex digits per character -> the characters ('0037' -> '7')
    (
        "hextoraw",
        """(s) AS CASE WHEN s IS NULL THEN NULL
        WHEN length(s) % 4 <> 0 THEN error('hextoraw: the text length ' || length(s) || ' is not a multiple of 4')
        ELSE array_to_string(list_transform(range(0, length(s), 4),
                                            lambda i: chr(('0x' || substr(s, i + 1, 4))::INTEGER)), '') END""",
    ),
    # RAWTOHEX(string): 4 lowercase hex digits per UTF-16 unit ('7' -> '0037');
    # RAWTOHEX(bytes): 2 per byte
    (
        "rawtohex",
        r"""(x) AS CASE WHEN x IS NULL THEN NULL
        WHEN typeof(x) = 'BLOB' THEN lower(hex(TRY_CAST(x AS BLOB)))
        WHEN regexp_full_match(TRY_CAST(x AS VARCHAR), '[\x00-\x7f]*')
          THEN regexp_replace(lower(hex(TRY_CAST(x AS VARCHAR))), '(..)', '00\1', 'g')
        ELSE array_to_string(list_transform(string_split(TRY_CAST(x AS VARCHAR), ''), lambda ch:
          CASE WHEN unicode(ch) < 65536 THEN lpad(lower(to_hex(unicode(ch))), 4, '0')
          ELSE lower(to_hex(55296 + ((unicode(ch) - 65536) >> 10))
                     || to_hex(56320 + ((unicode(ch) - 65536) & 1023)))
          END), '') END""",
    ),
    # INSERT(s, start, length, add): s with `length` characters from 1-based `start` replaced
    # by `add`; s unchanged when start or length is out of range; a null s gives add, a null add s
    (
        "insert",
        """(s, start, n, a) AS CASE WHEN s IS NULL THEN a WHEN a IS NULL THEN s
        WHEN start < 1 OR n <= 0 OR length(a) = 0 OR start - 1 > length(s) THEN s
        ELSE substr(s, 1, start - 1) || a || substr(s, start + least(n, length(s) - start + 1)) END""",
    ),
    # LOCATE(search, s[, start]): 1-based position of search in s from start (a negative start
    # searches backwards from that far before the end), 0 when absent or s is null
    (
        "locate",
        """(search, s) AS seatunnel_locate(search, s, 1),
        (search, s, start) AS seatunnel_locate(search, s, start)""",
    ),
    # INSTR(s, search[, start]): LOCATE with the arguments swapped. Two arguments: DuckDB's
    # instr (the same, but null for a null s)
    ("instr", "(s, search) AS system.main.instr(s, search), (s, search, start) AS seatunnel_locate(search, s, start)"),
    # LPAD/RPAD(s, n[, pad]): pad to n characters with the first character of pad (a space by
    # default), or cut to n. Three arguments: DuckDB's (which repeats all of pad)
    ("lpad", "(s, n) AS system.main.lpad(s, n, ' '), (s, n, pad) AS system.main.lpad(s, n, pad)"),
    ("rpad", "(s, n) AS system.main.rpad(s, n, ' '), (s, n, pad) AS system.main.rpad(s, n, pad)"),
    # REGEXP_LIKE(s, regex[, flags]): whether the regex matches somewhere in s (Java's find);
    # flags i (ignore case), c (case sensitive), n (dot matches newline), m (multiline)
    (
        "regexp_like",
        """(s, re) AS regexp_matches(s, re),
        (s, re, flags) AS regexp_matches(s, seatunnel_regexp_flags(flags) || re)""",
    ),
    # REGEXP_SUBSTR(s, regex[, position, occurrence, flags, group]): the occurrence-th match
    # (1st by default) from 1-based position, or its group; null when there is none
    (
        "regexp_substr",
        """(s, re) AS regexp_extract_all(s, re)[1],
        (s, re, pos, occurrence, flags, grp) AS regexp_extract_all(substr(s, coalesce(pos, 1)),
          seatunnel_regexp_flags(flags) || re, coalesce(grp, 0))[coalesce(occurrence, 1)]""",
    ),
    # REPLACE(s, search[, replacement]): every search replaced; without a replacement, removed.
    # Three arguments: DuckDB's
    (
        "replace",
        """(s, search) AS system.main.replace(s, search, ''),
        (s, search, replacement) AS system.main.replace(s, search, replacement)""",
    ),
    # SOUNDEX(s): H2's four-character Soundex code of the ASCII letters of s ('Joy Ding' -> 'J352')
    ("soundex", "(s) AS seatunnel_soundex(regexp_replace(s, '[^A-Za-z]', '', 'g'))"),
    # SPACE(n): n spaces
    ("space", "(n) AS repeat(' ', greatest(n, 0)::BIGINT)"),
    # TO_CHAR(value): value as text; TO_CHAR(value, format): a date/time/timestamp formatted by
    # a Java pattern (FORMATDATETIME), any other value as text (the format unused)
    (
        "to_char",
        f"""(v) AS CAST(v AS VARCHAR),
        (v, pattern) AS CASE WHEN typeof(v) IN ({_TEMPORAL_TYPES})
          THEN seatunnel_format(seatunnel_timestamp(v, 'to_char'), pattern || '', 'to_char')
          ELSE CAST(v AS VARCHAR) END""",
    ),
    # --- numeric functions ---
    # RAND/RANDOM([seed]): a double in [0, 1); with a seed, java.util.Random(seed).nextDouble()
    # (SeaTunnel seeds a new generator each call). random(): DuckDB's
    ("rand", "() AS system.main.random(), (seed) AS seatunnel_random(seed)"),
    ("random", "() AS system.main.random(), (seed) AS seatunnel_random(seed)"),
    # TRUNCATE(x[, digits]): TRUNC, x cut toward zero to digits decimals (0 by default)
    ("truncate", "(x) AS trunc(x), (x, digits) AS trunc(x, digits)"),
    # --- date and time functions ---
    # DATEADD/TIMESTAMPADD(t, n[, unit]): t plus n units (YEAR MONTH WEEK DAY HOUR MINUTE SECOND
    # MILLISECOND; DAY by default)
    ("dateadd", "(v, n) AS seatunnel_dateadd(v, n, 'DAY'), (v, n, unit) AS seatunnel_dateadd(v, n, unit)"),
    ("timestampadd", "(v, n) AS seatunnel_dateadd(v, n, 'DAY'), (v, n, unit) AS seatunnel_dateadd(v, n, unit)"),
    # DATEDIFF(a, b[, unit]): b - a in units (DAY by default): YEAR and MONTH are Java's
    # Period.between(a, b).getYears()/getMonths() (the months 0-11 beyond whole years), DAY the
    # calendar days, WEEK DAYTIME HOUR MINUTE SECOND MILLISECOND whole units of elapsed time.
    # DuckDB's datediff('unit', a, b) (a text first) keeps DuckDB's meaning.
    (
        "datediff",
        """(a, b) AS
          seatunnel_datediff(seatunnel_timestamp(a, 'datediff'), seatunnel_timestamp(b, 'datediff'), 'DAY'),
        (x, y, z) AS CASE
          WHEN typeof(x) <> 'VARCHAR' THEN seatunnel_datediff(seatunnel_timestamp(x, 'datediff'),
                                                              seatunnel_timestamp(y, 'datediff'), TRY_CAST(z AS VARCHAR))
          WHEN typeof(y) = 'TIME' THEN system.main.datediff(TRY_CAST(x AS VARCHAR), TRY_CAST(y AS TIME),
                                                            TRY_CAST(z AS TIME))
          WHEN typeof(y) = 'TIMESTAMP WITH TIME ZONE' THEN system.main.datediff(
            TRY_CAST(x AS VARCHAR), TRY_CAST(y AS TIMESTAMPTZ), TRY_CAST(z AS TIMESTAMPTZ))
          WHEN typeof(y) = 'TIMESTAMP_NS' THEN system.main.datediff(
            TRY_CAST(x AS VARCHAR), TRY_CAST(y AS TIMESTAMP_NS), TRY_CAST(z AS TIMESTAMP_NS))
          ELSE system.main.datediff(TRY_CAST(x AS VARCHAR), TRY_CAST(y AS TIMESTAMP), TRY_CAST(z AS TIMESTAMP))
        END""",
    ),
    # CURRENT_TIMESTAMP and NOW(): the session's local date-time, a timestamp without a zone
    # (SeaTunnel's LocalDateTime.now()); DuckDB's own are TIMESTAMPTZ. DuckDB reads the
    # keyword current_timestamp as get_current_timestamp()
    ("get_current_timestamp", "() AS system.main.get_current_timestamp()::TIMESTAMP"),
    ("now", "() AS system.main.now()::TIMESTAMP"),
    # DATE_TRUNC(t[, unit]): t cut to the unit (YEAR MONTH DAY HOUR MINUTE SECOND; DAY by
    # default), a timestamp. DuckDB's date_trunc('unit', t) (the text first) keeps DuckDB's
    # meaning for dates and timestamps; its interval shape is not forwarded
    (
        "date_trunc",
        """(v) AS system.main.date_trunc('day', seatunnel_timestamp(v, 'date_trunc')),
        (x, y) AS CASE WHEN typeof(x) = 'VARCHAR' THEN system.main.date_trunc(TRY_CAST(x AS VARCHAR), TRY_CAST(y AS TIMESTAMP))
          ELSE system.main.date_trunc(lower(TRY_CAST(y AS VARCHAR)), seatunnel_timestamp(x, 'date_trunc')) END""",
    ),
    # DAY_OF_MONTH(t): 1-31; DAY_OF_WEEK(t): 1-7, Monday to Sunday; DAY_OF_YEAR(t): 1-366
    ("day_of_month", "(v) AS dayofmonth(v)::INTEGER"),
    ("day_of_week", "(v) AS isodow(v)::INTEGER"),
    ("day_of_year", "(v) AS dayofyear(v)::INTEGER"),
    # FORMATDATETIME(t, format): t as text by a java.time DateTimeFormatter pattern
    (
        "formatdatetime",
        """(v, pattern) AS
        seatunnel_format(seatunnel_timestamp(v, 'formatdatetime'), pattern || '', 'formatdatetime')""",
    ),
    # PARSEDATETIME/TO_DATE(s, format): s parsed by a Java pattern
    ("parsedatetime", "(s, pattern) AS seatunnel_parse(s, pattern || '', 'parsedatetime', false)"),
    ("to_date", "(s, pattern) AS seatunnel_parse(s, pattern || '', 'to_date', false)"),
    # IS_DATE(s, format): whether PARSEDATETIME(s, format) succeeds (true for a null s, whose
    # parse gives null without failing; false when the format has neither yy nor mm)
    (
        "is_date",
        """(s, pattern) AS CASE WHEN s IS NULL THEN true
        WHEN NOT (contains(pattern, 'yy') OR contains(pattern, 'mm')) THEN false
        ELSE seatunnel_parse(s, pattern || '', 'is_date', true) IS NOT NULL END""",
    ),
    # FROM_UNIXTIME(seconds, format[, zone]): the moment `seconds` after 1970-01-01T00:00Z as
    # text by a Java pattern, in the zone (a Java ZoneId; the session's time zone by default)
    (
        "from_unixtime",
        """(n, pattern) AS seatunnel_format(to_timestamp(n)::TIMESTAMP, pattern || '', 'from_unixtime'),
        (n, pattern, zone) AS
          seatunnel_format(seatunnel_at_zone(to_timestamp(n), zone), pattern || '', 'from_unixtime')""",
    ),
)

#: SeaTunnel's CAST type names DuckDB lacks (STRING, INT, LONG... it has)
TYPES: tuple[tuple[str, str], ...] = (
    ("bytes", "BLOB"),
    ("byte", "TINYINT"),
)


#: a word in a query -> the macro DuckDB's parser turns it into
_SPELLED = {"current_timestamp": "get_current_timestamp"}

_DEFINITIONS = dict(HELPERS + MACROS)
_CALLED = re.compile(r"(?<![.\w])(\w+)\s*\(")


def _calls(definition: str) -> list[str]:
    return [name for name in _CALLED.findall(definition) if name in _DEFINITIONS]


def statements(names: Any) -> list[str]:
    """The CREATE statements for these macros and the ones they call, each after the macros
    it calls (DuckDB checks the names a macro calls when it is created)."""
    ordered: list[str] = []

    def visit(name: str) -> None:
        if name not in ordered:
            for called in _calls(_DEFINITIONS[name]):
                if called != name:
                    visit(called)
            ordered.append(name)

    for name in names:
        visit(name)
    return [f"CREATE OR REPLACE TEMP MACRO {name}{_DEFINITIONS[name]};" for name in ordered]


def install(connection: Any, query: str | None = None) -> None:
    """Define SeaTunnel's function names on a fresh DuckDB connection: those ``query``
    calls (each CREATE costs DuckDB about half a millisecond, so a query calling none costs
    nothing), or all of them."""
    if query is None:
        names, types = list(_DEFINITIONS), TYPES
    else:
        words = {_SPELLED.get(word, word) for word in (w.lower() for w in re.findall(r"\w+", query))}
        names = [name for name, _ in MACROS if name in words]
        types = tuple((name, kind) for name, kind in TYPES if name in words)
    script = statements(names) + [f"CREATE TYPE {name} AS {kind};" for name, kind in types]
    if script:
        connection.execute("\n".join(script))
    if query is None or any(name in words for name in sql_des.NAMES):
        sql_des.install(connection, query or " ".join(sql_des.NAMES))  # Python functions, not macros
