"""The create forms: what they create goes through the API's operation as the signed-in account;
a refused request shows the API's error beside the field it names, keeps what was typed and
creates nothing; another account's models and configs are never offered."""

import json
import re
from unittest import mock

import pytest

from accounts import buckets
from hosting import services as hosting_services
from hosting.models import Endpoint, EndpointConfig, SageMakerModel
from tests.unit.console.conftest import ACCOUNT_A, ACCOUNT_B, ctx, make_job, operator
from training.models import TrainingJob

ROLE_A = f"arn:aws:iam::{ACCOUNT_A}:role/SageMakerRole"
MODEL_FORM = {
    "name": "demo",
    "image": "sageport/python-serve:latest",
    "model_data": "s3://bucket-a/model.tar.gz",
    "role": ROLE_A,
    "environment": "MODE=fast\nGREETING=a=b\n",
}
TRAINING_FORM = {
    "name": "train-1",
    "image": "img:latest",
    "role": ROLE_A,
    "input": "s3://bucket-a/data/",
    "output": "s3://bucket-a/output",
    "instance_type": "ml.m5.large",
    "instance_count": "1",
    "max_runtime": "600",
    "hyperparameters": "epochs=3",
}


@pytest.fixture(autouse=True)
def owned_buckets(db):
    buckets.claim("bucket-a", ACCOUNT_A)
    buckets.claim("bucket-b", ACCOUNT_B)


@pytest.fixture
def operator_client(db):
    return operator()


def make_model(account_id: str, name: str) -> SageMakerModel:
    return hosting_services.create_model(
        ctx(account_id), {"ModelName": name, "PrimaryContainer": {"Image": "img:1"}}
    )


def make_config(account_id: str, name: str, model: str) -> EndpointConfig:
    variant = {"VariantName": "AllTraffic", "ModelName": model, "InstanceType": "ml.m5.large",
               "InitialInstanceCount": 1}
    return hosting_services.create_endpoint_config(
        ctx(account_id), {"EndpointConfigName": name, "ProductionVariants": [variant]}
    )


def field_error(html: str, field: str) -> str:
    found = re.search(rf'data-testid="error-{field}">(.*?)</div>', html, re.S)
    assert found, f"no error beside {field}"
    return found.group(1)


def options(html: str, field: str) -> list[str]:
    select = re.search(rf'<select id="field-{field}".*?</select>', html, re.S).group()
    return re.findall(r'<option value="([^"]*)"', select)


def test_the_lists_lead_to_the_create_forms(account_a):
    for listing, form in [("models/", "models/create"), ("endpoint-configs/", "endpoint-configs/create"),
                          ("endpoints/", "endpoints/create"), ("training-jobs/", "training-jobs/create")]:
        assert f'href="/console/{form}"' in account_a.get(f"/console/{listing}").content.decode()
        assert account_a.get(f"/console/{form}").status_code == 200


def test_an_operator_has_no_account_to_create_in(operator_client):
    assert "/console/models/create" not in operator_client.get("/console/models/").content.decode()
    assert operator_client.get("/console/models/create").status_code == 404


def test_a_model_is_created_through_create_model_as_the_signed_in_account(account_a):
    with mock.patch.object(hosting_services, "create_model", wraps=hosting_services.create_model) as create:
        response = account_a.post("/console/models/create", MODEL_FORM)

    model = SageMakerModel.objects.get()
    assert response.status_code == 302 and response.url == f"/console/models/{model.model_name}/"
    assert create.call_args.args[0].account_id == ACCOUNT_A
    assert (model.account_id, model.model_name) == (ACCOUNT_A, "demo")
    assert model.request["PrimaryContainer"] == {
        "Image": "sageport/python-serve:latest",
        "ModelDataUrl": "s3://bucket-a/model.tar.gz",
        "Environment": {"MODE": "fast", "GREETING": "a=b"},
    }
    assert "Created model demo." in account_a.get(response.url).content.decode()


def test_a_bad_model_name_is_shown_beside_it_with_the_values_kept_and_nothing_created(account_a):
    response = account_a.post("/console/models/create", {**MODEL_FORM, "name": "bad_name"})

    html = response.content.decode()
    assert response.status_code == 200
    assert "Value &#x27;bad_name&#x27; at &#x27;modelName&#x27; failed to satisfy constraint" in field_error(
        html, "name"
    )
    assert 'value="bad_name"' in html and 'value="s3://bucket-a/model.tar.gz"' in html
    assert "GREETING=a=b" in html
    assert 'aria-invalid="true" aria-describedby="field-name-error"' in html
    assert not SageMakerModel.objects.exists()


