from django.contrib import admin

from accounts.models import AccessKey


@admin.register(AccessKey)
class AccessKeyAdmin(admin.ModelAdmin):
    list_display = ("access_key_id", "account_id", "is_default", "active", "created_at")
    list_filter = ("active", "is_default")
    search_fields = ("access_key_id", "account_id")
    readonly_fields = ("access_key_id", "secret_access_key", "created_at")
