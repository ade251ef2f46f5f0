"""Errors the emulator returns, as the AWS error codes boto3 maps to `client.exceptions.*`.

The codes declared in the SageMaker model (ConflictException, ResourceNotFound, ResourceLimitExceeded) get their
HTTP status from the model when moto serializes them; ValidationException is moto's own.
"""

from __future__ import annotations

from moto.sagemaker.exceptions import ConflictException, ResourceNotFound, SagemakerClientError, ValidationError


class ResourceLimitExceeded(SagemakerClientError):
    code = "ResourceLimitExceeded"


class SerializationException(SagemakerClientError):
    """What AWS JSON services answer when a value has the wrong type (a string where an integer belongs)."""

    code = "SerializationException"


__all__ = [
    "ConflictException",
    "ResourceLimitExceeded",
    "ResourceNotFound",
    "SerializationException",
    "ValidationError",
]
