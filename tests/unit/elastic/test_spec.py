"""HyperPodPyTorchJob validation names the field of every problem; valid manifests parse into the
JobSpec the operator reads, with the CRD's defaults."""

import pytest

from elastic import spec
from elastic.quantities import parse_quantity
from tests.unit.elastic.manifests import container, job_manifest, pod


def fields(manifest) -> list[str]:
    return [error.field for error in spec.validate(manifest)]


def test_a_valid_manifest_has_no_errors_and_parses():
    manifest = job_manifest()

    assert spec.validate(manifest) == []
    job = spec.parse(manifest)
    [group] = job.groups
    assert (group.name, group.replicas, group.max_replicas, group.gpus) == ("pods", 1, 4, 1)
    assert group.command == ("hyperpodrun", "--nnodes=1", "train.py") and group.args is None
    assert group.env == (("EPOCHS", "3"),)
    assert (group.cpus, group.memory_bytes) == (2.0, 4 * 2**30)
    assert job.queue_name == "q-a" and job.priority_class == ""
    assert job.elastic.increment_step == 1 and job.elastic.discrete_values is None


def test_defaults_are_filled_in_the_stored_spec_and_the_parsed_one():
    manifest = job_manifest(elasticPolicy={"maxReplicas": 4})
    del manifest["spec"]["nprocPerNode"]
    del manifest["spec"]["replicaSpecs"][0]["maxReplicas"]
    manifest["spec"]["replicaSpecs"][0]["maxReplicas"] = 4

    stored = spec.defaulted_spec(manifest)
    job = spec.parse({"metadata": manifest["metadata"], "spec": stored})

    assert stored["nprocPerNode"] == "auto"
    assert stored["runPolicy"] == {"cleanPodPolicy": "All", "jobMaxRetryCount": 0}
    assert stored["elasticPolicy"] == {
        "minReplicas": 1, "maxReplicas": 4, "gracefulShutdownTimeoutInSeconds": 600,
        "scalingTimeoutInSeconds": 60, "faultyScaleDownTimeoutInSeconds": 30,
    }
    assert stored["replicaSpecs"][0]["spares"] == 0
    assert job.elastic.graceful_shutdown_timeout == 600 and job.clean_pod_policy == "All"
    assert job.ttl_seconds_after_finished is None and job.job_max_retry_count == 0


def test_a_groups_max_replicas_defaults_to_its_replicas_and_the_elastic_max_to_their_sum():
    manifest = job_manifest(elasticPolicy={})
    del manifest["spec"]["replicaSpecs"][0]["maxReplicas"]
    manifest["spec"]["replicaSpecs"][0]["replicas"] = 3

    job = spec.parse(manifest)

    assert job.groups[0].max_replicas == 3
    assert (job.elastic.min_replicas, job.elastic.max_replicas) == (1, 3)


def test_unknown_fields_of_the_crds_objects_are_pruned_and_named():
    manifest = job_manifest()
    manifest["spec"]["colour"] = "blue"
    manifest["spec"]["replicaSpecs"][0]["shape"] = "round"
    manifest["spec"]["elasticPolicy"]["speed"] = 3
    manifest["spec"]["runPolicy"] = {"restartPolicy": {"evalPeriodSeconds": 60, "mood": "calm"}}

    stored = spec.defaulted_spec(manifest)

    assert "colour" not in stored and "shape" not in stored["replicaSpecs"][0]
    assert "speed" not in stored["elasticPolicy"]
    assert stored["runPolicy"]["restartPolicy"] == {"evalPeriodSeconds": 60}
    assert spec.unknown_fields(manifest) == [
        "spec.colour", "spec.replicaSpecs[0].shape", "spec.elasticPolicy.speed",
        "spec.runPolicy.restartPolicy.mood",
    ]


def test_a_job_without_elastic_policy_runs_the_sum_of_its_groups():
    manifest = job_manifest()
    del manifest["spec"]["elasticPolicy"]
    manifest["spec"]["replicaSpecs"].append({**manifest["spec"]["replicaSpecs"][0], "name": "more"})

    job = spec.parse(manifest)

    assert job.elastic is None and (job.min_world, job.max_world) == (2, 2)


