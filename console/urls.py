from django.urls import path
from django.views.generic import RedirectView

from console import (
    views_auth,
    views_capacity,
    views_hosting,
    views_processing,
    views_training,
    views_transform,
    views_tuning,
)

app_name = "console"

urlpatterns = [
    path("", RedirectView.as_view(pattern_name="console:training-jobs"), name="home"),
    path("login", views_auth.login, name="login"),
    path("logout", views_auth.logout, name="logout"),
    path("training-jobs/", views_training.job_list, name="training-jobs"),
    path("training-jobs/rows", views_training.job_rows, name="training-job-rows"),
    path("training-jobs/<int:pk>/", views_training.job_detail, name="training-job"),
    path("training-jobs/<int:pk>/live", views_training.job_live, name="training-job-live"),
    path("training-jobs/<int:pk>/logs", views_training.job_logs, name="training-job-logs"),
    path("training-jobs/<int:pk>/metrics", views_training.job_metrics, name="training-job-metrics"),
    path("training-jobs/<int:pk>/stop", views_training.job_stop, name="training-job-stop"),
    path("training-jobs/<int:pk>/clone", views_training.job_clone, name="training-job-clone"),
    path("processing-jobs/", views_processing.job_list, name="processing-jobs"),
    path("processing-jobs/<int:pk>/", views_processing.job_detail, name="processing-job"),
    path("processing-jobs/<int:pk>/live", views_processing.job_live, name="processing-job-live"),
    path("processing-jobs/<int:pk>/logs", views_processing.job_logs, name="processing-job-logs"),
    path("processing-jobs/<int:pk>/stop", views_processing.job_stop, name="processing-job-stop"),
    path("transform-jobs/", views_transform.job_list, name="transform-jobs"),
    path("transform-jobs/<int:pk>/", views_transform.job_detail, name="transform-job"),
    path("transform-jobs/<int:pk>/stop", views_transform.job_stop, name="transform-job-stop"),
    path("tuning-jobs/", views_tuning.job_list, name="tuning-jobs"),
    path("tuning-jobs/<int:pk>/", views_tuning.job_detail, name="tuning-job"),
    path("tuning-jobs/<int:pk>/stop", views_tuning.job_stop, name="tuning-job-stop"),
    path("endpoints/", views_hosting.endpoint_list, name="endpoints"),
    path("endpoints/<int:pk>/", views_hosting.endpoint_detail, name="endpoint"),
    path("endpoints/<int:pk>/live", views_hosting.endpoint_live, name="endpoint-live"),
    path("endpoints/<int:pk>/logs", views_hosting.endpoint_logs, name="endpoint-logs"),
    path("endpoints/<int:pk>/metrics", views_hosting.endpoint_metrics, name="endpoint-metrics"),
    path("endpoints/<int:pk>/weights", views_hosting.endpoint_weights, name="endpoint-weights"),
    path("endpoints/<int:pk>/update", views_hosting.endpoint_update, name="endpoint-update"),
    path("endpoints/<int:pk>/delete", views_hosting.endpoint_delete, name="endpoint-delete"),
    path("endpoint-configs/", views_hosting.config_list, name="endpoint-configs"),
    path("endpoint-configs/<int:pk>/", views_hosting.config_detail, name="endpoint-config"),
    path("models/", views_hosting.model_list, name="models"),
    path("models/<int:pk>/", views_hosting.model_detail, name="model"),
    path("capacity/", views_capacity.capacity, name="capacity"),
]
