"""Pipeline definitions parsed and refused as SageMaker does at CreatePipeline: a definition it
cannot run is a ValidationException naming what is wrong (issue 27: "bad definitions refused at
create (cycles, unknown step types, missing properties)")."""

import copy
import json

import pytest

from pipelines import definition
from protocol.errors import ValidationException
from tests.unit.pipelines import sample


def refused(text: str) -> str:
    with pytest.raises(ValidationException) as caught:
        definition.parse(text)
    return caught.value.message


def test_the_sdks_definition_parses_with_its_branches_and_dependencies():
    parsed = definition.parse(sample.text())
    assert list(parsed.steps) == ["Prepare", "Train", "Check", "Register-RegisterModel", "TooLow"]
    assert parsed.steps["Train"].dependencies == {"Prepare"}
    assert parsed.steps["Check"].dependencies == {"Prepare"}  # its JsonGet; not its branches' steps
    assert parsed.steps["Register-RegisterModel"].dependencies == {"Check", "Train"}
    assert parsed.steps["Register-RegisterModel"].branch == ("Check", True)
    assert parsed.steps["TooLow"].branch == ("Check", False)
    assert parsed.parameters["Threshold"].value("7") == 7
    assert parsed.parameters["Threshold"].value(None) == 1


def test_step_functions_read_each_other_and_a_condition_reads_their_return_values():
    check = {
        "Name": "Check",
        "Type": "Condition",
        "Arguments": {
            "Conditions": [{"Type": "Equals", "LeftValue": sample.delayed_return("Total"), "RightValue": 3}],
            "IfSteps": [sample.FAIL],
            "ElseSteps": [],
        },
    }
    steps = [sample.function_step("Make"), sample.function_step("Total", "Make"), check]
    parsed = definition.parse(sample.text(Steps=steps))
    assert parsed.steps["Total"].dependencies == {"Make"}
    assert parsed.steps["Check"].dependencies == {"Total"}
    # Its return value is read from the step's output path: a property a training job has.
    check["Arguments"]["Conditions"][0]["LeftValue"] = sample.delayed_return("Make")
    check["Arguments"]["Conditions"][0]["LeftValue"]["Std:JsonGet"]["S3Uri"]["Std:Join"]["Values"][0] = {
        "Get": "Steps.Make.OutputDataConfig.Nope"
    }
    assert "reads a property step 'Make' does not have" in refused(sample.text(Steps=steps))


def test_invalid_json_is_refused():
    assert "not valid JSON" in refused("{")


def test_a_wrong_version_is_refused():
    assert "Version must be '2020-12-01'" in refused(sample.text(Version="2019-01-01"))


def test_a_step_type_sageport_does_not_run_is_refused_by_name():
    function = {"Name": "Notify", "Type": "Lambda", "Arguments": {}}
    assert "Step 'Notify': step type Lambda is not supported by Sageport." in refused(
        sample.text(Steps=[sample.PREPARE, function])
    )


def test_an_unknown_step_type_is_refused():
    assert "Step 'X': unknown step type 'Magic'." in refused(
        sample.text(Steps=[{"Name": "X", "Type": "Magic", "Arguments": {}}])
    )


def test_caching_or_retrying_a_step_without_a_job_and_bad_retry_policies_are_refused():
    """The SDK's bounds (sagemaker.workflow.retry): MaxAttempts at most 20; SageMaker.* types are
    SageMakerJobStepRetryPolicy's, for the steps that run a job."""
    cached_fail = dict(
        sample.FAIL,
        CacheConfig={"Enabled": True, "ExpireAfter": "P30D"},
        RetryPolicies=[{"ExceptionType": ["Step.SERVICE_FAULT"], "MaxAttempts": 3}],
    )
    step = dict(sample.PREPARE, RetryPolicies=[{"ExceptionType": ["Step.NOPE"], "MaxAttempts": 30}])
    register = dict(
        sample.REGISTER, RetryPolicies=[{"ExceptionType": ["SageMaker.CAPACITY_ERROR"], "MaxAttempts": 1}]
    )
    message = refused(sample.text(Steps=[step, cached_fail, register]))
    assert "a Fail step has no job to cache" in message
    assert "a Fail step makes no resource to retry" in message
    assert "Step 'Prepare': RetryPolicies: Step.NOPE not one of" in message
    assert "Step 'Prepare': RetryPolicies: MaxAttempts must be at most 20, not 30." in message
    assert "Step 'Register-RegisterModel': RetryPolicies: SageMaker.CAPACITY_ERROR not one of" in message


