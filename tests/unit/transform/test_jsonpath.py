"""SageMaker's JSONPath subset for DataProcessing filters.

Developer guide, "Associate Prediction Results with Input Records", "Supported JSONPath
Operators" (its table's examples are used below), and API reference, DataProcessing (examples
"$", "$[1:]", "$.features", "$[0,5:]", "$['id','SageMakerOutput']"; "If you specify indexes that
aren't within the dimension size of the joined dataset, you get an error")."""
import pytest

from transform.errors import ObjectFailed
from transform.jsonpath import compile_path, filter_problem, select

RECORD = {"id": {"a": 1, "b": 2}, "features": [1.5, 2.5], "SageMakerOutput": {"label": 1}}
ROW = ["c0", "c1", "c2", "c3", "c4", "c5", "c6"]


def picked(path: str, document):
    return select(compile_path(path), document)


@pytest.mark.parametrize(
    "path, expected",
    [
        ("$", RECORD),
        ("", RECORD),  # the API's default when the member is empty or absent
        ("$.id", {"a": 1, "b": 2}),
        ("$.id.*", [1, 2]),
        ("$.features", [1.5, 2.5]),
        ("$['id','SageMakerOutput']", {"id": {"a": 1, "b": 2}, "SageMakerOutput": {"label": 1}}),
        ("$['id', 'SageMakerOutput']", {"id": {"a": 1, "b": 2}, "SageMakerOutput": {"label": 1}}),
        ("$['features']", [1.5, 2.5]),
        ("$.id.['a','b']", {"a": 1, "b": 2}),  # the guide: `$.field1.['child1','child2']`
        ("$.features[-1]", 2.5),
        ("$.features[*]", [1.5, 2.5]),
    ],
)
def test_json_paths_from_the_guide_pick_what_it_describes(path, expected):
    assert picked(path, RECORD) == expected


@pytest.mark.parametrize(
    "path, expected",
    [
        ("$[1]", "c1"),
        ("$[1,3,5]", ["c1", "c3", "c5"]),
        ("$[-1]", "c6"),  # "A -1 index refers to the last element in an array"
        ("$[0,-1]", ["c0", "c6"]),
        ("$[2:]", ["c2", "c3", "c4", "c5", "c6"]),
        ("$[0,5:]", ["c0", "c5", "c6"]),
        ("$[1:]", ROW[1:]),
    ],
)
def test_index_paths_pick_csv_columns(path, expected):
    """"For CSV data, each row is taken as a JSON array, so only index based JSONPaths can be
    applied, e.g. $[0], $[1:]"."""
    assert picked(path, ROW) == expected


def test_slice_ends_are_inclusive_as_the_guide_s_examples_say():
    """"The colon (:) tells SageMaker to include all of the elements between two values,
    inclusive. For example, $[1:4] specifies the second through fifth columns"; "[:5] ... from
    the first column (index 0) through the sixth column"."""
    assert picked("$[1:4]", ROW) == ["c1", "c2", "c3", "c4"]
    assert picked("$[:5]", ROW) == ["c0", "c1", "c2", "c3", "c4", "c5"]
    assert picked("$[2:5]", ROW) == ["c2", "c3", "c4", "c5"]


@pytest.mark.parametrize("path", ["$[7]", "$[-8]", "$[2:9]", "$[1,10]"])
def test_an_index_outside_the_data_fails_the_object(path):
    with pytest.raises(ObjectFailed, match="outside the 7 elements"):
        picked(path, ROW)


def test_a_missing_attribute_fails_the_object():
    with pytest.raises(ObjectFailed, match="no attribute 'label'"):
        picked("$.label", RECORD)


def test_two_ranges_in_one_bracket_fail_with_sagemaker_s_wording():
    """sagemaker-python-sdk issue 1112, the failure SageMaker reported for the object."""
    with pytest.raises(ObjectFailed) as failed:
        compile_path("$[0:2,246:]")
    assert failed.value.reason == (
        "Invalid JsonPath: $[0:2,246:]: only single range filters of format (eg: [1:5]) are supported. "
        "Format [0:2,246:] is not supported"
    )


@pytest.mark.parametrize(
    "path",
    [
        "features",  # "$ ... is required at the beginning of all path expressions"
        "$..id",  # recursive descent is not in the table
        "$[?(@.id)]",  # nor are filter expressions
        "$.field1.['child1','child2.grandchild']",  # the guide's unsupported example
        "$[1",
        "$[1:2:3]",
    ],
)
def test_paths_outside_the_subset_fail_as_invalid(path):
    with pytest.raises(ObjectFailed, match=r"^Invalid JsonPath: "):
        compile_path(path)


def test_create_transform_job_refuses_a_character_outside_the_operators_in_sagemaker_s_wording():
    """aws/aws-sdk issue 184: CreateTransformJob's ValidationException for an underscore."""
    problem = filter_problem("OutputFilter", "$['account_id','SageMakerOutput']", "application/jsonlines")
    assert problem == (
        "Invalid OutputFilter: \"$['account_id','SageMakerOutput']\". Unexpected \"_\" in JsonPath. "
        "Supported operators for \"application/jsonlines\" are "
        "['$', '[', ']', '*', '.', ' ', ',', ':', '-', ''']"
    )


@pytest.mark.parametrize(
    "path", ["$", "", None, "$[1:]", "$.features", "$[0,5:]", "$['id','SageMakerOutput']", "$.id.*"]
)
def test_the_documented_examples_pass_the_character_check(path):
    assert filter_problem("InputFilter", path, "application/json") is None


def test_csv_filters_are_held_to_index_operators():
    """Only index-based paths apply to CSV rows."""
    assert filter_problem("InputFilter", "$[1:]", "text/csv") is None
    assert filter_problem("InputFilter", "$[0, -1]", "text/csv; charset=utf-8") is None
    assert filter_problem("InputFilter", "$.features", "text/csv") == (
        'Invalid InputFilter: "$.features". Unexpected "." in JsonPath. '
        "Supported operators for \"text/csv\" are ['$', '[', ']', ' ', ',', ':', '-']"
    )
