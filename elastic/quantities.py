"""Kubernetes resource quantities ("2", "500m", "4Gi", "1e3", 1.5) as exact numbers.

The grammar is apimachinery's `resource.Quantity`: a signed decimal number, then either a binary
suffix (Ki … Ei), a decimal suffix (n u m "" k M G T P E) or a decimal exponent (e3, E-2)."""

import re
from decimal import Decimal

_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<decimal>[numkMGTPE])|(?P<exponent>[eE][+-]?\d{1,3}))?"
)
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "k": Decimal("1e3"),
    "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"), "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}


def parse_quantity(value: object) -> Decimal:
    """The quantity's exact value; ValueError names what is wrong. A JSON number is a quantity
    without a suffix (YAML's `cpu: 2` arrives as an integer)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError("must be a quantity such as 2, 500m, 4Gi")
    text = str(value).strip() if isinstance(value, str) else repr(value)
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise ValueError(f"{text[:40]!r} is not a quantity (such as 2, 500m, 4Gi)")
    number = Decimal(match["number"])
    if match["binary"]:
        return number * _BINARY[match["binary"]]
    if match["decimal"]:
        return number * _DECIMAL[match["decimal"]]
    if match["exponent"]:
        return number.scaleb(int(match["exponent"][1:]))
    return number
