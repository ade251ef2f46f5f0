"""IAM of the deployed stack, outside AWS: each function's policy read from template.yaml (SAM policy templates
expanded, intrinsics resolved), checked against AWS's authorization data (`catalog`), and enforced on the emulator
at run time (`enforce`); and `rebalancer doctor`'s check of each deployed role through IAM's policy simulator
(`role_permissions`)."""
