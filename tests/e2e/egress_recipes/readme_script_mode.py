"""docs/clients.md "Script mode with the SDKs", SDK v2: an entry point fetched by the sagemaker-training
toolkit, logs streamed, then the job attached. Run with the stack's env file as the only
configuration. argv: the toolkit image, the source dir (holding train.py)."""
import sys

from sagemaker.estimator import Estimator

image, source_dir = sys.argv[1:3]

estimator = Estimator(entry_point="train.py", source_dir=source_dir,
                      image_uri=image,
                      role="arn:aws:iam::123456789012:role/SageMakerRole",
                      instance_count=1, instance_type="ml.m5.large",
                      hyperparameters={"lr": 0.5})
estimator.fit(logs=True)
attached = Estimator.attach(estimator.latest_training_job.name)
print("attached:", attached.model_data)
