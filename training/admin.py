from django.contrib import admin

from training.models import SecondaryStatusTransition, TrainingJob


class TransitionInline(admin.TabularInline):
    model = SecondaryStatusTransition
    extra = 0
    readonly_fields = ["status", "start_time", "end_time", "status_message"]


@admin.register(TrainingJob)
class TrainingJobAdmin(admin.ModelAdmin):
    list_display = [
        "training_job_name",
        "account_id",
        "training_job_status",
        "secondary_status",
        "creation_time",
    ]
    list_filter = ["training_job_status", "account_id"]
    search_fields = ["training_job_name"]
    inlines = [TransitionInline]
