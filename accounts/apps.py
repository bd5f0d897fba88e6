from django.apps import AppConfig


class AccountsConfig(AppConfig):
    # The label stays "controlplane": the AccessKey table and its migration history name it.
    name = "accounts"
    label = "controlplane"
    verbose_name = "Sageport accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from accounts import s3_identities
        from reconcile import sweeper

        # Keys created, changed or deleted anywhere (the admin, createaccesskey, other features'
        # keys) reach the S3 store on commit; the sweeper catches bulk updates and failed syncs.
        s3_identities.connect_signals()
        sweeper.register(s3_identities.sync_or_log)
