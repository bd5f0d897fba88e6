from django.apps import AppConfig


class AccountsConfig(AppConfig):
    # The label stays "controlplane": the AccessKey table and its migration history name it.
    name = "accounts"
    label = "controlplane"
    verbose_name = "Sageport accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The sweeper mints containers' next keys ahead and deletes those past their expiry.
        from accounts import container_credentials, s3_tenancy
        from protocol import registry
        from reconcile import sweeper

        sweeper.register(container_credentials.sweep)
        # Every request's S3 locations and roles are the caller's account's, whatever the operation.
        registry.add_request_check(s3_tenancy.refuse_foreign_locations)
