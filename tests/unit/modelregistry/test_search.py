"""`Search` over model packages and groups through a real boto3 client, by the rules of the
botocore documentation of Filter, NestedFilters, SearchExpression and SearchRequest."""

import pytest
from botocore.exceptions import ClientError

from tests.unit.modelregistry.test_registry_api import SPEC, register, sagemaker  # noqa: F401  (fixture)
from tests.unit.protocol.conftest import access_key, make_client  # noqa: F401  (fixtures)


@pytest.fixture
def registered(sagemaker):  # noqa: F811
    sagemaker.create_model_package_group(
        ModelPackageGroupName="churn", Tags=[{"Key": "team", "Value": "risk"}]
    )
    sagemaker.create_model_package_group(ModelPackageGroupName="fraud")
    register(sagemaker, "churn", ModelApprovalStatus="Approved", CustomerMetadataProperties={"auc": "0.91"})
    register(sagemaker, "churn")
    register(sagemaker, "fraud", ModelApprovalStatus="Approved")
    return sagemaker


def found(client, **params) -> list[tuple[str, int]]:
    results = client.search(Resource="ModelPackage", **params)["Results"]
    return [
        (r["ModelPackage"]["ModelPackageGroupName"], r["ModelPackage"]["ModelPackageVersion"])
        for r in results
    ]


def test_filters_are_anded_by_default_and_equals_is_the_default_operator(registered):
    expression = {
        "Filters": [
            {"Name": "ModelPackageGroupName", "Value": "churn"},
            {"Name": "ModelApprovalStatus", "Operator": "Equals", "Value": "Approved"},
        ]
    }
    assert found(registered, SearchExpression=expression) == [("churn", 1)]


def test_or_in_contains_and_version_comparisons(registered):
    either = {
        "Operator": "Or",
        "Filters": [
            {"Name": "ModelPackageGroupName", "Value": "fraud"},
            {"Name": "CustomerMetadataProperties.auc", "Operator": "Exists"},
        ],
    }
    assert sorted(found(registered, SearchExpression=either)) == [("churn", 1), ("fraud", 1)]
    among = {"Filters": [{"Name": "ModelPackageGroupName", "Operator": "In", "Value": "fraud, other"}]}
    assert found(registered, SearchExpression=among) == [("fraud", 1)]
    later = {"Filters": [{"Name": "ModelPackageVersion", "Operator": "GreaterThan", "Value": "1"}]}
    assert found(registered, SearchExpression=later) == [("churn", 2)]
    named = {"Filters": [{"Name": "ModelPackageArn", "Operator": "Contains", "Value": "churn/"}]}
    assert sorted(found(registered, SearchExpression=named)) == [("churn", 1), ("churn", 2)]


def test_a_version_carries_its_group_s_tags(registered):
    tagged = {"Filters": [{"Name": "Tags.team", "Value": "risk"}]}
    assert sorted(found(registered, SearchExpression=tagged)) == [("churn", 1), ("churn", 2)]


def test_results_are_sorted_newest_first_by_default_and_paged(registered):
    # SortBy "The default is LastModifiedTime", SortOrder "The default is Descending".
    assert found(registered) == [("fraud", 1), ("churn", 2), ("churn", 1)]
    first = registered.search(
        Resource="ModelPackage", SortBy="CreationTime", SortOrder="Ascending", MaxResults=2
    )
    assert first["TotalHits"] == {"Value": 3, "Relation": "EqualTo"}
    rest = found(registered, SortBy="CreationTime", SortOrder="Ascending", NextToken=first["NextToken"])
    assert rest == [("fraud", 1)]


def test_groups_are_searched_too(registered):
    results = registered.search(
        Resource="ModelPackageGroup", SearchExpression={"Filters": [{"Name": "Tags.team", "Value": "risk"}]}
    )["Results"]
    assert [r["ModelPackageGroup"]["ModelPackageGroupName"] for r in results] == ["churn"]


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        # Filter's Operator documentation: the error for a second Contains.
        (
            {
                "Filters": [
                    {"Name": "ModelPackageArn", "Operator": "Contains", "Value": "a"},
                    {"Name": "ModelPackageGroupName", "Operator": "Contains", "Value": "c"},
                ]
            },
            "'CONTAINS' operator usage limit of 1 exceeded.",
        ),
        # "GreaterThan … Not supported for text properties."
        (
            {"Filters": [{"Name": "ModelPackageGroupName", "Operator": "GreaterThan", "Value": "a"}]},
            "Operator GreaterThan is not supported for text property ModelPackageGroupName.",
        ),
        (
            {"Filters": [{"Name": "InferenceSpecification", "Value": "x"}]},
            "Property InferenceSpecification is a structure",
        ),
        (
            {"Filters": [{"Name": "CreationTime", "Operator": "LessThan", "Value": "soon"}]},
            "cannot be compared",
        ),
        ({}, "must specify at least one subexpression, filter, or nested filter"),
    ],
)
def test_expressions_search_refuses_are_validation_exceptions(registered, expression, message):
    with pytest.raises(ClientError) as raised:
        registered.search(Resource="ModelPackage", SearchExpression=expression)
    error = raised.value.response["Error"]
    assert error["Code"] == "ValidationException" and message in error["Message"]


def test_a_resource_nothing_registered_for_search_is_not_implemented(sagemaker):  # noqa: F811
    with pytest.raises(ClientError) as raised:
        sagemaker.search(Resource="Pipeline")
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 501
