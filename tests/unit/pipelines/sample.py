"""Pipeline definitions as the SageMaker Python SDK v2 writes them (captured from
`Pipeline.definition()` of SDK 2.257: ProcessingStep with a PropertyFile, TrainingStep reading its
output, ConditionStep on the JsonGet value, ModelStep(register) and FailStep in its branches)."""

import copy
import json

ROLE = "arn:aws:iam::111111111111:role/r"

PREPARE = {
    "Name": "Prepare",
    "Type": "Processing",
    "Arguments": {
        "ProcessingResources": {
            "ClusterConfig": {"InstanceType": "ml.m5.large", "InstanceCount": 1, "VolumeSizeInGB": 30}
        },
        "AppSpecification": {"ImageUri": "algo:1"},
        "RoleArn": ROLE,
        "ProcessingOutputConfig": {
            "Outputs": [
                {
                    "OutputName": "report",
                    "AppManaged": False,
                    "S3Output": {
                        "S3Uri": {
                            "Std:Join": {
                                "On": "/",
                                "Values": [
                                    "s3:/",
                                    "bkt",
                                    "p1",
                                    {"Get": "Execution.PipelineExecutionId"},
                                    "Prepare",
                                    "output",
                                    "report",
                                ],
                            }
                        },
                        "LocalPath": "/opt/ml/processing/report",
                        "S3UploadMode": "EndOfJob",
                    },
                },
                {
                    "OutputName": "train",
                    "AppManaged": False,
                    "S3Output": {
                        "S3Uri": "s3://bkt/train",
                        "LocalPath": "/opt/ml/processing/train",
                        "S3UploadMode": "EndOfJob",
                    },
                },
            ]
        },
        "Environment": {"GREETING": {"Get": "Parameters.Greeting"}},
    },
    "PropertyFiles": [{"PropertyFileName": "Report", "OutputName": "report", "FilePath": "report.json"}],
}
TRAIN = {
    "Name": "Train",
    "Type": "Training",
    "Arguments": {
        "AlgorithmSpecification": {"TrainingInputMode": "File", "TrainingImage": "algo:1"},
        "OutputDataConfig": {"S3OutputPath": "s3://bkt/models"},
        "StoppingCondition": {"MaxRuntimeInSeconds": 600},
        "ResourceConfig": {
            "VolumeSizeInGB": 1,
            "InstanceCount": {"Get": "Parameters.Count"},
            "InstanceType": "ml.m5.large",
        },
        "RoleArn": ROLE,
        "InputDataConfig": [
            {
                "DataSource": {
                    "S3DataSource": {
                        "S3DataType": "S3Prefix",
                        "S3Uri": {
                            "Get": "Steps.Prepare.ProcessingOutputConfig.Outputs['train'].S3Output.S3Uri"
                        },
                        "S3DataDistributionType": "FullyReplicated",
                    }
                },
                "ChannelName": "train",
            }
        ],
    },
}
REGISTER = {
    "Name": "Register-RegisterModel",
    "Type": "RegisterModel",
    "Arguments": {
        "ModelPackageGroupName": "grp",
        "InferenceSpecification": {
            "Containers": [
                {
                    "Image": "algo:1",
                    "Environment": {},
                    "ModelDataUrl": {"Get": "Steps.Train.ModelArtifacts.S3ModelArtifacts"},
                }
            ],
            "SupportedContentTypes": ["text/csv"],
            "SupportedResponseMIMETypes": ["text/csv"],
        },
        "ModelApprovalStatus": "Approved",
    },
}
FAIL = {
    "Name": "TooLow",
    "Type": "Fail",
    "Arguments": {
        "ErrorMessage": {"Std:Join": {"On": " ", "Values": ["score below", {"Get": "Parameters.Threshold"}]}}
    },
}
CHECK = {
    "Name": "Check",
    "Type": "Condition",
    "Arguments": {
        "Conditions": [
            {
                "Type": "GreaterThanOrEqualTo",
                "LeftValue": {
                    "Std:JsonGet": {
                        "PropertyFile": {"Get": "Steps.Prepare.PropertyFiles.Report"},
                        "Path": "score",
                    }
                },
                "RightValue": {"Get": "Parameters.Threshold"},
            }
        ],
        "IfSteps": [REGISTER],
        "ElseSteps": [FAIL],
    },
}
DOCUMENT = {
    "Version": "2020-12-01",
    "Metadata": {},
    "Parameters": [
        {"Name": "Threshold", "Type": "Integer", "DefaultValue": 1},
        {"Name": "Greeting", "Type": "String", "DefaultValue": "hi"},
        {"Name": "Count", "Type": "Integer", "DefaultValue": 1},
    ],
    "PipelineExperimentConfig": {
        "ExperimentName": {"Get": "Execution.PipelineName"},
        "TrialName": {"Get": "Execution.PipelineExecutionId"},
    },
    "Steps": [PREPARE, TRAIN, CHECK],
}


def document(**changes) -> dict:
    found = copy.deepcopy(DOCUMENT)
    found.update(changes)
    return found


def text(**changes) -> str:
    return json.dumps(document(**changes))


def function_step(name: str, *property_references: str) -> dict:
    """A `@step` function as the SDK compiles it (sagemaker.remote_function.job._Job.compile): a
    Training step running the SDK's job driver; its results under
    `<s3 root>/<pipeline>/<execution id>/<step>/results`, and what its arguments read (another
    function's DelayedReturn: that step's S3OutputPath) passed as `--property_references`."""
    execution_id = {"Get": "Execution.PipelineExecutionId"}
    references = [
        item
        for step in property_references
        for item in (
            f"Steps.{step}.OutputDataConfig.S3OutputPath",
            {"Std:Join": {"On": "", "Values": [{"Get": f"Steps.{step}.OutputDataConfig.S3OutputPath"}]}},
        )
    ]
    return {
        "Name": name,
        "Type": "Training",
        "DependsOn": list(property_references),
        "Arguments": {
            "AlgorithmSpecification": {
                "TrainingImage": "python-sagemaker:1",
                "TrainingInputMode": "File",
                "ContainerEntrypoint": [
                    "/bin/bash",
                    "/opt/ml/input/data/sagemaker_remote_function_bootstrap/job_driver.sh",
                ],
                "ContainerArguments": [
                    "--s3_base_uri",
                    "s3://bkt/p1",
                    "--pipeline_execution_id",
                    execution_id,
                    "--property_references",
                    "Execution.PipelineExecutionId",
                    {"Std:Join": {"On": "", "Values": [execution_id]}},
                    *references,
                    "--serialize_output_to_json",
                    "true",
                ],
            },
            "OutputDataConfig": {
                "S3OutputPath": {
                    "Std:Join": {"On": "/", "Values": ["s3://bkt/p1", execution_id, name, "results"]}
                }
            },
            "StoppingCondition": {"MaxRuntimeInSeconds": 86400},
            "ResourceConfig": {"VolumeSizeInGB": 30, "InstanceCount": 1, "InstanceType": "ml.m5.large"},
            "RoleArn": ROLE,
            "RetryStrategy": {"MaximumRetryAttempts": 1},
            "EnableManagedSpotTraining": False,
        },
    }


def delayed_return(step: str, path: str = "Result") -> dict:
    """A @step function's return value as a later step reads it (the SDK's DelayedReturn)."""
    results = {"Get": f"Steps.{step}.OutputDataConfig.S3OutputPath"}
    return {
        "Std:JsonGet": {"S3Uri": {"Std:Join": {"On": "/", "Values": [results, "results.json"]}}, "Path": path}
    }
