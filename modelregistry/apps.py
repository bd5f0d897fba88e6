from django.apps import AppConfig


class ModelRegistryConfig(AppConfig):
    name = "modelregistry"
    label = "modelregistry"
    verbose_name = "Model registry"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Registers the registry's handlers with the protocol registry, its taggable resources and
        # what Search finds.
        from accounts.tagging import register_taggable
        from modelregistry import operations, services  # noqa: F401
        from modelregistry.models import ModelPackage, ModelPackageGroup
        from protocol.search import register_searchable

        register_taggable("model-package-group", ModelPackageGroup, "model_package_group_arn")
        register_taggable("model-package", ModelPackage, "model_package_arn")
        register_searchable("ModelPackage", services.search_packages)
        register_searchable("ModelPackageGroup", services.search_groups)
