"""A tuning job's ParameterRanges as SageMaker documents them (automatic-model-tuning-define-ranges):
integer and continuous ranges with a ScalingType, categorical ranges with their values. Pure
Python: parsing with the problems in ValidationException wording, sampling, the grid.

Scaling (SageMaker's words, and what a sample here does):
- Linear: uniform over [MinValue, MaxValue];
- Logarithmic: uniform over the logarithms; only for ranges whose values are all greater than 0;
- ReverseLogarithmic: uniform over log(1 - x), dense near 1; continuous ranges only, all values
  within 0 <= x < 1;
- Auto: SageMaker "chooses the best scale"; Random search here samples it linearly (the documented
  default scale), so Auto never refuses a range that Linear accepts."""
import math
import random
from dataclasses import dataclass

LINEAR, LOGARITHMIC, REVERSE_LOGARITHMIC, AUTO = "Linear", "Logarithmic", "ReverseLogarithmic", "Auto"


@dataclass(frozen=True)
class NumericRange:
    name: str
    low: float
    high: float
    scaling: str
    integer: bool

    def sample(self, rng: random.Random) -> str:
        # An integer range is drawn over [low - 0.5, high + 0.5] and rounded, so that its end
        # values are as likely as the others (low - 0.5 > 0 for a Logarithmic one: low >= 1).
        low, high = (self.low - 0.5, self.high + 0.5) if self.integer else (self.low, self.high)
        if self.scaling == LOGARITHMIC:
            value = math.exp(rng.uniform(math.log(low), math.log(high)))
        elif self.scaling == REVERSE_LOGARITHMIC:
            value = 1 - math.exp(rng.uniform(math.log(1 - high), math.log(1 - low)))
        else:
            value = rng.uniform(low, high)
        if self.integer:
            return str(min(max(round(value), self.low), self.high))
        return repr(min(max(value, self.low), self.high))  # exp/log may step past a bound


@dataclass(frozen=True)
class CategoricalRange:
    name: str
    values: tuple[str, ...]

    def sample(self, rng: random.Random) -> str:
        return rng.choice(self.values)


Range = NumericRange | CategoricalRange


def parse(ranges: dict | None) -> tuple[list[Range], list[str]]:
    """The ranges of a ParameterRanges member, in request order (integer, continuous, categorical),
    and the problems found in them."""
    ranges = ranges or {}
    parsed: list[Range] = []
    problems: list[str] = []
    for kind, integer in (("IntegerParameterRanges", True), ("ContinuousParameterRanges", False)):
        for spec in ranges.get(kind, []):
            found, why = _numeric(spec, integer)
            problems += why
            if found is not None:
                parsed.append(found)
    for spec in ranges.get("CategoricalParameterRanges", []):
        parsed.append(CategoricalRange(spec["Name"], tuple(spec["Values"])))
    if ranges.get("AutoParameters"):
        problems.append("ParameterRanges.AutoParameters (Autotune) is not supported by Sageport.")
    names = [found.name for found in parsed]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        problems.append(
            f"Hyperparameter names must be unique across the ranges; repeated: {', '.join(repeated)}."
        )
    return parsed, problems


def _numeric(spec: dict, integer: bool) -> tuple[NumericRange | None, list[str]]:
    name, kind = spec["Name"], "integer" if integer else "continuous"
    scaling = spec.get("ScalingType", AUTO)
    try:
        low, high = (_number(spec[bound], integer) for bound in ("MinValue", "MaxValue"))
    except ValueError:
        return None, [
            f"The {kind} hyperparameter range '{name}' must have {kind} MinValue and MaxValue "
            f"(given {spec['MinValue']!r} and {spec['MaxValue']!r})."
        ]
    problems = []
    if low > high:
        problems.append(
            f"The {kind} hyperparameter range '{name}' has MinValue {spec['MinValue']} greater than "
            f"MaxValue {spec['MaxValue']}."
        )
    if scaling == LOGARITHMIC and low <= 0:
        problems.append(
            f"The {kind} hyperparameter range '{name}' uses Logarithmic scaling, which needs every value "
            f"to be greater than 0 (MinValue is {spec['MinValue']})."
        )
    if scaling == REVERSE_LOGARITHMIC and integer:
        problems.append(
            f"The integer hyperparameter range '{name}' uses ReverseLogarithmic scaling, which only "
            "continuous ranges support."
        )
    elif scaling == REVERSE_LOGARITHMIC and not (0 <= low and high < 1):
        problems.append(
            f"The continuous hyperparameter range '{name}' uses ReverseLogarithmic scaling, which needs "
            f"every value within 0 <= value < 1 (the range is {spec['MinValue']} to {spec['MaxValue']})."
        )
    return (None if problems else NumericRange(name, low, high, scaling, integer)), problems


def _number(text: str, integer: bool) -> float:
    value = int(text) if integer else float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def sample(ranges: list[Range], rng: random.Random) -> dict[str, str]:
    """One point of the search space: a value for every range, as the strings hyperparameters are."""
    return {found.name: found.sample(rng) for found in ranges}


def grid_size(ranges: list[Range]) -> int:
    return math.prod(len(found.values) for found in ranges)


def grid_point(ranges: list[Range], index: int) -> dict[str, str]:
    """The `index`-th (from 0) combination of the categorical values, the last range varying
    fastest: every combination exactly once over 0 .. grid_size - 1."""
    point = {}
    for found in reversed(ranges):
        index, position = divmod(index, len(found.values))
        point[found.name] = found.values[position]
    return {found.name: point[found.name] for found in ranges}
