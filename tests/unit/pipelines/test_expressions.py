"""The SDK's expressions evaluated (sagemaker.workflow: Parameters, ExecutionVariables, step
properties with their PropertiesList indexing by name, Join, JsonGet) and its conditions."""

import pytest

from pipelines import caching, conditions, expressions, paths


class Scope:
    def __init__(self):
        self.properties = {
            "Prepare": {
                "ProcessingOutputConfig": {
                    "Outputs": [
                        {"OutputName": "report", "S3Output": {"S3Uri": "s3://b/report"}},
                        {"OutputName": "train", "S3Output": {"S3Uri": "s3://b/train"}},
                    ]
                }
            }
        }
        self.files = {("Prepare", "Report"): {"metrics": {"score": [0.5, 0.9]}}}
        self.objects = {"s3://b/abc123/Fn/results/results.json": {"Result": {"pair": [2, "x"]}}}

    def parameter(self, name):
        return {"Threshold": 3, "Flag": True}[name]

    def variable(self, name):
        return {"PipelineExecutionId": "abc123"}[name]

    def step_property(self, step, path):
        return expressions.lookup(self.properties[step], path, f"step {step}")

    def property_file(self, step, name, json_path):
        return expressions.lookup(self.files[(step, name)], json_path, name)

    def s3_json(self, uri, json_path):
        return expressions.lookup(self.objects[uri], json_path, uri)


# A @step function's return value as the SDK's DelayedReturn compiles it (`result["pair"][1]`).
DELAYED_RETURN = {
    "Std:JsonGet": {
        "S3Uri": {
            "Std:Join": {
                "On": "/",
                "Values": [{"Get": "Steps.Fn.OutputDataConfig.S3OutputPath"}, "results.json"],
            }
        },
        "Path": "Result['pair'][1]",
    }
}


def test_get_join_and_json_get_evaluate_inside_arguments():
    arguments = {
        "Count": {"Get": "Parameters.Threshold"},
        "Uri": {"Get": "Steps.Prepare.ProcessingOutputConfig.Outputs['train'].S3Output.S3Uri"},
        "Old": {"Get": "Steps.Prepare.Properties.ProcessingOutputConfig.Outputs[0].S3Output.S3Uri"},
        "Out": {
            "Std:Join": {
                "On": "/",
                "Values": ["s3://b", {"Get": "Execution.PipelineExecutionId"}, {"Get": "Parameters.Flag"}, 7],
            }
        },
        "Score": {
            "Std:JsonGet": {
                "PropertyFile": {"Get": "Steps.Prepare.PropertyFiles.Report"},
                "Path": "metrics.score[1]",
            }
        },
        "Plain": [{"Key": "v"}],
    }
    assert expressions.evaluate(arguments, Scope()) == {
        "Count": 3,
        "Uri": "s3://b/train",
        "Old": "s3://b/report",
        "Out": "s3://b/abc123/true/7",
        "Score": 0.9,
        "Plain": [{"Key": "v"}],
    }


def test_json_get_on_an_s3_uri_reads_the_value_at_its_path_and_references_the_uri_s_step():
    scope = Scope()
    scope.properties["Fn"] = {"OutputDataConfig": {"S3OutputPath": "s3://b/abc123/Fn/results"}}
    assert expressions.evaluate({"Arg": DELAYED_RETURN}, scope) == {"Arg": "x"}
    assert expressions.references(DELAYED_RETURN) == [
        expressions.Reference(step="Fn", path="OutputDataConfig.S3OutputPath")
    ]
    assert expressions.problems(DELAYED_RETURN) == []


def test_a_cache_key_holds_a_step_function_s_return_value_and_not_the_execution_id():
    """A step reading a DelayedReturn hits the cache when the value is the same (pipelines.caching)."""
    scope = Scope()
    scope.properties["Fn"] = {"OutputDataConfig": {"S3OutputPath": "s3://b/abc123/Fn/results"}}
    arguments = {"Arg": DELAYED_RETURN, "Run": {"Get": "Execution.PipelineExecutionId"}}
    assert caching.key("Training", arguments, scope) == caching.key(
        "Training", {"Arg": "x", "Run": {"Get": "Execution.PipelineExecutionId"}}, scope
    )


@pytest.mark.parametrize(
    "argument",
    [
        {"S3Uri": "s3://b/k", "PropertyFile": {"Get": "Steps.P.PropertyFiles.R"}, "Path": "a"},
        {"Path": "a"},
        {"S3Uri": "s3://b/k"},
    ],
)
def test_json_get_reads_exactly_one_source_at_a_path(argument):
    assert expressions.problems({"Std:JsonGet": argument}) == [
        'Std:JsonGet takes {"PropertyFile" or "S3Uri": ..., "Path": json path}.'
        if "Path" not in argument
        else "Std:JsonGet reads either a PropertyFile or an S3Uri, one of them."
    ]


def test_an_s3_uri_that_is_not_a_string_is_an_expression_error():
    with pytest.raises(expressions.ExpressionError, match="S3Uri must be a string"):
        expressions.evaluate({"Std:JsonGet": {"S3Uri": {"Get": "Parameters.Flag"}, "Path": "a"}}, Scope())


def test_a_missing_property_is_an_expression_error_naming_it():
    with pytest.raises(expressions.ExpressionError, match="has no value at 'nope'"):
        expressions.evaluate({"Get": "Steps.Prepare.ProcessingOutputConfig.Outputs['nope']"}, Scope())


def test_references_name_what_a_value_reads():
    refs = expressions.references(
        {"a": [{"Get": "Steps.S.X"}, {"Std:Join": {"On": "", "Values": [{"Get": "Parameters.P"}]}}]}
    )
    assert refs == [expressions.Reference(step="S", path="X"), expressions.Reference(parameter="P")]


def test_paths_tokenize_members_indices_and_names():
    assert paths.tokens("A.B[2]['x'].C[\"y\"]") == ["A", "B", 2, "x", "C", "y"]
    with pytest.raises(paths.PathError):
        paths.tokens("A..B")


@pytest.mark.parametrize(
    ("condition", "holds"),
    [
        (
            {"Type": "GreaterThanOrEqualTo", "LeftValue": 0.9, "RightValue": {"Get": "Parameters.Threshold"}},
            False,
        ),
        ({"Type": "LessThan", "LeftValue": "2", "RightValue": 3}, True),
        ({"Type": "Equals", "LeftValue": "a", "RightValue": "a"}, True),
        ({"Type": "In", "QueryValue": 3, "Values": [1, "3"]}, True),
        ({"Type": "Not", "Expression": {"Type": "Equals", "LeftValue": 1, "RightValue": 1}}, False),
        (
            {
                "Type": "Or",
                "Conditions": [
                    {"Type": "Equals", "LeftValue": 1, "RightValue": 2},
                    {"Type": "GreaterThan", "LeftValue": 2, "RightValue": 1},
                ],
            },
            True,
        ),
    ],
)
def test_conditions_hold_as_the_sdk_defines_them(condition, holds):
    assert conditions.problems([condition]) == []
    assert conditions.holds([condition], lambda value: expressions.evaluate(value, Scope())) is holds
