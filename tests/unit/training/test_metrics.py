"""MetricDefinitions applied to log lines: the first group of a match, read as a float."""
import re

from training.metrics import MetricDefinition, extract


def definitions(**regexes: str) -> list[MetricDefinition]:
    return [MetricDefinition(name, re.compile(regex)) for name, regex in regexes.items()]


def test_each_matching_definition_yields_a_point_stamped_with_its_line():
    points = extract(
        definitions(loss=r"loss=([0-9.]+)", accuracy=r"acc: (\S+)"),
        [(1000, "epoch 1 loss=0.75 acc: 0.5"), (2000, "no metrics here"), (3000, "epoch 2 loss=0.25")],
    )
    assert points == [("loss", 1000, 0.75), ("accuracy", 1000, 0.5), ("loss", 3000, 0.25)]


def test_values_in_scientific_notation_and_negative_values_are_read():
    points = extract(definitions(lr=r"lr=(\S+)", delta=r"delta=(\S+)"), [(1, "lr=1e-05 delta=-2.5")])
    assert points == [("lr", 1, 1e-05), ("delta", 1, -2.5)]


def test_text_that_is_not_a_finite_number_is_no_point():
    points = extract(
        definitions(loss=r"loss=(\S+)", optional=r"step(?: (\d+))?"),
        [(1, "loss=nan"), (2, "loss=inf"), (3, "loss=abc"), (4, "step")],
    )
    assert points == []


def test_a_regex_without_a_group_takes_the_whole_match():
    assert extract(definitions(count=r"\d+(?= samples)"), [(1, "read 128 samples")]) == [("count", 1, 128.0)]
