"""Double.toString and Float.toString as Java 8-18 print them (connectors/java_double.py):
fixed values printed by Java 17, and a sample compared with the machine's own JDK."""

from __future__ import annotations

import random
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from airflow_provider_seatunnel_ckpt.connectors.java_text import java_float_text

# (value, what Java 17's Double.toString prints); Java 19 and later print the shortest
# digits for the first five (1.3358905688095055E18, 1.0E23, 2.0E23, 9.223372036854775E18)
DOUBLES = [
    (1335890568809505536.0, "1.33589056880950554E18"),  # an integer: exact digits, few dropped
    (1e23, "9.999999999999999E22"),
    (2e23, "1.9999999999999998E23"),
    (float(2**63 - 1024), "9.2233720368547748E18"),
    (0.002, "0.002"),
    (1e-05, "1.0E-5"),
    (0.1, "0.1"),
    (100.0, "100.0"),
    (1e7, "1.0E7"),
    (123456789.0, "1.23456789E8"),
    (5e-324, "4.9E-324"),
    (1.7976931348623157e308, "1.7976931348623157E308"),
    (-0.0037988815753219997, "-0.0037988815753219997"),
    (1.0000000000000002, "1.0000000000000002"),
    (9007199254740992.0, "9.007199254740992E15"),
    (-0.0, "-0.0"),
    (float("nan"), "NaN"),
    (float("-inf"), "-Infinity"),
]
# (value, Float.toString): the first needs Java's 64-bit overflow (a sum past 2^63 does not
# round the last digit up)
FLOATS = [
    (9.632813662471824e24, "9.6328136E24"),
    (4.7301637e37, "4.7301637E37"),
    (1.23, "1.23"),
    (0.1, "0.1"),
    (16777216.0, "1.6777216E7"),
    (1e10, "1.0E10"),
    (3.4028235e38, "3.4028235E38"),
    (1.4e-45, "1.4E-45"),
]


@pytest.mark.parametrize("value, text", DOUBLES)
def test_doubles_as_java_17_prints_them(value: float, text: str) -> None:
    assert java_float_text(value) == text


@pytest.mark.parametrize("value, text", FLOATS)
def test_floats_as_java_17_prints_them(value: float, text: str) -> None:
    assert java_float_text(value, single=True) == text


ORACLE = """
import java.io.*;
public class Oracle {
    public static void main(String[] a) throws IOException {
        BufferedReader r = new BufferedReader(new InputStreamReader(System.in));
        PrintWriter w = new PrintWriter(new BufferedWriter(new OutputStreamWriter(System.out)));
        for (String line; (line = r.readLine()) != null; ) {
            String bits = line.substring(2);
            w.println(line.charAt(0) == 'd'
                ? Double.toString(Double.longBitsToDouble(Long.parseUnsignedLong(bits, 16)))
                : Float.toString(Float.intBitsToFloat(Integer.parseUnsignedInt(bits, 16))));
        }
        w.flush();
    }
}
"""


def _java_major() -> int | None:
    java = shutil.which("java")
    if java is None or shutil.which("javac") is None:
        return None
    out = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    version = out.split('"')[1] if '"' in out else ""
    return int(version.split(".")[1] if version.startswith("1.") else version.split(".")[0] or 0)


JAVA = _java_major()


@pytest.mark.skipif(JAVA is None or JAVA >= 19, reason="needs a JDK before 19 (its old Double.toString)")
def test_a_sample_prints_as_the_machines_jdk_prints_it(tmp_path: Path) -> None:
    """30,000 values, random bit patterns and short decimals, doubles and floats."""
    (tmp_path / "Oracle.java").write_text(ORACLE)
    subprocess.run(["javac", "Oracle.java"], cwd=tmp_path, check=True)
    rng = random.Random(20261205)
    cases: list[tuple[str, int]] = []
    while len(cases) < 30_000:
        kind = rng.choice("dDf")
        if kind == "d":
            bits = rng.getrandbits(64)
            if (bits >> 52) & 0x7FF != 0x7FF:
                cases.append(("d", bits))
        elif kind == "D":
            value = rng.randint(1, 10 ** rng.randint(1, 17)) / 10 ** rng.randint(0, 20)
            cases.append(("d", struct.unpack(">Q", struct.pack(">d", value))[0]))
        else:
            bits = rng.getrandbits(32)
            if (bits >> 23) & 0xFF != 0xFF:
                cases.append(("f", bits))
    lines = "".join(f"{kind} {bits:x}\n" for kind, bits in cases)
    printed = subprocess.run(
        ["java", "-cp", str(tmp_path), "Oracle"], input=lines, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    wrong = []
    for (kind, bits), java in zip(cases, printed, strict=True):
        if kind == "d":
            ours = java_float_text(struct.unpack(">d", struct.pack(">Q", bits))[0])
        else:
            ours = java_float_text(struct.unpack(">f", struct.pack(">I", bits))[0], single=True)
        if ours != java:
            wrong.append((kind, hex(bits), java, ours))
    assert not wrong, f"{len(wrong)} differ, e.g. {wrong[:5]}"
