"""Each API error goes beside the field it names, or above the form when it names none."""

from console.field_errors import Target, place, shape_problems
from protocol.errors import ValidationException
from protocol.validation import validate_input

MODEL_TARGETS = [
    Target("name", "modelName", "model", "demo"),
    Target("image", "primaryContainer.image", "value", "img:1"),
    Target("model_data", "primaryContainer.modelDataUrl", "value", "s3://mine/model.tar.gz"),
    Target("role", "executionRoleArn", "value", "arn:aws:iam::111111111111:role/r"),
    Target("environment", "primaryContainer.environment"),
]


def validation_message(params: dict, operation: str = "CreateModel") -> str:
    try:
        validate_input("sagemaker", operation, params)
    except ValidationException as error:
        return error.message
    raise AssertionError("the request was valid")


def test_each_shape_problem_goes_beside_its_own_field():
    message = validation_message(
        {"ModelName": "bad_name", "PrimaryContainer": {"Image": "i", "Environment": {"a b": "c"}},
         "ExecutionRoleArn": "nope"}
    )

    placed = place(message, MODEL_TARGETS)

    assert placed.general == []
    assert placed.by_field.keys() == {"name", "environment", "role"}
    assert placed.by_field["name"] == [
        "Value 'bad_name' at 'modelName' failed to satisfy constraint: Member must satisfy regular "
        "expression pattern: ^[a-zA-Z0-9]([\\-a-zA-Z0-9]*[a-zA-Z0-9])?"
    ]
    assert len(placed.by_field["role"]) == 2  # too short and not the pattern: both shown
    assert "Map keys must satisfy constraint" in placed.by_field["environment"][0]


def test_a_problem_inside_a_list_member_finds_the_field_filling_it():
    message = validation_message(
        {"TrainingJobName": "j", "RoleArn": "arn:aws:iam::111111111111:role/r",
         "AlgorithmSpecification": {"TrainingImage": "i", "TrainingInputMode": "File"},
         "OutputDataConfig": {"S3OutputPath": "s3://b/o"},
         "ResourceConfig": {"InstanceType": "ml.m5.large", "InstanceCount": "two"},
         "InputDataConfig": [{"ChannelName": "training",
                              "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "ftp://x"}}}]},
        "CreateTrainingJob",
    )
    targets = [
        Target("input", "inputDataConfig.dataSource.s3DataSource.s3Uri"),
        Target("instance_count", "resourceConfig.instanceCount"),
    ]

    placed = place(message, targets)

    assert [problem[:16] for problem in placed.by_field["input"]] == ["Value 'ftp://x' "]
    assert placed.by_field["instance_count"][0].endswith("Member must be of type integer")


def test_a_problem_whose_value_holds_quotes_and_semicolons_is_kept_whole():
    message = (
        "2 validation errors detected: Value 'a'; Value 'b' at 'modelName' failed to satisfy "
        "constraint: Member must have length less than or equal to 63; Value 'x' at 'primaryContainer.image' "
        "failed to satisfy constraint: Member must have length less than or equal to 255"
    )

    assert [path for path, _ in shape_problems(message)] == ["modelName", "primaryContainer.image"]
    assert shape_problems(message)[0][1].startswith("Value 'a'; Value 'b' at 'modelName'")


def test_a_problem_of_a_member_no_field_fills_goes_above_the_form():
    message = validation_message({"ModelName": "ok", "PrimaryContainer": {"Image": "i", "Mode": "Nope"}})

    placed = place(message, MODEL_TARGETS)

    assert placed.by_field == {} and "primaryContainer.mode" in placed.general[0]


def test_a_service_error_goes_beside_the_field_whose_value_it_quotes_first():
    refusal = (
        "Could not access model data at s3://mine/model.tar.gz. Please ensure that "
        "arn:aws:iam::111111111111:role/r exists and that its trust relationship policy allows ..."
    )
    taken = 'Cannot create already existing model "arn:aws:sagemaker:us-east-1:111111111111:model/demo".'

    assert place(refusal, MODEL_TARGETS).by_field == {"model_data": [refusal]}
    assert place(taken, MODEL_TARGETS).by_field == {"name": [taken]}


def test_an_arn_names_a_field_only_by_its_own_resource_type_and_whole_name():
    targets = [Target("name", "endpointConfigName", "endpoint-config", "demo"),
               Target("model", "productionVariants.modelName", "model", "demo")]
    missing = 'Could not find model "arn:aws:sagemaker:us-east-1:111111111111:model/demo".'
    longer = 'Could not find model "arn:aws:sagemaker:us-east-1:111111111111:model/demo-2".'

    assert place(missing, targets).by_field == {"model": [missing]}
    assert place(longer, targets).general == [longer]


def test_a_service_error_naming_a_member_path_goes_beside_that_field():
    message = (
        'Could not access the S3 location "s3://theirs/out" given in OutputDataConfig.S3OutputPath. '
        "Please ensure that the bucket exists"
    )
    targets = [Target("role", "roleArn"), Target("output", "outputDataConfig.s3OutputPath")]

    assert place(message, targets).by_field == {"output": [message]}


def test_an_error_naming_no_field_goes_above_the_form():
    placed = place("Cross-account pass role is not allowed.", MODEL_TARGETS)

    assert placed.by_field == {} and placed.general == ["Cross-account pass role is not allowed."]