@pytest.mark.parametrize(("change", "field"), [
    (lambda m: m.update(apiVersion="v1"), "apiVersion"),
    (lambda m: m.update(kind="PyTorchJob"), "kind"),
    (lambda m: m["metadata"].pop("name"), "metadata.name"),
    (lambda m: m["metadata"].update(name="Not_A_Label"), "metadata.name"),
    (lambda m: m["metadata"].update(name="x" * 64), "metadata.name"),
    (lambda m: m["metadata"].update(labels={"team": "not valid!"}), "metadata.labels[team]"),
    (lambda m: m["metadata"].update(annotations={"a": 1}), "metadata.annotations"),
    (lambda m: m.pop("spec"), "spec"),
    (lambda m: m["spec"].update(replicaSpecs=[]), "spec.replicaSpecs"),
    (lambda m: m["spec"].update(nprocPerNode="many"), "spec.nprocPerNode"),
    (lambda m: m["spec"]["replicaSpecs"][0].update(name="Pods"), "spec.replicaSpecs[0].name"),
    (lambda m: m["spec"]["replicaSpecs"][0].update(replicas=-1), "spec.replicaSpecs[0].replicas"),
    (lambda m: m["spec"]["replicaSpecs"][0].update(replicas="2"), "spec.replicaSpecs[0].replicas"),
    (lambda m: m["spec"]["replicaSpecs"][0].update(maxReplicas=0), "spec.replicaSpecs[0].maxReplicas"),
    (lambda m: m["spec"]["replicaSpecs"][0].pop("template"), "spec.replicaSpecs[0].template"),
    (lambda m: pod(m).update(containers=[]), "spec.replicaSpecs[0].template.spec.containers"),
    (lambda m: pod(m)["containers"].append(dict(container(m), name="second")),
     "spec.replicaSpecs[0].template.spec.containers"),
    (lambda m: container(m).pop("image"), "spec.replicaSpecs[0].template.spec.containers[0].image"),
    (lambda m: container(m).update(command="python train.py"),
     "spec.replicaSpecs[0].template.spec.containers[0].command"),
    (lambda m: container(m).update(workingDir="work"),
     "spec.replicaSpecs[0].template.spec.containers[0].workingDir"),
    (lambda m: pod(m).update(initContainers=[{"name": "i", "image": "x"}]),
     "spec.replicaSpecs[0].template.spec.initContainers"),
    (lambda m: pod(m).update(hostNetwork=True), "spec.replicaSpecs[0].template.spec.hostNetwork"),
    (lambda m: container(m).update(securityContext={"privileged": True}),
     "spec.replicaSpecs[0].template.spec.containers[0].securityContext"),
    (lambda m: m["spec"].update(runPolicy={"cleanPodPolicy": "Sometimes"}), "spec.runPolicy.cleanPodPolicy"),
    # AWS's operator guide lists OnlyComplete ("Accepted values are All, OnlyComplete, and None")
    # without saying which pods it keeps: refused, naming the field.
    (lambda m: m["spec"].update(runPolicy={"cleanPodPolicy": "OnlyComplete"}),
     "spec.runPolicy.cleanPodPolicy"),
    (lambda m: m["spec"].update(runPolicy={"jobMaxRetryCount": -1}), "spec.runPolicy.jobMaxRetryCount"),
    (lambda m: m["spec"].update(runPolicy={"ttlSecondsAfterFinished": -2}),
     "spec.runPolicy.ttlSecondsAfterFinished"),
    (lambda m: m["spec"].update(runPolicy={"restartPolicy": {"maxFullJobRestarts": 1}}),
     "spec.runPolicy.restartPolicy.evalPeriodSeconds"),
    (lambda m: m["spec"].update(runPolicy={"logMonitoringConfiguration": [{"name": "hang"}]}),
     "spec.runPolicy.logMonitoringConfiguration[0].logPattern"),
    (lambda m: m["spec"].update(runPolicy={"suspend": "yes"}),
     "spec.runPolicy.suspend"),
    (lambda m: m["spec"].update(runPolicy={"activeDeadlineSeconds": 0}),
     "spec.runPolicy.activeDeadlineSeconds"),
    (lambda m: m["spec"].update(runPolicy={"startupDeadlineSeconds": 0}),
     "spec.runPolicy.startupDeadlineSeconds"),
    # Fields of HyperPod's RunPolicy the operator does not act on are refused, not ignored.
    (lambda m: m["spec"].update(runPolicy={"faultDeadlineSeconds": 600}),
     "spec.runPolicy.faultDeadlineSeconds"),
    (lambda m: m["spec"].update(runPolicy={"workloadMode": "Deployment"}),
     "spec.runPolicy.workloadMode"),
])
def test_each_rule_names_its_field(change, field):
    manifest = job_manifest()
    change(manifest)

    assert field in fields(manifest)


