from django.urls import path, re_path
from django.views.generic import RedirectView

from console import (
    views_auth,
    views_capacity,
    views_components,
    views_create,
    views_hosting,
    views_hyperpod,
    views_pipelines,
    views_processing,
    views_registry,
    views_s3,
    views_training,
    views_transform,
    views_tuning,
)
from console.addresses import moved, named_paths
from elastic.models import HyperPodJob
from pipelines.models import PipelineExecution

app_name = "console"

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="console:training-jobs"), name="home"),
    path("login", views_auth.login, name="login"),
    path("logout", views_auth.logout, name="logout"),
    path("training-jobs/", views_training.job_list, name="training-jobs"),
    path("training-jobs/create", views_create.training_job_create, name="training-job-create"),
    path("training-jobs/rows", views_training.job_rows, name="training-job-rows"),
    *named_paths("training-jobs/<sm-name:name>/", [
        ("", views_training.job_detail, "training-job"),
        ("live", views_training.job_live, "training-job-live"),
        ("logs", views_training.job_logs, "training-job-logs"),
        ("metrics", views_training.job_metrics, "training-job-metrics"),
        ("stop", views_training.job_stop, "training-job-stop"),
        ("clone", views_training.job_clone, "training-job-clone"),
    ]),
    path("processing-jobs/", views_processing.job_list, name="processing-jobs"),
    *named_paths("processing-jobs/<sm-name:name>/", [
        ("", views_processing.job_detail, "processing-job"),
        ("live", views_processing.job_live, "processing-job-live"),
        ("logs", views_processing.job_logs, "processing-job-logs"),
        ("stop", views_processing.job_stop, "processing-job-stop"),
    ]),
    path("transform-jobs/", views_transform.job_list, name="transform-jobs"),
    *named_paths("transform-jobs/<sm-name:name>/", [
        ("", views_transform.job_detail, "transform-job"),
        ("stop", views_transform.job_stop, "transform-job-stop"),
    ]),
    path("tuning-jobs/", views_tuning.job_list, name="tuning-jobs"),
    *named_paths("tuning-jobs/<sm-name:name>/", [
        ("", views_tuning.job_detail, "tuning-job"),
        ("stop", views_tuning.job_stop, "tuning-job-stop"),
    ]),
    path("pipelines/", views_pipelines.pipeline_list, name="pipelines"),
    *named_paths("pipelines/<sm-name:name>/", [
        ("", views_pipelines.pipeline_detail, "pipeline"),
        ("delete", views_pipelines.pipeline_delete, "pipeline-delete"),
    ]),
    # An execution as its ARN names it: pipeline/<name>/execution/<id>.
    *named_paths("pipelines/<sm-name:name>/executions/<sm-name:execution>/", [
        ("", views_pipelines.execution_detail, "pipeline-execution"),
        ("stop", views_pipelines.execution_stop, "pipeline-execution-stop"),
    ]),
    path("pipeline-executions/<old-id:pk>/", moved(PipelineExecution, "console:pipeline-execution")),
    path("endpoints/", views_hosting.endpoint_list, name="endpoints"),
    path("endpoints/create", views_create.endpoint_create, name="endpoint-create"),
    path("endpoints/rows", views_hosting.endpoint_rows, name="endpoint-rows"),
    *named_paths("endpoints/<sm-name:name>/", [
        ("", views_hosting.endpoint_detail, "endpoint"),
        ("live", views_hosting.endpoint_live, "endpoint-live"),
        ("logs", views_hosting.endpoint_logs, "endpoint-logs"),
        ("metrics", views_hosting.endpoint_metrics, "endpoint-metrics"),
        ("weights", views_hosting.endpoint_weights, "endpoint-weights"),
        ("update", views_hosting.endpoint_update, "endpoint-update"),
        ("delete", views_hosting.endpoint_delete, "endpoint-delete"),
    ]),
    path("inference-components/", views_components.component_list, name="inference-components"),
    *named_paths("inference-components/<sm-name:name>/", [
        ("", views_components.component_detail, "inference-component"),
        ("delete", views_components.component_delete, "inference-component-delete"),
    ]),
    path("endpoint-configs/", views_hosting.config_list, name="endpoint-configs"),
    path("endpoint-configs/create", views_create.config_create, name="endpoint-config-create"),
    *named_paths("endpoint-configs/<sm-name:name>/", [
        ("", views_hosting.config_detail, "endpoint-config"),
        ("delete", views_hosting.config_delete, "endpoint-config-delete"),
    ]),
    path("hyperpod/", views_hyperpod.cluster_list, name="hyperpod"),
    *named_paths("hyperpod/clusters/<sm-name:name>/", [
        ("", views_hyperpod.cluster_detail, "cluster"),
        ("delete", views_hyperpod.cluster_delete, "cluster-delete"),
    ]),
    # A Kubernetes object's identity: namespace and name.
    *named_paths("hyperpod/jobs/<sm-name:namespace>/<sm-name:name>/", [
        ("", views_hyperpod.job_detail, "hyperpod-job"),
    ]),
    path("hyperpod/jobs/<old-id:pk>/", moved(HyperPodJob, "console:hyperpod-job")),
    path("models/", views_hosting.model_list, name="models"),
    path("models/create", views_create.model_create, name="model-create"),
    *named_paths("models/<sm-name:name>/", [
        ("", views_hosting.model_detail, "model"),
        ("delete", views_hosting.model_delete, "model-delete"),
    ]),
    path("model-package-groups/", views_registry.group_list, name="model-package-groups"),
    *named_paths("model-package-groups/<sm-name:name>/", [
        ("", views_registry.group_detail, "model-package-group"),
        ("delete", views_registry.group_delete, "model-package-group-delete"),
    ]),
    path("model-packages/", views_registry.package_list, name="model-packages"),
    # As the ARN names a package: model-package/<group>/<version>, or model-package/<name> unversioned.
    *named_paths("model-packages/<sm-name:name>/<version:version>/", [
        ("", views_registry.package_detail, "model-package"),
        ("approval", views_registry.package_approval, "model-package-approval"),
        ("delete", views_registry.package_delete, "model-package-delete"),
    ]),
    *named_paths("model-packages/<sm-name:name>/", [
        ("", views_registry.package_detail, "model-package"),
        ("approval", views_registry.package_approval, "model-package-approval"),
        ("delete", views_registry.package_delete, "model-package-delete"),
    ]),
    path("capacity/", views_capacity.capacity, name="capacity"),
    path("s3/<str:bucket>/", views_s3.bucket_root, name="s3-bucket"),
    path("s3/<str:bucket>/<path:key>", views_s3.browse, name="s3"),
    re_path(r"^.*$", views_auth.not_found),  # the console's own 404 page, not Django's bare one
]
