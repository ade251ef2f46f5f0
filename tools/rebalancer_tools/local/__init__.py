"""The deployed application run on this machine: the local stack (the template's resources in moto, the real state
machine, the handlers in process), the sandbox around the emulator, the controller deployed on it, the demo's
teams at work, and bursts of events across many clusters."""