def test_another_accounts_bucket_is_refused_beside_the_model_data_field(account_a):
    response = account_a.post(
        "/console/models/create", {**MODEL_FORM, "model_data": "s3://bucket-b/model.tar.gz"}
    )

    assert "Could not access model data at s3://bucket-b/model.tar.gz" in field_error(
        response.content.decode(), "model_data"
    )
    assert not SageMakerModel.objects.exists()


def test_an_environment_line_that_is_not_key_value_is_shown_beside_the_environment(account_a):
    response = account_a.post("/console/models/create", {**MODEL_FORM, "environment": "MODE=fast\noops"})

    assert "Line 2 is not KEY=VALUE: oops" in field_error(response.content.decode(), "environment")
    assert not SageMakerModel.objects.exists()


def test_an_error_naming_no_field_is_shown_above_the_form(account_a):
    response = account_a.post(
        "/console/models/create", {**MODEL_FORM, "role": f"arn:aws:iam::{ACCOUNT_B}:role/r"}
    )

    html = response.content.decode()
    denied = "AccessDeniedException: Cross-account pass role is not allowed"
    assert f'data-testid="form-error"><p>{denied}' in html
    assert 'data-testid="error-' not in html
    assert html.count('role="status"') == 0  # the page's one status region is the messages list
    assert not SageMakerModel.objects.exists()


def test_an_endpoint_config_offers_only_the_accounts_own_models(account_a):
    make_model(ACCOUNT_A, "mine")
    make_model(ACCOUNT_B, "theirs")

    html = account_a.get("/console/endpoint-configs/create").content.decode()

    assert options(html, "model") == ["mine"]
    assert "ml.m5.large" in options(html, "instance_type") and "ml.bogus.large" not in html


def test_a_models_page_leads_to_a_config_form_with_the_model_chosen(account_a):
    model = make_model(ACCOUNT_A, "mine")
    make_model(ACCOUNT_A, "another")

    page = account_a.get(f"/console/models/{model.model_name}/").content.decode()
    form = account_a.get("/console/endpoint-configs/create?model=mine").content.decode()

    assert 'href="/console/endpoint-configs/create?model=mine"' in page
    assert '<option value="mine" selected>' in form and '<option value="another" >' in form
    assert '<option value="ml.m5.large" selected>' in form


def test_an_endpoint_config_is_created_with_one_variant(account_a):
    make_model(ACCOUNT_A, "mine")
    form = {"name": "cfg", "model": "mine", "instance_type": "ml.m5.large", "instance_count": "2"}

    response = account_a.post("/console/endpoint-configs/create", form)

    config = EndpointConfig.objects.get(account_id=ACCOUNT_A)
    assert response.status_code == 302
    assert response.url == f"/console/endpoint-configs/{config.endpoint_config_name}/"
    [variant] = config.request["ProductionVariants"]
    assert (variant["VariantName"], variant["ModelName"]) == ("AllTraffic", "mine")
    assert variant["InitialInstanceCount"] == 2


def test_another_accounts_model_posted_anyway_is_not_found_beside_the_model_field(account_a):
    make_model(ACCOUNT_B, "theirs")
    form = {"name": "cfg", "model": "theirs", "instance_type": "ml.m5.large", "instance_count": "1"}

    response = account_a.post("/console/endpoint-configs/create", form)

    arn = f"arn:aws:sagemaker:us-east-1:{ACCOUNT_A}:model/theirs"
    assert f"Could not find model &quot;{arn}&quot;" in field_error(response.content.decode(), "model")
    assert not EndpointConfig.objects.exists() and response.status_code == 200


def test_an_instance_count_that_is_not_a_number_gets_the_apis_words_beside_it(account_a):
    make_model(ACCOUNT_A, "mine")
    form = {"name": "cfg", "model": "mine", "instance_type": "ml.m5.large", "instance_count": "two"}

    response = account_a.post("/console/endpoint-configs/create", form)

    assert "Member must be of type integer" in field_error(response.content.decode(), "instance_count")
    assert not EndpointConfig.objects.exists()


