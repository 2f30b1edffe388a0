"""The template: a recipe for machines, the one model a template listing needs."""

from datetime import datetime
from typing import Any

from pydantic import Field, field_validator

from ._base import BaseModel
from .values import value_problem

__all__ = ["Offering", "Template"]


class Offering(BaseModel):
    """One candidate a template launches on: a provider instance and what to ask it for (docs/providers.md).

    Fields left out take the template's value. Candidates are tried by weight (higher first), equal weights
    in the order listed; a candidate that failed for capacity is skipped while it cools down.
    """

    provider: str
    """Provider instance (a name from `provider.instances`, or the implicit one, e.g. `local`)."""
    instance_type: str | None = None
    instance_types: dict[str, float] | None = None
    subnet_ids: list[str] | None = None
    """Subnets (zones) of this candidate."""
    price_type: str | None = None
    """ondemand or spot."""
    weight: float = 0.0
    """Higher is tried first (like a Karpenter node pool's weight); ties keep the listed order."""

    def key(self, template: "Template") -> str:
        """What the capacity memory remembers this candidate by: provider, type, subnets and price type.
        Two templates asking one provider for the same thing share it."""
        itype = self.instance_type or template.instance_type or ",".join(sorted(self.instance_types or {})) or "*"
        subnets = ",".join(self.subnet_ids if self.subnet_ids is not None else template.subnet_ids) or "*"
        return f"{self.provider}/{itype}/{subnets}/{self.price_type or template.price_type}"

    def applied(self, template: "Template") -> "Template":
        """The template as this candidate launches it."""
        fields = ("instance_type", "instance_types", "subnet_ids", "price_type")
        update = {f: getattr(self, f) for f in fields if getattr(self, f) is not None}
        if self.instance_type is not None and self.instance_types is None:
            update["instance_types"] = {}
        return template.model_copy(update=update)


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
    max_active: int | None = Field(None, ge=1, le=1_000_000)
    """Most machines of this template at once, across requests (None: no limit)."""
    price_type: str = "ondemand"
    """ondemand, spot or heterogeneous."""
    allocation_strategy: str | None = None
    """Fleet allocation strategy (lowestPrice, capacityOptimized, ...)."""
    fleet_type: str | None = None
    """Fleet kind: EC2Fleet instant (default), request or maintain; SpotFleet request (default) or maintain."""
    configuration: dict[str, Any] = {}
    """Further provider-specific settings."""
    provider: str | None = None
    """Provider instance that launches it (default: `provider.default`); see `offerings` for several."""
    offerings: list[Offering] = []
    """Candidates tried in turn when one has no capacity (docs/providers.md); empty: `provider` alone."""
    protected: str | None = None
    """Why launches are refused (bootstrap failures)."""
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
