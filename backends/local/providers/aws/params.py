"""Template → AWS launch parameters, one builder per provider API (pure functions, no I/O).

docs/aws.md holds the same mapping as tables. Every resource made for a
request carries the tag `pluginsdk:request-id` (instances through the launch
template or TagSpecifications, fleets and groups on themselves), which is
how `describe` finds machines the store never heard of.
"""

from __future__ import annotations

import base64
from typing import Any

from pluginsdk.errors import ProviderError
from pluginsdk.models import Request, Template

from ..base import REQUEST_TAG

__all__ = [
    "asg_params",
    "ec2_fleet_params",
    "fleet_type",
    "instance_types",
    "launch_template_data",
    "resource_name",
    "run_instances_params",
    "split",
    "spot_fleet_params",
    "tags_of",
]

_SPOT_FLEET_STRATEGY = {
    "lowest-price": "lowestPrice",
    "diversified": "diversified",
    "capacity-optimized": "capacityOptimized",
    "capacity-optimized-prioritized": "capacityOptimizedPrioritized",
    "price-capacity-optimized": "priceCapacityOptimized",
}
"""EC2 Fleet / ASG spelling -> Spot Fleet spelling; templates may use either."""
_FLEET_STRATEGY = {v: k for k, v in _SPOT_FLEET_STRATEGY.items()}


def resource_name(request: Request) -> str:
    """Launch template / Auto Scaling group name of a request: derivable again after a crash."""
    return f"pluginsdk-{request.request_id}"


def tags_of(request: Request, template: Template) -> dict[str, str]:
    """Template tags, then request tags, then the request-id tag (which nothing may override)."""
    return {**template.tags, **request.tags, REQUEST_TAG: request.request_id}


