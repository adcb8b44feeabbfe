"""The digits of ``Double.toString`` and ``Float.toString`` as Java 8 to 18 print them.

SeaTunnel runs on Java 8, 11 or 17, whose conversion (``FloatingDecimal``) does not always
print the shortest digits that read back to the same value (Java 19 replaced it:
JDK-4511638). Where SeaTunnel turns a double into text (Jackson's json, an excel cell into
a decimal, a float read into a string column) its users get these digits, so this module
reproduces them, quirks included: an integer below 2^63 keeps nearly all its exact digits
(1.33589056880950554E18, not 1.3358905688095055E18); other values get digits until the
remainder is within half a unit in the last place, at least two in the exponent form; a
rounding's carry keeps its zeros; and the 64-bit arithmetic of mid-sized values overflows
where Java's does. docs/seatunnel.md, "Numbers as text", says more.

Checked against Java 17 on 1.6 million values (random bit patterns, powers of two and
ten with their neighbours, short decimals, integers near 2^63, subnormals);
tests/unit/connectors/test_java_double.py compares a sample with the machine's JDK.
"""

from __future__ import annotations

import math
import struct

#: bits of 5**i (an index of 0 counts as none), and how far the table reaches
_FIVE_BITS = [0] + [(5**i).bit_length() for i in range(1, 27)]
#: the double's significand: 52 bits after the point, 53 with the hidden one
_SHIFT = 52
#: integers are printed exactly up to this binary exponent (longs)
_MAX_SMALL_BIN_EXP, _MIN_SMALL_BIN_EXP = 62, -21


def java_digits(value: float, single: bool = False) -> tuple[bool, str, int]:
    """(negative, digits, decimal exponent) of a finite, non-zero ``value``: the value is
    0.DIGITS x 10^exponent; ``digits`` may end in zeros (a rounding's carry)."""
    if single:
        bits = struct.unpack(">I", struct.pack(">f", value))[0]
        negative, fraction, biased = bool(bits >> 31), bits & ((1 << 23) - 1), (bits >> 23) & 0xFF
        width, hidden, bias = 23, 1 << 23, 127
    else:
        bits = struct.unpack(">Q", struct.pack(">d", value))[0]
        negative, fraction, biased = bool(bits >> 63), bits & ((1 << 52) - 1), (bits >> 52) & 0x7FF
        width, hidden, bias = 52, 1 << 52, 1023
    if biased == 0:  # subnormal: normalise, with fewer significant bits
        shift = width + 1 - fraction.bit_length()
        fraction <<= shift
        binary_exponent = 1 - shift
        significant = fraction.bit_length() - shift
    else:
        fraction |= hidden
        binary_exponent = biased
        significant = width + 1
    # a float goes through the double's code with its significand moved into place
    digits, exponent = _digits(binary_exponent - bias, fraction << (_SHIFT - width), significant)
    return negative, digits, exponent


