"""The model registry as the database records it: groups of versioned model packages, and
unversioned packages. Nothing runs here: a package is what CreateModel reads to deploy it."""

from django.db import models


class ModelApprovalStatus(models.TextChoices):
    """`ModelApprovalStatus`: the values of the API (and of ListModelPackages' filter)."""

    APPROVED = "Approved"
    REJECTED = "Rejected"
    PENDING_MANUAL_APPROVAL = "PendingManualApproval"


class ModelPackageGroup(models.Model):
    account_id = models.CharField(max_length=12)
    region = models.CharField(max_length=32)
    model_package_group_name = models.CharField(max_length=63)
    # Lower-cased name inside, as SageMaker does; unique, so names are unique case-insensitively.
    model_package_group_arn = models.CharField(max_length=256, unique=True)
    description = models.CharField(max_length=1024, blank=True, default="")
    # CreateModelPackageGroup's ManagedConfiguration, stored and shown (nothing manages storage).
    managed_configuration = models.JSONField(null=True)
    tags = models.JSONField(default=list)
    created_by = models.JSONField(default=dict)
    creation_time = models.DateTimeField()
    # The version the group's last package got: versions are never given twice, even after a
    # package is deleted (the registry's version numbers name a model for good).
    latest_version = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [models.Index(fields=["account_id", "region", "creation_time"])]

    def __str__(self):
        return self.model_package_group_name


class ModelPackage(models.Model):
    account_id = models.CharField(max_length=12)
    region = models.CharField(max_length=32)
    # A versioned package's name is its group's (what DescribeModelPackage answers).
    model_package_name = models.CharField(max_length=63)
    # `model-package/<name>` or `model-package/<group>/<version>`, lower-cased.
    model_package_arn = models.CharField(max_length=256, unique=True)
    # None for an unversioned package. PROTECT: a group with packages is never deleted.
    group = models.ForeignKey(
        ModelPackageGroup, null=True, on_delete=models.PROTECT, related_name="packages"
    )
    model_package_version = models.PositiveIntegerField(null=True)
    # The CreateModelPackage request as received, less what has a column of its own.
    request = models.JSONField()
    model_approval_status = models.CharField(max_length=32, blank=True, default="")
    approval_description = models.CharField(max_length=1024, blank=True, default="")
    customer_metadata_properties = models.JSONField(default=dict)
    client_token = models.CharField(max_length=36, blank=True, default="")
    tags = models.JSONField(default=list)
    created_by = models.JSONField(default=dict)
    last_modified_by = models.JSONField(null=True)
    creation_time = models.DateTimeField()
    last_modified_time = models.DateTimeField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["group", "model_package_version"], name="one_package_per_version"
            ),
        ]
        indexes = [models.Index(fields=["account_id", "region", "creation_time"])]

    def __str__(self):
        return self.model_package_arn

    @property
    def is_versioned(self) -> bool:
        return self.group_id is not None
