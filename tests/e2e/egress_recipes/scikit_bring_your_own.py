"""AWS's bring-your-own-container notebook (amazon-sagemaker-examples,
advanced_functionality/scikit_bring_your_own/scikit_bring_your_own.ipynb, Part 2), its cells'
code in order, run in a directory holding `data/` with the stack's env file as the only
configuration. The image the notebook builds and pushes to ECR (Part 1, a shell cell calling ECR)
is tagged locally under the name the notebook computes.

Changed, and why: cell 11's `role = get_execution_role()` is the role ARN, as AWS's docs say to
do outside SageMaker (get_execution_role is measured on its own: egress_recipes/
get_execution_role.py); cell 20's `sagemaker.predictor.csv_serializer` no longer exists in the
SDK v2 (`CSVSerializer()` is its replacement); the data is the linear-regression example's,
whose target is the last column (iris's label is the first), so the prediction cells drop that,
and the batch transform's InputFilter keeps the two feature columns (`$[0,1]`) where the notebook
drops iris's label (`$[1:]`); its output is `train.csv.out` (the notebook's `iris.csv.out`)."""
# ruff: noqa: UP032 (the notebook's code as it is written)
import itertools

import boto3
import pandas as pd
import sagemaker as sage
from sagemaker.serializers import CSVSerializer

# Cell 11: S3 prefix, IAM role
prefix = "DEMO-scikit-byo-iris"
role = "arn:aws:iam::123456789012:role/SageMakerRole"

# Cell 13: the session
sess = sage.Session()

# Cell 15: upload the data for training
WORK_DIRECTORY = "data"
default_bucket = sess.default_bucket()
default_bucket_prefix = sess.default_bucket_prefix
if default_bucket_prefix:
    prefix = f"{default_bucket_prefix}/{prefix}"
data_location = sess.upload_data(WORK_DIRECTORY, bucket=default_bucket, key_prefix=prefix)

# Cell 17: the image URI from the account and region, an estimator, fit
account = sess.boto_session.client("sts").get_caller_identity()["Account"]
region = sess.boto_session.region_name
image = "{}.dkr.ecr.{}.amazonaws.com/sagemaker-decision-trees:latest".format(account, region)
# The same lookups as AWS's other BYO notebooks write them (tensorflow_bring_your_own, ...).
assert boto3.client("sts").get_caller_identity()["Account"] == account
assert boto3.session.Session().region_name == region
s3_output_path = "s3://{}/output".format(default_bucket)
if default_bucket_prefix:
    s3_output_path = "s3://{}/{}/output".format(default_bucket, default_bucket_prefix)
tree = sage.estimator.Estimator(
    image,
    role,
    1,
    "ml.c4.2xlarge",
    output_path=s3_output_path,
    sagemaker_session=sess,
)
tree.fit(data_location)

# Cell 20: deploy
predictor = tree.deploy(1, "ml.m4.xlarge", serializer=CSVSerializer())

# Cells 22-24: some of the training rows, without their target
shape = pd.read_csv("data/train.csv", header=None)
shape.drop(shape.columns[[-1]], axis=1, inplace=True)
a = [3 * i for i in range(3)]
b = [i for i in range(2)]
indices = [i + j for i, j in itertools.product(a, b)]
test_data = shape.iloc[indices[:-1]]

# Cell 26: predict
print(predictor.predict(test_data.values).decode("utf-8"))

# Cell 28: cleanup
sess.delete_endpoint(predictor.endpoint)

# Cells 30-31: batch transform of the training data, its results read back from S3
transform_output_folder = "batch-transform-output"
output_path = "s3://{}/{}".format(sess.default_bucket(), transform_output_folder)

transformer = tree.transformer(
    instance_count=1,
    instance_type="ml.m4.xlarge",
    output_path=output_path,
    assemble_with="Line",
    accept="text/csv",
)
transformer.transform(data_location, content_type="text/csv", split_type="Line", input_filter="$[0,1]")
transformer.wait()

s3_client = sess.boto_session.client("s3")
s3_client.download_file(
    sess.default_bucket(), "{}/{}".format(transform_output_folder, "train.csv.out"), "/tmp/train.csv.out"
)
with open("/tmp/train.csv.out") as f:
    results = f.readlines()
print("Transform results: \n{}".format("".join(results)))
