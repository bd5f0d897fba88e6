# docs/clients.md "Pointing clients at it", AWS CLI: after `source .sageport/env` (here: the env file's
# variables are the environment), the commands it shows.
set -e
aws sagemaker list-training-jobs
aws s3 ls
