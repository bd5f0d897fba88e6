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
