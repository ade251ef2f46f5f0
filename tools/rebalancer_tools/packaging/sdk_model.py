"""Facts read from the SageMaker service model that botocore ships (the emulator's shapes, the catalog generator):
they follow the SDK rather than a copy. Tools only: the runtime reads no service model."""

from __future__ import annotations

from functools import cache

import botocore.session
from botocore.model import ServiceModel, StringShape


@cache
def sagemaker_model() -> ServiceModel:
    return botocore.session.get_session().get_service_model("sagemaker")


def _enum(shape: str) -> tuple[str, ...]:
    s = sagemaker_model().shape_for(shape)
    assert isinstance(s, StringShape)
    return tuple(s.enum)


@cache
def cluster_instance_types() -> tuple[str, ...]:
    return _enum("ClusterInstanceType")


@cache
def mig_profile_types() -> tuple[str, ...]:
    return _enum("MIGProfileType")