def _digits(binary_exponent: int, fraction: int, significant: int) -> tuple[str, int]:
    trailing = (fraction & -fraction).bit_length() - 1
    fraction_bits = _SHIFT + 1 - trailing  # significant bits of this value's significand
    tiny_bits = max(0, fraction_bits - binary_exponent - 1)  # bits after the binary point
    if _MIN_SMALL_BIN_EXP <= binary_exponent <= _MAX_SMALL_BIN_EXP and tiny_bits == 0:
        return _integer_digits(binary_exponent, fraction, significant)
    decimal_exponent = _estimate_decimal_exponent(fraction, binary_exponent)
    # value = b / s x 10^decimal_exponent; m is half a unit in the last place, same scale
    b5 = max(0, -decimal_exponent)
    b2 = b5 + tiny_bits + binary_exponent
    s5 = max(0, decimal_exponent)
    s2 = s5 + tiny_bits
    m5, m2 = b5, b2 - significant
    fraction >>= trailing
    b2 -= fraction_bits - 1
    common = min(b2, s2)
    b2, s2, m2 = b2 - common, s2 - common, m2 - common
    if fraction_bits == 1:  # a power of two: the gap below is half the gap above
        m2 -= 1
    if m2 < 0:
        b2, s2, m2 = b2 - m2, s2 - m2, 0
    b_bits = fraction_bits + b2 + (_FIVE_BITS[b5] if b5 < len(_FIVE_BITS) else b5 * 3)
    ten_s_bits = s2 + 1 + (_FIVE_BITS[s5 + 1] if s5 + 1 < len(_FIVE_BITS) else (s5 + 1) * 3)
    # Java works in ints or longs when the numbers fit, else in big integers; the fixed
    # widths wrap on overflow, which decides some last digits
    bits = 32 if b_bits < 32 and ten_s_bits < 32 else 64 if b_bits < 64 and ten_s_bits < 64 else None

    def wrap(x: int) -> int:
        if bits is None:
            return x
        x &= (1 << bits) - 1
        return x - (1 << bits) if x >> (bits - 1) else x

    b, s, m = wrap(fraction * 5**b5 << b2), wrap(5**s5 << s2), wrap(5**m5 << m2)
    ten_s = wrap(s * 10)

    def next_digit(b: int, m: int) -> tuple[int, int, int]:
        q = b // s
        return q, wrap(10 * (b - q * s)), wrap(m * 10)

    def reaches_next(b: int, m: int) -> bool:
        return b + m >= ten_s if bits is None else wrap(b + m) > ten_s

    digits: list[int] = []
    q, b, m = next_digit(b, m)
    low, high = b < m, reaches_next(b, m)
    if q == 0 and not high:  # the estimate was one too high
        decimal_exponent -= 1
    else:
        digits.append(q)
    if decimal_exponent < -3 or decimal_exponent >= 8:  # the exponent form: a second digit
        low = high = False
    while not low and not high:
        q, b, m = next_digit(b, m)
        if m > 0:
            low, high = b < m, reaches_next(b, m)
        else:  # the unit overflowed: Java stops here
            low = high = True
        digits.append(q)
    exponent = decimal_exponent + 1
    above_half = wrap(wrap(2 * b) - ten_s)
    if high and (not low or above_half > 0 or (above_half == 0 and digits[-1] & 1)):
        exponent += _round_up(digits)
    return "".join(map(str, digits)), exponent


def _integer_digits(binary_exponent: int, fraction: int, significant: int) -> tuple[str, int]:
    """An integer's exact digits, the last ``insignificant`` of them rounded away (half up):
    as many as the gap between neighbouring values spans, by Java's estimate."""
    insignificant = 0
    if binary_exponent > significant:
        gap = binary_exponent - significant - 1
        insignificant = math.floor(gap * math.log10(2)) if gap > 1 else 0
    if binary_exponent >= _SHIFT:
        value = fraction << (binary_exponent - _SHIFT)
    else:
        value = fraction >> (_SHIFT - binary_exponent)
    if insignificant:
        value, residue = divmod(value, 10**insignificant)
        if residue >= 10**insignificant // 2:
            value += 1
    text = str(value)
    return text.rstrip("0"), len(text) + insignificant


def _estimate_decimal_exponent(fraction: int, binary_exponent: int) -> int:
    """floor(log10(value)), estimated from the significand's double in [1, 2) (may be one
    too high; the first digit then comes out 0)."""
    mantissa = struct.unpack(">d", struct.pack(">Q", (1023 << _SHIFT) | (fraction & ((1 << _SHIFT) - 1))))[0]
    estimate = (mantissa - 1.5) * 0.289529654 + 0.176091259 + binary_exponent * 0.301029995663981
    return math.floor(estimate)


def _round_up(digits: list[int]) -> int:
    """Add one to the last digit, carrying; 1 when the carry made a new leading digit (the
    digits are then 1 and zeros, kept)."""
    i = len(digits) - 1
    while digits[i] == 9 and i > 0:
        digits[i] = 0
        i -= 1
    if digits[i] == 9:
        digits[0] = 1
        return 1
    digits[i] += 1
    return 0
