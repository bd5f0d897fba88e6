"""Warm start over real rows: the parents SageMaker refuses (unknown, another account's, not
ended, another objective, a range of another kind, another image for IdenticalDataAndAlgorithm),
the parents' training jobs seeding the Bayesian search, and OverallBestTrainingJob."""
import pytest

from protocol.context import RequestContext
from protocol.errors import ValidationException
from tests.unit.tuning.helpers import CTX, create, end, step, trainings, tuning_params
from tuning import bayesian, ranges, services, warm_start
from tuning.presenters import describe_tuning_job

OTHER = RequestContext(account_id="222222222222", region="us-east-1", access_key_id="AKIAOTHER")


def warm(*parents: str, kind: str = "IdenticalDataAndAlgorithm") -> dict:
    return {
        "ParentHyperParameterTuningJobs": [{"HyperParameterTuningJobName": name} for name in parents],
        "WarmStartType": kind,
    }


def ended_parent(name: str, accs: list[float], ctx: RequestContext = CTX):
    """A Random search whose training jobs ended with these objectives."""
    job = step(create(name, maximum=len(accs), parallel=len(accs), ctx=ctx))
    for training, acc in zip(trainings(job), accs, strict=True):
        end(training, acc)
    return step(job)


def refusal(**changes) -> str:
    params = tuning_params("child", Strategy="Bayesian")
    params.update(changes.pop("top", {}))
    params["HyperParameterTuningJobConfig"].update(changes)
    with pytest.raises(ValidationException) as refused:
        services.create_tuning_job(CTX, params)
    return refused.value.message


def test_an_unknown_parent_and_another_accounts_parent_are_refused_alike(db):
    ended_parent("theirs", [0.5], ctx=OTHER)
    message = refusal(top={"WarmStartConfig": warm("nobody", "theirs")})
    assert "The parent hyperparameter tuning job nobody does not exist." in message
    assert "The parent hyperparameter tuning job theirs does not exist." in message


def test_a_parent_that_has_not_ended_is_refused(db):
    create("running")
    assert "The parent hyperparameter tuning job running is InProgress: a parent must have ended" in refusal(
        top={"WarmStartConfig": warm("running")}
    )


def test_a_parent_with_another_objective_or_range_kind_or_image_is_refused(db):
    parent = ended_parent("parent", [0.5])
    assert parent.status == "Completed"
    params = tuning_params("child", Strategy="Bayesian")
    config = params["HyperParameterTuningJobConfig"]
    config["HyperParameterTuningJobObjective"]["Type"] = "Minimize"
    config["ParameterRanges"] = {"IntegerParameterRanges": [{"Name": "lr", "MinValue": "1", "MaxValue": "2"}]}
    params["TrainingJobDefinition"]["AlgorithmSpecification"]["TrainingImage"] = "algo:2"
    params["WarmStartConfig"] = warm("parent")
    with pytest.raises(ValidationException) as refused:
        services.create_tuning_job(CTX, params)
    message = refused.value.message
    assert "The objective must be the parent hyperparameter tuning job parent's (Maximize acc)." in message
    assert "keep the kind of range the parent hyperparameter tuning job parent gave them: lr." in message
    assert "keeps the parent hyperparameter tuning job parent's training image (algo:1)." in message
    params["WarmStartConfig"] = warm("parent", kind="TransferLearning")  # another image is fine there
    with pytest.raises(ValidationException) as refused:
        services.create_tuning_job(CTX, params)
    assert "training image" not in refused.value.message


def test_a_grid_search_does_not_start_warm(db):
    ended_parent("parent", [0.5])
    message = refusal(
        Strategy="Grid", ResourceLimits={"MaxParallelTrainingJobs": 1},
        ParameterRanges={"CategoricalParameterRanges": [{"Name": "lr", "Values": ["0.1"]}]},
        top={"WarmStartConfig": warm("parent")},
    )
    assert "Warm start of a Grid search is not supported by Sageport" in message


def test_the_parents_training_jobs_seed_the_bayesian_search_and_the_overall_best(db, monkeypatch):
    ended_parent("parent", [0.5, 0.95])
    told = []
    chosen = bayesian.suggest

    def suggest(parsed, seed, number, maximize, finished, running):
        told.append(list(finished))
        return chosen(parsed, seed, number, maximize, finished, running)

    monkeypatch.setattr(bayesian, "suggest", suggest)
    params = tuning_params("child", maximum=1, parallel=1, Strategy="Bayesian")
    params["WarmStartConfig"] = warm("parent")
    child = step(services.create_tuning_job(CTX, params))

    assert sorted(acc for _, acc in told[-1]) == [0.5, 0.95]
    assert all(set(point) == {"lr"} for point, _ in told[-1])
    end(trainings(child)[0], 0.7)
    child = step(child)
    answer = describe_tuning_job(child)
    assert answer["HyperParameterTuningJobStatus"] == "Completed"
    assert answer["BestTrainingJob"]["TuningJobName"] == "child"
    overall = answer["OverallBestTrainingJob"]
    assert overall["TuningJobName"] == "parent"
    assert overall["FinalHyperParameterTuningJobObjectiveMetric"]["Value"] == 0.95
    assert answer["TrainingJobStatusCounters"]["Completed"] == 1  # its own training jobs only


def test_a_parents_point_outside_the_new_ranges_seeds_nothing_and_transfer_learning_has_no_overall_best(db):
    ended_parent("parent", [0.5])
    params = tuning_params(
        "child", Strategy="Bayesian",
        ParameterRanges={"ContinuousParameterRanges": [{"Name": "lr", "MinValue": "2", "MaxValue": "3"}]},
    )
    params["WarmStartConfig"] = warm("parent", kind="TransferLearning")
    child = services.create_tuning_job(CTX, params)
    parsed, _ = ranges.parse(params["HyperParameterTuningJobConfig"]["ParameterRanges"])
    assert warm_start.seeds(child, parsed) == []
    assert describe_tuning_job(child)["OverallBestTrainingJob"] is None  # TransferLearning has none