def test_an_endpoint_offers_only_the_accounts_own_configs_and_is_created_from_one(account_a):
    make_model(ACCOUNT_A, "mine")
    make_config(ACCOUNT_A, "cfg-a", "mine")
    make_model(ACCOUNT_B, "theirs")
    make_config(ACCOUNT_B, "cfg-b", "theirs")
    assert options(account_a.get("/console/endpoints/create").content.decode(), "config") == ["cfg-a"]

    response = account_a.post("/console/endpoints/create", {"name": "ep", "config": "cfg-a"})

    endpoint = Endpoint.objects.get(account_id=ACCOUNT_A)
    assert response.url == f"/console/endpoints/{endpoint.endpoint_name}/"
    assert (endpoint.endpoint_name, endpoint.endpoint_config_name) == ("ep", "cfg-a")
    assert endpoint.endpoint_status == "Creating"


def test_another_accounts_config_posted_anyway_is_not_found_beside_the_config_field(account_a):
    make_model(ACCOUNT_B, "theirs")
    make_config(ACCOUNT_B, "cfg-b", "theirs")

    response = account_a.post("/console/endpoints/create", {"name": "ep", "config": "cfg-b"})

    assert "Could not find endpoint configuration" in field_error(response.content.decode(), "config")
    assert not Endpoint.objects.exists()


def test_an_endpoint_name_already_taken_is_shown_beside_the_name(account_a):
    make_model(ACCOUNT_A, "mine")
    make_config(ACCOUNT_A, "cfg-a", "mine")
    account_a.post("/console/endpoints/create", {"name": "ep", "config": "cfg-a"})

    response = account_a.post("/console/endpoints/create", {"name": "ep", "config": "cfg-a"})

    assert "Cannot create already existing endpoint" in field_error(response.content.decode(), "name")
    assert Endpoint.objects.count() == 1


def test_a_training_job_is_created_through_create_training_job(account_a):
    response = account_a.post("/console/training-jobs/create", TRAINING_FORM)

    job = TrainingJob.objects.get(account_id=ACCOUNT_A)
    assert response.url == f"/console/training-jobs/{job.training_job_name}/"
    assert job.request["HyperParameters"] == {"epochs": "3"}
    assert job.request["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"] == "s3://bucket-a/data/"
    assert job.request["StoppingCondition"]["MaxRuntimeInSeconds"] == 600


def test_a_training_job_without_input_sends_no_channel(account_a):
    account_a.post("/console/training-jobs/create", {**TRAINING_FORM, "input": ""})

    assert "InputDataConfig" not in TrainingJob.objects.get().request


@pytest.mark.parametrize(
    "change, field, words",
    [
        ({"output": "s3://bucket-b/output"}, "output", "given in OutputDataConfig.S3OutputPath"),
        ({"input": "s3://bucket-b/data/"}, "input", "No S3 objects found under S3 URL"),
        ({"max_runtime": "0"}, "max_runtime", "Member must have value greater than or equal to 1"),
        ({"instance_type": "ml.nope.large"}, "instance_type", "Member must satisfy enum value set"),
        ({"name": "train-1"}, "name", "a training job with this name already exists"),
    ],
)
def test_a_refused_training_job_shows_the_error_beside_its_field(account_a, change, field, words):
    make_job(ACCOUNT_A, "train-1")

    response = account_a.post("/console/training-jobs/create", {**TRAINING_FORM, **change})

    assert response.status_code == 200
    assert words in field_error(response.content.decode(), field)
    assert TrainingJob.objects.count() == 1


def test_a_clone_goes_through_the_tenancy_rule_as_the_api_does(account_a):
    job = make_job(ACCOUNT_A, "original")
    body = {**job.request, "OutputDataConfig": {"S3OutputPath": "s3://bucket-b/out"}}
    request = {key: body[key] for key in ("AlgorithmSpecification", "RoleArn", "OutputDataConfig",
                                          "ResourceConfig", "StoppingCondition")}

    response = account_a.post(
        f"/console/training-jobs/{job.training_job_name}/clone",
        {"name": "copy", "request": json.dumps(request)},
    )

    assert "Could not access the S3 location" in response.content.decode()
    assert not TrainingJob.objects.filter(training_job_name="copy").exists()
