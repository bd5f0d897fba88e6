"""`sagemaker.get_execution_role()` outside a notebook instance (no
/opt/ml/metadata/resource-metadata.json): the SDK asks STS who the caller is, and IAM for the
role's path. Run with the stack's env file as the only configuration."""
import sagemaker

print("role:", sagemaker.get_execution_role())
