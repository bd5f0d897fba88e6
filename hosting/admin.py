from django.contrib import admin

from hosting.models import Endpoint, EndpointConfig, EndpointDeployment, SageMakerModel, ServingContainer


@admin.register(SageMakerModel)
class SageMakerModelAdmin(admin.ModelAdmin):
    list_display = ["model_name", "account_id", "region", "creation_time"]
    search_fields = ["model_name"]


@admin.register(EndpointConfig)
class EndpointConfigAdmin(admin.ModelAdmin):
    list_display = ["endpoint_config_name", "account_id", "region", "creation_time"]
    search_fields = ["endpoint_config_name"]


class DeploymentInline(admin.TabularInline):
    model = EndpointDeployment
    extra = 0
    fields = ["endpoint_config_name", "phase", "traffic_percent", "failure_reason", "created_at"]
    readonly_fields = fields


@admin.register(Endpoint)
class EndpointAdmin(admin.ModelAdmin):
    list_display = [
        "endpoint_name",
        "account_id",
        "endpoint_status",
        "endpoint_config_name",
        "last_modified_time",
    ]
    list_filter = ["endpoint_status", "account_id"]
    search_fields = ["endpoint_name"]
    inlines = [DeploymentInline]


@admin.register(ServingContainer)
class ServingContainerAdmin(admin.ModelAdmin):
    list_display = ["name", "variant_name", "node", "status", "host_port", "healthy_at", "last_problem"]
    list_filter = ["status"]
    search_fields = ["name"]
