"""The named formats people use, and ``get_format`` to look one up by any of its names.

>>> get_format("e4m3").name
'float8_e4m3fn'
"""

from __future__ import annotations

import re

from .formats import FloatFormat, Format, IntFormat
from .validation import lookup_key

__all__ = ["get_format", "list_formats", "register_format", "FORMATS"]

_F = FloatFormat
#: The registered formats, in the order the course meets them.
FORMATS: tuple[Format, ...] = (
    _F("float32", 8, 23, aliases=("fp32", "f32", "single"), description="IEEE 754 binary32"),
    _F("float16", 5, 10, aliases=("fp16", "f16", "half", "e5m10"), description="IEEE 754 binary16"),
    _F("bfloat16", 8, 7, aliases=("bf16", "e8m7"), description="brain float: float32's range, 8 bits of precision"),
    _F("float8_e4m3fn", 4, 3, special="fn", aliases=("e4m3", "fp8", "e4m3fn", "fp8_e4m3"),
       description="OCP FP8 E4M3: no inf, NaN at S.1111.111; forward-pass FP8"),
    _F("float8_e5m2", 5, 2, aliases=("e5m2", "fp8_e5m2"),
       description="OCP FP8 E5M2: IEEE-style inf/NaN; gradients in hybrid FP8"),
    _F("float8_e4m3fnuz", 4, 3, bias=8, special="fnuz", aliases=("e4m3fnuz",),
       description="E4M3 with bias 8, no -0, NaN at 0x80 (AMD MI300, Graphcore)"),
    _F("float8_e5m2fnuz", 5, 2, bias=16, special="fnuz", aliases=("e5m2fnuz",),
       description="E5M2 with bias 16, no inf, no -0, NaN at 0x80"),
    _F("float8_e4m3", 4, 3, aliases=("e4m3ieee", "e4m3_ieee"),
       description="IEEE-style E4M3: the top exponent holds inf and NaN, so max is 240"),
    _F("float8_e4m3b11fnuz", 4, 3, bias=11, special="fnuz", aliases=("e4m3b11fnuz", "e4m3b11"),
       description="E4M3 with bias 11, no -0 (Graphcore/TPU-style)"),
    _F("float8_e3m4", 3, 4, aliases=("e3m4",), description="IEEE-style E3M4: more precision, less range"),
    _F("float8_e8m0fnu", 8, 0, bias=127, signed=False, subnormals=False, special="fn",
       aliases=("e8m0", "ue8m0", "e8m0fnu", "e8m0fn"),
       description="OCP MX scale format: powers of two 2^-127..2^127, 0xFF is NaN, no zero, no sign"),
    _F("float6_e2m3fn", 2, 3, special="finite", aliases=("e2m3", "fp6_e2m3", "fp6"),
       description="OCP MX FP6 E2M3: no inf, no NaN"),
    _F("float6_e3m2fn", 3, 2, special="finite", aliases=("e3m2", "fp6_e3m2"),
       description="OCP MX FP6 E3M2: no inf, no NaN"),
    _F("float4_e2m1fn", 2, 1, special="finite", aliases=("e2m1", "fp4", "fp4_e2m1", "nvfp4_element"),
       description="OCP MX / NVFP4 element format: values 0, 0.5, 1, 1.5, 2, 3, 4, 6"),
    IntFormat("int8", 8, aliases=("i8",), description="8-bit two's-complement integer"),
    IntFormat("int4", 4, aliases=("i4",), description="4-bit two's-complement integer"),
    IntFormat("uint8", 8, signed=False, aliases=("u8",), description="8-bit unsigned integer"),
    IntFormat("uint4", 4, signed=False, aliases=("u4",), description="4-bit unsigned integer"),
)

_BY_NAME: dict[str, Format] = {}



def register_format(fmt: Format) -> Format:
    """Make ``fmt`` available to :func:`get_format` under its name and aliases.

    >>> register_format(FloatFormat("my_e3m3", 3, 3, special="finite")).max
    30.0
    """
    for n in (fmt.name, *fmt.aliases):
        k = lookup_key(n)
        if k in _BY_NAME and _BY_NAME[k] != fmt:
            raise ValueError(f"the name {n!r} is already used by {_BY_NAME[k].name}")
        _BY_NAME[k] = fmt
    return fmt


for _fmt in FORMATS:
    register_format(_fmt)

_EXMY = re.compile(r"^e(\d+)m(\d+)$")


def get_format(name: "str | Format") -> Format:
    """Look up a format by its dtype name or alias (case-insensitive); a format passes through.

    Any ``eXmY`` that is not registered is built as an IEEE-style format with the default bias.

    >>> get_format("UE8M0").max
    1.7014118346046923e+38
    >>> get_format("e3m3").max
    15.0
    """
    if isinstance(name, (FloatFormat, IntFormat)):
        return name
    if not isinstance(name, str):
        raise TypeError(f"a format is a name (str) or a FloatFormat/IntFormat, got {type(name).__name__}")
    hit = _BY_NAME.get(name)  # a name already in its normal form (keys are; a registered name never changes format)
    if hit is not None:
        return hit
    k = lookup_key(name)
    if k in _BY_NAME:
        return _BY_NAME[k]
    m = _EXMY.match(k)
    if m:
        return FloatFormat(k, int(m.group(1)), int(m.group(2)))
    raise ValueError(f"unknown format {name!r}; known names: {', '.join(sorted(_BY_NAME))}")


def list_formats(kind: str | None = None) -> list[Format]:
    """The registered formats (optionally only ``kind="float"`` or ``"int"``), in course order.

    >>> [f.name for f in list_formats("int")]
    ['int8', 'int4', 'uint8', 'uint4']
    """
    seen: list[Format] = []
    for f in _BY_NAME.values():
        if f not in seen and (kind is None or f.kind == kind):
            seen.append(f)
    return seen
