"""docs/clients.md "Pointing clients at it", SageMaker Python SDK (v2): its recipe as printed, then the
trained model deployed and asked for a prediction. Run from the repository root with the stack's
env file as the only configuration. argv: the training image, the serving image."""
import sys

import sagemaker
from sagemaker.estimator import Estimator
from sagemaker.serializers import CSVSerializer

training_image, serving_image = sys.argv[1:3]

session = sagemaker.Session()
print(session.default_bucket())  # sagemaker-us-east-1-123456789012, created by Sageport
train = session.upload_data("examples/linear_regression/train.csv", key_prefix="linear")
estimator = Estimator(image_uri=training_image,
                      role="arn:aws:iam::123456789012:role/SageMakerRole",
                      instance_count=1, instance_type="ml.m5.large")
estimator.fit({"train": train})  # model.tar.gz lands in the default bucket

predictor = estimator.deploy(1, "ml.m5.large", image_uri=serving_image, serializer=CSVSerializer())
print("prediction:", predictor.predict("1,-1").decode().strip())
predictor.delete_model()  # first: it finds the model through the endpoint's config
predictor.delete_endpoint()