@pytest.mark.parametrize(("policy", "field"), [
    ({"minReplicas": 0, "maxReplicas": 4}, "spec.elasticPolicy.minReplicas"),
    ({"minReplicas": 3, "maxReplicas": 2}, "spec.elasticPolicy.minReplicas"),
    ({"minReplicas": 1, "maxReplicas": 5}, "spec.elasticPolicy.maxReplicas"),  # the group holds 4
    ({"maxReplicas": 4, "replicaIncrementStep": 0}, "spec.elasticPolicy.replicaIncrementStep"),
    ({"maxReplicas": 4, "replicaDiscreteValues": []}, "spec.elasticPolicy.replicaDiscreteValues"),
    ({"maxReplicas": 4, "replicaDiscreteValues": [0, 2]}, "spec.elasticPolicy.replicaDiscreteValues"),
    ({"maxReplicas": 4, "replicaDiscreteValues": [2, 8]}, "spec.elasticPolicy.replicaDiscreteValues"),
    ({"minReplicas": 2, "maxReplicas": 4, "replicaDiscreteValues": [1, 4]},
     "spec.elasticPolicy.replicaDiscreteValues"),
    ({"maxReplicas": 4, "scalingTimeoutInSeconds": -1}, "spec.elasticPolicy.scalingTimeoutInSeconds"),
    ({"maxReplicas": 4, "gracefulShutdownTimeoutInSeconds": "600"},
     "spec.elasticPolicy.gracefulShutdownTimeoutInSeconds"),
])
def test_each_elastic_rule_names_its_field(policy, field):
    assert field in fields(job_manifest(elasticPolicy=policy))


def test_increment_step_and_discrete_values_together_are_refused_on_the_discrete_values():
    errors = spec.validate(job_manifest(
        elasticPolicy={"maxReplicas": 4, "replicaIncrementStep": 1, "replicaDiscreteValues": [2, 4]}
    ))

    assert [(e.field, "mutually exclusive" in e.message) for e in errors] == [
        ("spec.elasticPolicy.replicaDiscreteValues", True)
    ]


def test_discrete_values_in_any_order_parse_sorted_without_repeats():
    job = spec.parse(job_manifest(elasticPolicy={"maxReplicas": 4, "replicaDiscreteValues": [4, 1, 2, 4]}))

    assert job.elastic.discrete_values == (1, 2, 4)


def test_initial_replicas_beyond_the_elastic_maximum_are_refused():
    manifest = job_manifest(elasticPolicy={"minReplicas": 1, "maxReplicas": 2})
    manifest["spec"]["replicaSpecs"][0]["replicas"] = 3

    assert "spec.replicaSpecs" in fields(manifest)


def test_a_non_elastic_job_of_zero_replicas_is_refused():
    manifest = job_manifest()
    del manifest["spec"]["elasticPolicy"]
    manifest["spec"]["replicaSpecs"][0]["replicas"] = 0

    assert fields(manifest) == ["spec.replicaSpecs"]


