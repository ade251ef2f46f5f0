"""Tools for hyperpod-rebalancer that never ship in the Lambda layer: the CLI, the HyperPod emulator, the
simulator, the demo and the local stack. They import the runtime package `rebalancer`; it never imports them."""
