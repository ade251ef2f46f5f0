"""`make demo`: the whole controller, end to end, against the HyperPod emulator on loopback (see `scenarios`)."""
