"""The template: a recipe for machines, the one model a template listing needs."""

from datetime import datetime
from typing import Any

from pydantic import field_validator

from ._base import BaseModel
from .values import value_problem

__all__ = ["Template"]


class Template(BaseModel):
    """A recipe for machines: image, instance type, network and tags, for one provider API."""

    template_id: str
    """Unique id of the template."""
    name: str | None = None
    """Display name."""
    description: str | None = None
    """What the template is for."""
    provider_api: str = "aws"
    """Provider API that launches it: on the aws provider `aws` (the spec's default) means RunInstances, else
    EC2Fleet, SpotFleet or ASG; the local provider simulates every one of them alike (and takes `local`)."""
    image_id: str
    """Machine image (AMI id for AWS)."""
    instance_type: str | None = None
    """Instance type, e.g. t3.medium."""
    instance_types: dict[str, float] = {}
    """Weighted set of instance types (type -> weight) for fleet APIs."""
    key_name: str | None = None
    """SSH key pair name."""
    security_group_ids: list[str] = []
    """Security groups attached to every machine."""
    subnet_ids: list[str] = []
    """Subnets; machines are spread across them."""
    user_data: str | None = None
    """Startup script text."""
    tags: dict[str, str] = {}
    """Tags put on every machine."""
    version: str = "1.0"
    """Template version."""
    max_number: int | None = None
    """Most machines one request may ask for (None: the global limit)."""
    price_type: str = "ondemand"
    """ondemand, spot or heterogeneous."""
    allocation_strategy: str | None = None
    """Fleet allocation strategy (lowestPrice, capacityOptimized, ...)."""
    fleet_type: str | None = None
    """Fleet kind: EC2Fleet instant (default), request or maintain; SpotFleet request (default) or maintain."""
    configuration: dict[str, Any] = {}
    """Further provider-specific settings."""
    source: str = "store"
    """Where the template came from: store, or the file it was loaded from."""
    created_at: datetime | None = None
    updated_at: datetime | None = None

    @field_validator("configuration")
    @classmethod
    def _storable(cls, value: dict[str, Any]) -> dict[str, Any]:
        """Free-form settings hold only what JSON and the store take (a template file may say `.nan`)."""
        found = value_problem(value)
        if found is not None:
            raise ValueError(f"{found[0]}: {found[1]}")
        return value