def test_group_names_are_unique():
    manifest = job_manifest()
    manifest["spec"]["replicaSpecs"].append(dict(manifest["spec"]["replicaSpecs"][0]))

    assert "spec.replicaSpecs[1].name" in fields(manifest)


def test_host_path_volumes_are_refused_with_the_reason():
    manifest = job_manifest()
    pod(manifest)["volumes"] = [{"name": "host", "hostPath": {"path": "/etc"}}]
    container(manifest)["volumeMounts"] = [{"name": "host", "mountPath": "/host"}]

    [error, *_] = spec.validate(manifest)

    assert error.field == "spec.replicaSpecs[0].template.spec.volumes[0].hostPath"
    assert "host's files" in error.message


@pytest.mark.parametrize(("volume", "mount", "field"), [
    ({"name": "v", "nfs": {"server": "s", "path": "/"}}, {"name": "v", "mountPath": "/v"}, "volumes[0]"),
    ({"name": "v", "emptyDir": {}}, {"name": "other", "mountPath": "/v"},
     "containers[0].volumeMounts[0].name"),
    ({"name": "v", "emptyDir": {}}, {"name": "v", "mountPath": "v"},
     "containers[0].volumeMounts[0].mountPath"),
    ({"name": "v", "emptyDir": {}}, {"name": "v", "mountPath": "/a/../b"},
     "containers[0].volumeMounts[0].mountPath"),
    ({"name": "v", "emptyDir": {}}, {"name": "v", "mountPath": "/v", "subPath": "x"},
     "containers[0].volumeMounts[0].subPath"),
    ({"name": "v", "persistentVolumeClaim": {}}, {"name": "v", "mountPath": "/v"},
     "volumes[0].persistentVolumeClaim.claimName"),
])
def test_volume_rules_name_their_field(volume, mount, field):
    manifest = job_manifest()
    pod(manifest)["volumes"] = [volume]
    container(manifest)["volumeMounts"] = [mount]

    assert f"spec.replicaSpecs[0].template.spec.{field}" in fields(manifest)


def test_claims_and_empty_dirs_become_volume_mounts():
    manifest = job_manifest()
    pod(manifest)["volumes"] = [
        {"name": "data", "persistentVolumeClaim": {"claimName": "fsx-claim", "readOnly": True}},
        {"name": "scratch", "emptyDir": {}},
        {"name": "ckpt", "persistentVolumeClaim": {"claimName": "ckpt-claim"}},
    ]
    container(manifest)["volumeMounts"] = [
        {"name": "data", "mountPath": "/data"},
        {"name": "scratch", "mountPath": "/scratch"},
        {"name": "ckpt", "mountPath": "/ckpt", "readOnly": True},
    ]

    mounts = spec.parse(manifest).groups[0].volume_mounts

    assert mounts == (
        spec.VolumeMount("persistentVolumeClaim", "fsx-claim", "/data", True),
        spec.VolumeMount("emptyDir", "scratch", "/scratch", False),
        spec.VolumeMount("persistentVolumeClaim", "ckpt-claim", "/ckpt", True),
    )


@pytest.mark.parametrize(("entry", "field"), [
    ({"name": "SECRET", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}, "env[0].valueFrom"),
    ({"name": "A=B", "value": "x"}, "env[0].name"),
    ({"value": "x"}, "env[0].name"),
])
def test_env_rules_name_their_field(entry, field):
    manifest = job_manifest()
    container(manifest)["env"] = [entry]

    assert fields(manifest) == [f"spec.replicaSpecs[0].template.spec.containers[0].{field}"]


