"""Accounts: access keys (the SigV4 credential store), their admin and `createaccesskey` command,
and resource tagging (ListTags/AddTags/DeleteTags over every registered taggable model).
App label "controlplane". May import: protocol."""
