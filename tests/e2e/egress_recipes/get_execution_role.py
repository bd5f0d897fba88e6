"""`get_execution_role()` outside a notebook instance (no /opt/ml/metadata/resource-metadata.json),
with the SDK v2 or v3, whichever this Python has: the SDK asks STS who the caller is, then IAM for
the role's path (sagemaker/session.py and sagemaker/core/helper/session_helper.py,
get_caller_identity_arn). Run with the stack's env file as the only configuration."""
try:
    from sagemaker import get_execution_role  # SDK v2
except ImportError:
    from sagemaker.core.helper.session_helper import get_execution_role  # SDK v3

print("role:", get_execution_role())
