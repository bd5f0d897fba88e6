"""STS and IAM, as far as SageMaker clients use them (docs/api.md, "STS and IAM"): who a key is
(`GetCallerIdentity`), temporary credentials of a role (`AssumeRole`), and roles (`GetRole`,
`CreateRole`, `ListRoles`, `DeleteRole`)."""
