# AWS's bring-your-own-container notebook (scikit_bring_your_own.ipynb), Part 1's "Building and
# registering the container" cell: its AWS CLI calls, in order, without the docker commands
# (docker login/push talk to the ECR registry through the Docker engine, not through Python).
algorithm_name=sagemaker-decision-trees

account=$(aws sts get-caller-identity --query Account --output text)

# Get the region defined in the current configuration (default to us-west-2 if none defined)
region=$(aws configure get region)
region=${region:-us-west-2}

fullname="${account}.dkr.ecr.${region}.amazonaws.com/${algorithm_name}:latest"
echo "fullname: ${fullname}"

# If the repository doesn't exist in ECR, create it.
aws ecr describe-repositories --repository-names "${algorithm_name}" > /dev/null 2>&1

if [ $? -ne 0 ]
then
    aws ecr create-repository --repository-name "${algorithm_name}" > /dev/null
fi

# Get the login command from ECR (the cell pipes it into `docker login`)
aws ecr get-login-password --region ${region} > /dev/null