def test_a_cycle_is_refused_naming_its_steps():
    first = {"Name": "A", "Type": "Fail", "Arguments": {}, "DependsOn": ["B"]}
    second = {"Name": "B", "Type": "Fail", "Arguments": {}, "DependsOn": ["A"]}
    assert "cycle: A -> B -> A" in refused(sample.text(Steps=[first, second]))


def test_a_property_the_step_does_not_have_is_refused():
    """The SDK's properties are the Describe answer's members (DescribeTrainingJob's output shape)."""
    train = copy.deepcopy(sample.TRAIN)
    register = copy.deepcopy(sample.REGISTER)
    register["Arguments"]["InferenceSpecification"]["Containers"][0]["ModelDataUrl"] = {
        "Get": "Steps.Train.ModelArtifacts.NoSuchMember"
    }
    message = refused(sample.text(Steps=[sample.PREPARE, train, register]))
    assert "Step 'Register-RegisterModel' reads a property step 'Train' does not have" in message
    assert "NoSuchMember" in message


def test_unknown_steps_parameters_and_property_files_are_refused():
    step = {
        "Name": "X",
        "Type": "Fail",
        "DependsOn": ["Ghost"],
        "Arguments": {
            "ErrorMessage": {
                "Std:Join": {
                    "On": "",
                    "Values": [
                        {"Get": "Parameters.Nope"},
                        {"Get": "Steps.Other.ProcessingJobArn"},
                        {
                            "Std:JsonGet": {
                                "PropertyFile": {"Get": "Steps.Prepare.PropertyFiles.Missing"},
                                "Path": "a",
                            }
                        },
                    ],
                }
            }
        },
    }
    message = refused(sample.text(Steps=[sample.PREPARE, step]))
    assert "DependsOn 'Ghost'" in message
    assert "parameter 'Nope', which is not defined" in message
    assert "reads step 'Other'" in message
    assert "property file 'Missing'" in message


def test_duplicate_step_names_and_unsupported_functions_are_refused():
    step = {"Name": "Prepare", "Type": "Fail", "Arguments": {"ErrorMessage": {"Std:Magic": 1}}}
    message = refused(sample.text(Steps=[sample.PREPARE, step]))
    assert "'Prepare' is used twice" in message
    assert "the function Std:Magic is not supported by Sageport" in message


def test_a_bad_condition_and_a_parameter_default_of_the_wrong_type_are_refused():
    check = copy.deepcopy(sample.CHECK)
    check["Arguments"]["Conditions"] = [{"Type": "Between", "LeftValue": 1, "RightValue": 2}]
    parameters = [{"Name": "Threshold", "Type": "Integer", "DefaultValue": "many"}]
    message = refused(
        json.dumps(sample.document(Steps=[sample.PREPARE, sample.TRAIN, check], Parameters=parameters))
    )
    assert "condition type 'Between'" in message
    assert (
        "Parameter 'Threshold' of type Integer cannot take the value 'many' as its DefaultValue." in message
    )


def test_a_step_lacking_what_its_create_request_requires_is_refused():
    """The Arguments of a Training step are a CreateTrainingJob request less its name."""
    train = copy.deepcopy(sample.TRAIN)
    del train["Arguments"]["RoleArn"], train["Arguments"]["OutputDataConfig"]
    assert "Step 'Train': Arguments lack what CreateTrainingJob requires: " in refused(
        sample.text(Steps=[sample.PREPARE, train])
    )