def _tag_list(tags: dict[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def instance_types(template: Template, default: str) -> list[tuple[str, float]]:
    """(type, weight) pairs: the weighted set, else the single type, else the provider default."""
    if template.instance_types:
        return sorted(template.instance_types.items(), key=lambda kv: (-kv[1], kv[0]))
    return [(template.instance_type or default, 1.0)]


def split(count: int, parts: int) -> list[int]:
    """`count` spread as evenly as possible over `parts` (the first parts take the remainder)."""
    parts = max(1, parts)
    base, extra = divmod(count, parts)
    return [base + (1 if i < extra else 0) for i in range(parts) if base + (1 if i < extra else 0)]


def _spot(template: Template) -> bool:
    return template.price_type == "spot"


def run_instances_params(
    request: Request, template: Template, count: int, *, itype: str, subnet: str | None, token: str
) -> dict[str, Any]:
    """RunInstances for `count` machines in one subnet: all or nothing (MinCount = MaxCount)."""
    tags = _tag_list(tags_of(request, template))
    params: dict[str, Any] = {
        "ImageId": template.image_id,
        "InstanceType": itype,
        "MinCount": count,
        "MaxCount": count,
        "ClientToken": token,
        "TagSpecifications": [{"ResourceType": "instance", "Tags": tags}, {"ResourceType": "volume", "Tags": tags}],
    }
    if template.key_name:
        params["KeyName"] = template.key_name
    if template.security_group_ids:
        params["SecurityGroupIds"] = list(template.security_group_ids)
    if subnet:
        params["SubnetId"] = subnet
    if template.user_data:
        params["UserData"] = template.user_data  # botocore base64-encodes it for RunInstances
    if _spot(template):
        params["InstanceMarketOptions"] = {
            "MarketType": "spot",
            "SpotOptions": {"SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "terminate"},
        }
    return params


def launch_template_data(request: Request, template: Template, default_type: str) -> dict[str, Any]:
    """Launch template of a fleet or group: image, first type, key, groups, user data, request tags."""
    tags = _tag_list(tags_of(request, template))
    data: dict[str, Any] = {
        "ImageId": template.image_id,
        "InstanceType": instance_types(template, default_type)[0][0],
        "TagSpecifications": [{"ResourceType": "instance", "Tags": tags}, {"ResourceType": "volume", "Tags": tags}],
    }
    if template.key_name:
        data["KeyName"] = template.key_name
    if template.security_group_ids:
        data["SecurityGroupIds"] = list(template.security_group_ids)
    if template.user_data:
        data["UserData"] = base64.b64encode(template.user_data.encode()).decode()  # launch templates take base64
    return data


def _overrides(template: Template, default_type: str, *, asg: bool = False) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for itype, weight in instance_types(template, default_type):
        if asg:
            out.append({"InstanceType": itype, "WeightedCapacity": str(max(1, round(weight)))})
            continue
        subnets: list[str | None] = list(template.subnet_ids) or [None]
        for subnet in subnets:
            o: dict[str, Any] = {"InstanceType": itype, "WeightedCapacity": float(weight)}
            if subnet:
                o["SubnetId"] = subnet
            out.append(o)
    return out


def _on_demand_share(template: Template, count: int) -> int:
    """Machines on demand: all (ondemand), none (spot), `configuration.on_demand_percent` (heterogeneous, 50)."""
    if template.price_type == "spot":
        return 0
    if template.price_type == "heterogeneous":
        pct = float(template.configuration.get("on_demand_percent", 50))
        return round(count * pct / 100)
    return count


def fleet_type(template: Template, default: str, allowed: tuple[str, ...]) -> str:
    kind = (template.fleet_type or default).lower()
    if kind not in allowed:
        raise ProviderError(  # a ProviderError, so the request is stored failed (templates from files skip validation)
            f"Template '{template.template_id}': {template.provider_api} fleet_type must be one of "
            f"{', '.join(allowed)}, not '{kind}'.",
            details={"provider_code": "InvalidParameterValue", "field": "fleet_type", "value": kind},
        )
    return kind


def ec2_fleet_params(
    request: Request, template: Template, count: int, *, lt_id: str, default_type: str
) -> dict[str, Any]:
    """CreateFleet: type instant/request/maintain, overrides = types × subnets, capacity split by price type."""
    kind = fleet_type(template, "instant", ("instant", "request", "maintain"))
    on_demand = _on_demand_share(template, count)
    capacity: dict[str, Any] = {
        "TotalTargetCapacity": count,
        "DefaultTargetCapacityType": "on-demand" if on_demand >= count else "spot",
    }
    if 0 < on_demand < count:
        capacity["OnDemandTargetCapacity"] = on_demand
        capacity["SpotTargetCapacity"] = count - on_demand
    strategy = template.allocation_strategy
    params: dict[str, Any] = {
        "Type": kind,
        "ClientToken": request.request_id,
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {"LaunchTemplateId": lt_id, "Version": "$Latest"},
                "Overrides": _overrides(template, default_type),
            }
        ],
        "TargetCapacitySpecification": capacity,
        "TagSpecifications": [{"ResourceType": "fleet", "Tags": _tag_list(tags_of(request, template))}],
    }
    if on_demand < count:
        params["SpotOptions"] = {"AllocationStrategy": _FLEET_STRATEGY.get(strategy or "", strategy or "lowest-price")}
    if on_demand:
        params["OnDemandOptions"] = {"AllocationStrategy": "lowest-price"}
    return params


def spot_fleet_params(
    request: Request, template: Template, count: int, *, lt_id: str, default_type: str, role: str
) -> dict[str, Any]:
    """RequestSpotFleet: type request/maintain; the IAM fleet role comes from configuration or provider config."""
    kind = fleet_type(template, "request", ("request", "maintain"))
    strategy = template.allocation_strategy or "lowestPrice"
    config: dict[str, Any] = {
        "IamFleetRole": role,
        "TargetCapacity": count,
        "Type": kind,
        "AllocationStrategy": _SPOT_FLEET_STRATEGY.get(strategy, strategy),
        "ClientToken": request.request_id,
        "LaunchTemplateConfigs": [
            {
                "LaunchTemplateSpecification": {"LaunchTemplateId": lt_id, "Version": "$Latest"},
                "Overrides": _overrides(template, default_type),
            }
        ],
        "TagSpecifications": [{"ResourceType": "spot-fleet-request", "Tags": _tag_list(tags_of(request, template))}],
        "TerminateInstancesWithExpiration": True,
    }
    on_demand = _on_demand_share(template, count) if template.price_type == "heterogeneous" else 0
    if on_demand:
        config["OnDemandTargetCapacity"] = on_demand
    return {"SpotFleetRequestConfig": config}


def asg_params(
    request: Request, template: Template, count: int, *, lt_id: str, default_type: str, zones: list[str]
) -> dict[str, Any]:
    """CreateAutoScalingGroup sized to `count` (min 0, so returning machines can shrink it to nothing)."""
    name = resource_name(request)
    params: dict[str, Any] = {
        "AutoScalingGroupName": name,
        "MinSize": 0,
        "MaxSize": count,
        "DesiredCapacity": count,
        "Tags": [
            {"Key": k, "Value": v, "PropagateAtLaunch": True, "ResourceId": name, "ResourceType": "auto-scaling-group"}
            for k, v in tags_of(request, template).items()
        ],
    }
    if template.subnet_ids:
        params["VPCZoneIdentifier"] = ",".join(template.subnet_ids)
    else:
        params["AvailabilityZones"] = zones
    spec = {"LaunchTemplateId": lt_id, "Version": "$Latest"}
    if len(template.instance_types) > 1 or template.price_type != "ondemand":
        pct = {"spot": 0, "ondemand": 100}.get(template.price_type)
        if pct is None:
            pct = int(float(template.configuration.get("on_demand_percent", 50)))
        distribution: dict[str, Any] = {"OnDemandBaseCapacity": 0, "OnDemandPercentageAboveBaseCapacity": pct}
        if pct < 100:
            strategy = template.allocation_strategy or "lowest-price"
            distribution["SpotAllocationStrategy"] = _FLEET_STRATEGY.get(strategy, strategy)
        params["MixedInstancesPolicy"] = {
            "LaunchTemplate": {
                "LaunchTemplateSpecification": spec,
                "Overrides": _overrides(template, default_type, asg=True),
            },
            "InstancesDistribution": distribution,
        }
    else:
        params["LaunchTemplate"] = spec
    return params
