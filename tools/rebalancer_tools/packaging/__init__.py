"""What the project is built from and ships: template.yaml and the state machine read from a checkout, the files
the package carries (`_assets`), the sample events, the SDK's service model, the built layer, the generated
instance-type catalog, and a policy published to AppConfig."""
