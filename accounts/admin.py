from django.contrib import admin

from accounts.models import AccessKey, ContainerGrant


@admin.register(AccessKey)
class AccessKeyAdmin(admin.ModelAdmin):
    list_display = (
        "access_key_id",
        "account_id",
        "is_default",
        "active",
        "created_at",
        "expires_at",
        "issued_for",
    )
    list_filter = ("active", "is_default")
    search_fields = ("access_key_id", "account_id", "issued_for")
    readonly_fields = ("access_key_id", "secret_access_key", "created_at", "expires_at", "issued_for")


@admin.register(ContainerGrant)
class ContainerGrantAdmin(admin.ModelAdmin):
    """Read-only: grants come and go with their training jobs and endpoints."""

    list_display = ("holder", "account_id", "role_arn", "created_at")
    search_fields = ("holder", "account_id")
    exclude = ("token",)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
