from django.apps import AppConfig


class ModelRegistryConfig(AppConfig):
    name = "modelregistry"
    label = "modelregistry"
    verbose_name = "Model registry"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Registers the registry's handlers with the protocol registry and its taggable resources.
        from accounts.tagging import register_taggable
        from modelregistry import operations  # noqa: F401
        from modelregistry.models import ModelPackage, ModelPackageGroup

        register_taggable("model-package-group", ModelPackageGroup, "model_package_group_arn")
        register_taggable("model-package", ModelPackage, "model_package_arn")