@pytest.mark.parametrize(("resources", "field"), [
    ({"limits": {"nvidia.com/gpu": "1.5"}}, "limits[nvidia.com/gpu]"),
    ({"limits": {"nvidia.com/gpu": 2}, "requests": {"nvidia.com/gpu": 1}}, "requests[nvidia.com/gpu]"),
    ({"limits": {"cpu": "two"}}, "limits[cpu]"),
    ({"limits": {"memory": "-1Gi"}}, "limits[memory]"),
    ({"limits": {"cpu": "1"}, "requests": {"cpu": "2"}}, "requests[cpu]"),
])
def test_resource_rules_name_their_field(resources, field):
    manifest = job_manifest()
    container(manifest)["resources"] = resources

    assert fields(manifest) == [f"spec.replicaSpecs[0].template.spec.containers[0].resources.{field}"]


def test_resources_are_read_the_kubernetes_way():
    manifest = job_manifest()
    container(manifest)["resources"] = {"requests": {"nvidia.com/gpu": "2", "cpu": "500m", "memory": "1G"}}
    pod(manifest)["priorityClassName"] = "high-priority"

    group = spec.parse(manifest).groups[0]

    assert (group.gpus, group.cpus, group.memory_bytes) == (2, 0.5, 10**9)
    assert group.priority_class == "high-priority"


def test_a_container_without_resources_asks_for_no_gpu():
    manifest = job_manifest()
    del container(manifest)["resources"]

    group = spec.parse(manifest).groups[0]

    assert (group.gpus, group.cpus, group.memory_bytes) == (0, None, None)


@pytest.mark.parametrize(("text", "value"), [
    ("2", 2), ("500m", 0.5), ("4Gi", 4 * 2**30), ("512Mi", 512 * 2**20), ("1G", 10**9), ("1e3", 1000),
    ("1.5k", 1500), (3, 3), (0.25, 0.25), ("100n", 1e-7),
])
def test_quantities_parse_like_kubernetes(text, value):
    assert float(parse_quantity(text)) == pytest.approx(value)


@pytest.mark.parametrize("text", ["", "Gi", "1 Gi", "1GB", "one", "1..2", True, None, "inf"])
def test_bad_quantities_are_refused(text):
    with pytest.raises(ValueError):
        parse_quantity(text)


def test_ttl_of_zero_or_minus_one_keeps_the_job():
    for ttl, kept in ((0, None), (-1, None), (300, 300)):
        job = spec.parse(job_manifest(runPolicy={"ttlSecondsAfterFinished": ttl}))
        assert job.ttl_seconds_after_finished == kept


def test_parse_refuses_an_invalid_manifest():
    with pytest.raises(spec.InvalidManifest) as refused:
        spec.parse(job_manifest(elasticPolicy={"minReplicas": 0}))

    assert refused.value.errors[0].field == "spec.elasticPolicy.minReplicas"


def _set(manifest: dict, path: tuple, value) -> dict:
    target = manifest
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return manifest


@pytest.mark.parametrize(("path", "value", "field"), [
    (("metadata",), 1, "metadata"),
    (("metadata",), ["x"], "metadata"),
    (("spec", "replicaSpecs", 0, "name"), ["pods"], "spec.replicaSpecs[0].name"),
    (("spec", "replicaSpecs", 0, "template", "spec", "containers"), 1,
     "spec.replicaSpecs[0].template.spec.containers"),
    (("spec", "replicaSpecs", 0, "template", "spec", "containers", 0, "volumeMounts"),
     [{"name": {}, "mountPath": "/v"}],
     "spec.replicaSpecs[0].template.spec.containers[0].volumeMounts[0].name"),
])
def test_malformed_shapes_are_errors_not_crashes(path, value, field):
    assert field in fields(_set(job_manifest(), path, value))


def test_a_generate_name_that_is_not_a_string_is_an_error():
    manifest = job_manifest()
    manifest["metadata"] = {"generateName": 7}

    assert fields(manifest) == ["metadata.generateName"]


def test_the_run_policy_fields_the_operator_acts_on_are_parsed():
    job = spec.parse(job_manifest(runPolicy={
        "suspend": True, "activeDeadlineSeconds": 3600, "startupDeadlineSeconds": 300,
    }))
    assert (job.suspend, job.active_deadline_seconds, job.startup_deadline_seconds) == (True, 3600, 300)
    assert spec.parse(job_manifest()).suspend is False
