"""The machinery every reconciler shares: leases on rows, the claim-step-release skeleton
(`loop.reconcile_once`) and the periodic sweeper that features register their hooks with.
May import: runtime, storage, protocol. Imports no feature."""
