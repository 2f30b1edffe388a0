"""The `aws` provider: RunInstances, EC2Fleet, SpotFleet and ASG through aiobotocore.

The template's `provider_api` picks the API (`aws` means RunInstances). No
AWS call happens until a request needs one, so `--dry-run`, validation and
listing never touch the cloud. Machines are found by the request-id tag, never
by ids kept only in memory, so a restarted engine sees what a dead one made.
Concurrent `describe` calls are answered by one DescribeInstances per round
(single flight: callers arriving while a call is out join the next one).

Config (`provider.aws`, plus `provider.region` / `provider.profile`, i.e.
PLUGIN_REGION / PLUGIN_PROFILE, over the usual AWS chain): endpoint_url,
default_instance_type (t3.micro), fleet_role (SpotFleet IAM role ARN),
availability_zones (ASG without subnets), retry_mode (botocore's: standard,
adaptive or legacy; standard), max_attempts (5, throttled ones included),
timeout (30 s). The keys and their types are checked when the configuration is loaded
(`pluginsdk.config.AwsProviderSettings`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, TypeVar

from pluginsdk.errors import ConfigurationError, ProviderError
from pluginsdk.models import Machine, MachineStatus, Request, Template

from ..base import CAPACITY_CODES, REQUEST_TAG, LaunchResult, ProvisionedMachine
from . import params as p
from .client import AwsClients
from .interruptions import receive

__all__ = ["AwsProvider"]

log = logging.getLogger("pluginsdk.providers.aws")

T = TypeVar("T")

_STATES = {
    "pending": MachineStatus.PENDING,
    "running": MachineStatus.RUNNING,
    "stopping": MachineStatus.STOPPING,
    "stopped": MachineStatus.STOPPED,
    "shutting-down": MachineStatus.SHUTTING_DOWN,
    "terminated": MachineStatus.TERMINATED,
}
_CAPACITY_CODES = CAPACITY_CODES
"""RunInstances errors worth retrying in another subnet or with another instance type."""
_GONE_CODES = frozenset({"InvalidInstanceID.NotFound", "InvalidInstanceID.Malformed"})
_TAG_FILTER = f"tag:{REQUEST_TAG}"
_FILTER_VALUES = 200  # EC2 accepts at most 200 values in one filter


class AwsProvider:
    """The AWS driver; see the module docstring for its settings."""

    apis: tuple[str, ...] = ("aws", "RunInstances", "EC2Fleet", "SpotFleet", "ASG")

    def __init__(self, name: str = "aws", config: Mapping[str, Any] | None = None, **_: Any) -> None:
        cfg = dict(config or {})
        self.name = name
        try:
            self.aws = AwsClients(
                region=cfg.get("region") or None,
                profile=cfg.get("profile") or None,
                endpoint_url=cfg.get("endpoint_url") or None,
                max_attempts=int(cfg.get("max_attempts", 5)),
                retry_mode=str(cfg.get("retry_mode") or "standard"),
                timeout=float(cfg.get("timeout", 30.0)),
                provider=name,
            )
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(f"Invalid provider.aws setting: {exc}.", key="provider.aws") from exc
        self.default_type = str(cfg.get("default_instance_type") or "t3.micro")
        self.fleet_role: str | None = cfg.get("fleet_role") or None
        zones = cfg.get("availability_zones") or []
        self.zones: list[str] = [zones] if isinstance(zones, str) else list(zones)
        self.queue_url: str | None = cfg.get("interruption_queue_url") or None
        self.queue_wait = int(cfg.get("interruption_wait_seconds", 0))
        self.keep_interrupted = bool(cfg.get("interruption_keep_stopped", False))
        self._pending: dict[str, list[asyncio.Future[list[dict[str, Any]]]]] = {}
        self._runner: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Nothing to do: clients are made on the first AWS call (dry runs and listings make none)."""

    async def aclose(self) -> None:
        if self._runner is not None and not self._runner.done():
            self._runner.cancel()
        await self.aws.aclose()

    # -- describe ---------------------------------------------------------
    async def _instances(self, request_id: str) -> list[dict[str, Any]]:
        """Instances tagged with `request_id`, fetched in a batch with every other request asked meanwhile."""
        fut: asyncio.Future[list[dict[str, Any]]] = asyncio.get_running_loop().create_future()
        self._pending.setdefault(request_id, []).append(fut)
        if self._runner is None or self._runner.done():
            self._runner = asyncio.ensure_future(self._run_batches())
        return await fut

    async def _run_batches(self) -> None:
        while self._pending:
            await asyncio.sleep(0)  # callers of this same tick join the batch
            batch, self._pending = self._pending, {}
            try:
                found = await self._describe_tagged(list(batch))
            except BaseException as exc:
                for futures in batch.values():
                    for f in futures:
                        if not f.done():
                            f.set_exception(exc if isinstance(exc, Exception) else ProviderError("cancelled"))
                if not isinstance(exc, Exception):
                    raise
                continue
            for rid, futures in batch.items():
                for f in futures:
                    if not f.done():
                        f.set_result(found.get(rid, []))

    async def _describe_tagged(self, request_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for i in range(0, len(request_ids), _FILTER_VALUES):
            chunk = request_ids[i : i + _FILTER_VALUES]
            reservations = await self.aws.paginate(
                "ec2",
                "DescribeInstances",
                "Reservations",
                Filters=[{"Name": _TAG_FILTER, "Values": chunk}],
                MaxResults=1000,
            )
            for res in reservations:
                for inst in res.get("Instances", []):
                    rid = _tag(inst, REQUEST_TAG)
                    if rid is not None:
                        out.setdefault(rid, []).append(inst)
        return out

    async def describe(self, request: Request, template: Template | None) -> list[ProvisionedMachine]:
        return [_machine(i) for i in await self._instances(request.request_id)]

    # -- launch -----------------------------------------------------------
    @staticmethod
    def _api(name: str | None) -> str:
        return "RunInstances" if name in (None, "aws") else str(name)

    async def launch(self, request: Request, template: Template, count: int) -> LaunchResult:
        api = self._api(template.provider_api)
        if api == "RunInstances":
            return await self._run_instances(request, template, count)
        if api == "EC2Fleet":
            return await self._ec2_fleet(request, template, count)
        if api == "SpotFleet":
            return await self._spot_fleet(request, template, count)
        if api == "ASG":
            return await self._asg(request, template, count)
        raise ProviderError(f"The aws provider does not serve provider_api '{template.provider_api}'.")

    async def _run_instances(self, request: Request, template: Template, count: int) -> LaunchResult:
        """One RunInstances per subnet share; a capacity error moves that share to the next subnet, then type."""
        types = [t for t, _ in p.instance_types(template, self.default_type)]
        subnets: list[str | None] = list(template.subnet_ids) or [None]
        shares = p.split(count, len(subnets))

        async def one(index: int, n: int) -> list[dict[str, Any]]:
            order = subnets[index:] + subnets[:index]
            last: ProviderError | None = None
            for itype in types:
                for subnet in order:
                    token = f"{request.request_id}-{index}-{itype}-{subnet or ''}"[:64]
                    try:
                        launch = p.run_instances_params(request, template, n, itype=itype, subnet=subnet, token=token)
                        out = await self.aws.call("ec2", "RunInstances", **launch)
                        return list(out.get("Instances", []))
                    except ProviderError as exc:
                        if exc.details.get("provider_code") not in _CAPACITY_CODES:
                            raise
                        last = exc
            assert last is not None
            raise last

        results = await asyncio.gather(*(one(i, n) for i, n in enumerate(shares)), return_exceptions=True)
        instances = [i for r in results if isinstance(r, list) for i in r]
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors and not instances:
            raise errors[0]
        message = f"{len(instances)} machines launching"
        data: dict[str, Any] = {"api": "RunInstances"}
        if errors:  # every type and subnet was tried: the request ends partial, naming the cause
            message += f"; {count - len(instances)} could not start: {errors[0]}"
            data |= {"unfilled": count - len(instances), "unfilled_reason": _cause(errors[0])}
        return LaunchResult(machines=[_machine(i) for i in instances], provider_data=data, message=message)

    async def _launch_template(self, request: Request, template: Template) -> str:
        name = p.resource_name(request)
        try:
            out = await self.aws.call(
                "ec2",
                "CreateLaunchTemplate",
                LaunchTemplateName=name,
                ClientToken=request.request_id,
                LaunchTemplateData=p.launch_template_data(request, template, self.default_type),
                TagSpecifications=[
                    {"ResourceType": "launch-template", "Tags": [{"Key": REQUEST_TAG, "Value": request.request_id}]}
                ],
            )
            return str(out["LaunchTemplate"]["LaunchTemplateId"])
        except ProviderError as exc:
            if "AlreadyExists" not in str(exc.details.get("provider_code")):
                raise
        found = await self.aws.call("ec2", "DescribeLaunchTemplates", LaunchTemplateNames=[name])
        return str(found["LaunchTemplates"][0]["LaunchTemplateId"])

    async def _create_group(self, params: dict[str, Any]) -> None:
        """CreateAutoScalingGroup, which takes no ClientToken: the group is named for the request, so
        `AlreadyExists` means this request's group was made — by an attempt botocore retried after an answer
        lost to a 5xx or the network, or by an engine that died before storing it."""
        try:
            await self.aws.call("autoscaling", "CreateAutoScalingGroup", **params)
        except ProviderError as exc:
            if "AlreadyExists" not in str(exc.details.get("provider_code")):
                raise
            log.info("Auto Scaling group %s already made: adopted", params["AutoScalingGroupName"])

    async def _or_drop_template(self, request: Request, call: Awaitable[T]) -> T:
        """The fleet/group call's answer; when it fails, the request's launch template is deleted (no leak)."""
        try:
            return await call
        except ProviderError:
            await self._delete_launch_template(request)
            raise

    async def _delete_launch_template(self, request: Request) -> None:
        try:
            await self.aws.call("ec2", "DeleteLaunchTemplate", LaunchTemplateName=p.resource_name(request))
        except ProviderError as exc:  # already gone, or never made: nothing leaks either way
            log.info("launch template of %s not deleted: %s", request.request_id, exc.message)

    @staticmethod
    def _weights(template: Template, default: str) -> dict[str, float]:
        return dict(p.instance_types(template, default))

    async def _ec2_fleet(self, request: Request, template: Template, count: int) -> LaunchResult:
        kind = p.fleet_type(template, "instant", ("instant", "request", "maintain"))
        lt_id = await self._launch_template(request, template)
        spec = p.ec2_fleet_params(request, template, count, lt_id=lt_id, default_type=self.default_type)
        out = await self._or_drop_template(request, self.aws.call("ec2", "CreateFleet", **spec))
        data = {
            "api": "EC2Fleet",
            "fleet_id": out.get("FleetId"),
            "fleet_type": kind,
            "weights": self._weights(template, self.default_type),
        }
        machines = [
            ProvisionedMachine(machine_id=iid, status=MachineStatus.PENDING, instance_type=group.get("InstanceType"))
            for group in out.get("Instances") or []
            for iid in group.get("InstanceIds") or []
        ]
        errors = out.get("Errors") or []
        if kind == "instant" and errors and not machines:
            await self._delete_fleet(request, str(out.get("FleetId")))
            first = errors[0]
            code = str(first.get("ErrorCode") or "FleetError")
            raise ProviderError(
                f"AWS CreateFleet launched nothing: {code}: {first.get('ErrorMessage') or ''}".strip(),
                details={"provider_code": code, "operation": "CreateFleet"},
            )
        message = f"EC2 Fleet {out.get('FleetId')} ({kind}) for {count} machines"
        if errors:
            message += f"; {len(errors)} launch errors, first: {errors[0].get('ErrorCode')}"
            if kind == "instant" and len(machines) < count:  # an instant fleet launches nothing more later
                first = errors[0]
                data |= {
                    "unfilled": count - len(machines),
                    "unfilled_reason": f"{first.get('ErrorCode')}: {first.get('ErrorMessage') or ''}".strip(),
                }
        return LaunchResult(machines=machines, provider_data=data, message=message)

    async def _spot_fleet(self, request: Request, template: Template, count: int) -> LaunchResult:
        kind = p.fleet_type(template, "request", ("request", "maintain"))
        role = template.configuration.get("fleet_role") or self.fleet_role
        if not role:
            raise ProviderError(
                "SpotFleet needs an IAM fleet role: set the template's configuration.fleet_role "
                "or provider.aws.fleet_role.",
                details={"provider_code": "MissingFleetRole", "operation": "RequestSpotFleet"},
            )
        lt_id = await self._launch_template(request, template)
        kw = {"lt_id": lt_id, "default_type": self.default_type, "role": str(role)}
        spec = p.spot_fleet_params(request, template, count, **kw)
        out = await self._or_drop_template(request, self.aws.call("ec2", "RequestSpotFleet", **spec))
        data = {
            "api": "SpotFleet",
            "spot_fleet_id": out.get("SpotFleetRequestId"),
            "fleet_type": kind,
            "weights": self._weights(template, self.default_type),
        }
        return LaunchResult(
            provider_data=data, message=f"Spot Fleet {out.get('SpotFleetRequestId')} ({kind}) for {count} machines"
        )

    async def _asg(self, request: Request, template: Template, count: int) -> LaunchResult:
        lt_id = await self._launch_template(request, template)
        await self.aws.client("ec2")  # resolves the region the zone default needs
        zones = self.zones or [f"{self.aws.region}a"]
        params = p.asg_params(request, template, count, lt_id=lt_id, default_type=self.default_type, zones=zones)
        await self._or_drop_template(request, self._create_group(params))
        data = {"api": "ASG", "asg_name": params["AutoScalingGroupName"]}
        return LaunchResult(provider_data=data, message=f"Auto Scaling group {params['AutoScalingGroupName']}")

    # -- terminate --------------------------------------------------------
    async def terminate(self, request: Request, machines: Sequence[Machine]) -> dict[str, MachineStatus]:
        """Return `machines`: by id (RunInstances), or through their fleet or group, which goes whole when
        every live machine of the request is returned and otherwise shrinks so it does not replace them."""
        ids = [m.machine_id for m in machines]
        if not ids:
            return {}
        api = self._api(request.provider_data.get("api") or request.provider_api)
        if api == "RunInstances":
            return await self._terminate_ids(ids)
        live = {pm.machine_id: pm for pm in await self.describe(request, None) if pm.status.active}
        everything = set(live) <= set(ids)
        remaining = [pm for mid, pm in live.items() if mid not in ids]
        if api == "ASG":
            return await self._terminate_asg(request, ids, everything)
        if api in ("EC2Fleet", "SpotFleet"):
            return await self._terminate_fleet(request, api, ids, everything, remaining)
        raise ProviderError(f"The aws provider cannot return machines of provider_api '{api}'.")

    async def _terminate_fleet(
        self, request: Request, api: str, ids: list[str], everything: bool, remaining: list[ProvisionedMachine]
    ) -> dict[str, MachineStatus]:
        """All of it: the fleet goes with its instances. Some: a `maintain` fleet is shrunk first (so it does not
        replace them), then the instances are terminated by id."""
        spot = api == "SpotFleet"
        data = request.provider_data
        fleet_id, fleet_type = data.get("spot_fleet_id" if spot else "fleet_id"), data.get("fleet_type")
        if not fleet_id:
            fleet_id, fleet_type = await (self._find_spot_fleet(request) if spot else self._find_ec2_fleet(request))
        if everything and fleet_id:
            if spot:
                await self.aws.call(
                    "ec2", "CancelSpotFleetRequests", SpotFleetRequestIds=[fleet_id], TerminateInstances=True
                )
                await self._delete_launch_template(request)
            else:
                await self._delete_fleet(request, str(fleet_id))
            return dict.fromkeys(ids, MachineStatus.SHUTTING_DOWN)
        if fleet_id and fleet_type == "maintain":
            await self._shrink_fleet(spot, str(fleet_id), self._units(request, remaining))
        return await self._terminate_ids(ids)

    async def _shrink_fleet(self, spot: bool, fleet_id: str, capacity: int) -> None:
        """Lower a `maintain` fleet's target to what stays, without AWS terminating anything itself."""
        if spot:
            await self.aws.call(
                "ec2",
                "ModifySpotFleetRequest",
                SpotFleetRequestId=fleet_id,
                ExcessCapacityTerminationPolicy="noTermination",
                TargetCapacity=capacity,
            )
            return
        await self.aws.call(
            "ec2",
            "ModifyFleet",
            FleetId=fleet_id,
            ExcessCapacityTerminationPolicy="no-termination",
            TargetCapacitySpecification={"TotalTargetCapacity": capacity},
        )

    @staticmethod
    def _units(request: Request, remaining: list[ProvisionedMachine]) -> int:
        """Fleet capacity the remaining machines fill (instance-type weights; 1 each by default)."""
        weights: dict[str, float] = request.provider_data.get("weights") or {}
        return round(sum(weights.get(pm.instance_type or "", 1.0) for pm in remaining))

    async def _delete_fleet(self, request: Request, fleet_id: str) -> None:
        await self.aws.call("ec2", "DeleteFleets", FleetIds=[fleet_id], TerminateInstances=True)
        await self._delete_launch_template(request)

    async def _find_ec2_fleet(self, request: Request) -> tuple[str | None, str | None]:
        """The fleet of a request whose launch answer was never stored (engine died mid-launch)."""
        for fleet in await self.aws.paginate("ec2", "DescribeFleets", "Fleets"):
            if _tag(fleet, REQUEST_TAG) == request.request_id and fleet.get("FleetState") not in (
                "deleted",
                "deleted_terminating",
                "deleted-terminating",
            ):
                return fleet.get("FleetId"), fleet.get("Type")
        return None, None

    async def _find_spot_fleet(self, request: Request) -> tuple[str | None, str | None]:
        for cfg in await self.aws.paginate("ec2", "DescribeSpotFleetRequests", "SpotFleetRequestConfigs"):
            if _tag(cfg, REQUEST_TAG) == request.request_id and not str(cfg.get("SpotFleetRequestState")).startswith(
                "cancelled"
            ):
                return cfg.get("SpotFleetRequestId"), cfg.get("SpotFleetRequestConfig", {}).get("Type")
        return None, None

    async def _terminate_asg(self, request: Request, ids: list[str], everything: bool) -> dict[str, MachineStatus]:
        name = request.provider_data.get("asg_name") or p.resource_name(request)
        if everything:
            try:
                await self.aws.call(
                    "autoscaling", "DeleteAutoScalingGroup", AutoScalingGroupName=name, ForceDelete=True
                )
            except ProviderError as exc:
                if "not found" not in exc.message.lower():
                    raise
            await self._delete_launch_template(request)
            return dict.fromkeys(ids, MachineStatus.SHUTTING_DOWN)
        for i in range(0, len(ids), 20):  # DetachInstances takes at most 20 ids
            await self.aws.call(
                "autoscaling",
                "DetachInstances",
                AutoScalingGroupName=name,
                InstanceIds=ids[i : i + 20],
                ShouldDecrementDesiredCapacity=True,
            )
        return await self._terminate_ids(ids)

    async def _terminate_ids(self, ids: list[str]) -> dict[str, MachineStatus]:
        out: dict[str, MachineStatus] = {}
        for i in range(0, len(ids), 1000):
            chunk = ids[i : i + 1000]
            try:
                res = await self.aws.call("ec2", "TerminateInstances", InstanceIds=chunk)
            except ProviderError as exc:
                if exc.details.get("provider_code") not in _GONE_CODES:
                    raise
                # one unknown id fails the whole call: terminate the ones that exist, the rest are gone already
                known = await self.aws.paginate(
                    "ec2", "DescribeInstances", "Reservations", Filters=[{"Name": "instance-id", "Values": chunk}]
                )
                exist = [inst["InstanceId"] for r in known for inst in r.get("Instances", [])]
                out.update(dict.fromkeys(chunk, MachineStatus.TERMINATED))
                if not exist:
                    continue
                res = await self.aws.call("ec2", "TerminateInstances", InstanceIds=exist)
            for item in res.get("TerminatingInstances", []):
                out[item["InstanceId"]] = _STATES.get(item["CurrentState"]["Name"], MachineStatus.SHUTTING_DOWN)
        return out

    # -- leftovers ---------------------------------------------------------
    async def cleanup(self, request: Request) -> None:
        """The request is over and holds no machine: its launch template goes (it may be left from an
        engine that died between creating it and creating the fleet)."""
        if self._api(request.provider_data.get("api") or request.provider_api) != "RunInstances":
            await self._delete_launch_template(request)

    async def tagged_launch_templates(self) -> dict[str, str]:
        """Launch template name -> request id, for every launch template this provider tagged."""
        found = await self.aws.paginate(
            "ec2", "DescribeLaunchTemplates", "LaunchTemplates", Filters=[{"Name": "tag-key", "Values": [REQUEST_TAG]}]
        )
        return {str(t["LaunchTemplateName"]): rid for t in found if (rid := _tag(t, REQUEST_TAG)) is not None}

    async def delete_launch_template(self, name: str) -> None:
        try:
            await self.aws.call("ec2", "DeleteLaunchTemplate", LaunchTemplateName=name)
        except ProviderError as exc:
            log.info("launch template %s not deleted: %s", name, exc.message)

    # -- reclaimed, health ------------------------------------------------
    async def reclaimed(self) -> list[ProvisionedMachine]:
        """Our spot machines that AWS shut down (state reason not user-initiated), and the machines the
        interruption queue's events are about (`interruptions.py`).

        The lifecycle is checked here, not in the filter: moto does not implement `instance-lifecycle`.
        """
        reservations = await self.aws.paginate(
            "ec2",
            "DescribeInstances",
            "Reservations",
            Filters=[
                {"Name": "tag-key", "Values": [REQUEST_TAG]},
                {"Name": "instance-state-name", "Values": ["shutting-down", "terminated"]},
            ],
            MaxResults=1000,
        )
        out = []
        for res in reservations:
            for inst in res.get("Instances", []):
                reason = inst.get("StateReason") or {}
                if inst.get("InstanceLifecycle") != "spot" or str(reason.get("Code", "")).startswith("Client."):
                    continue  # we (or a person) terminated it
                pm = _machine(inst)
                pm.reason = f"spot interruption ({reason.get('Code') or 'reclaimed by AWS'})"
                out.append(pm)
        if self.queue_url:  # EventBridge's interruption events, when an instance names their queue
            out += await receive(self.aws, self.queue_url, self.queue_wait)
        return out

    async def end_interrupted(self, machines: list[ProvisionedMachine]) -> list[ProvisionedMachine]:
        """Interrupted machines of ours (the engine knows each) as they end: one being stopped or hibernated
        (`stopping`/`stopped`, which would stay, paid for and unseen) is terminated — or kept, stopped, with
        `interruption_keep_stopped`; the reason says which."""
        stopped = [pm for pm in machines if pm.status in (MachineStatus.STOPPING, MachineStatus.STOPPED)]
        if not stopped:
            return machines
        if self.keep_interrupted:
            for pm in stopped:
                pm.status = MachineStatus.STOPPED
                pm.reason = f"{pm.reason}; kept stopped (interruption_keep_stopped)"
            return machines
        states = await self._terminate_ids(sorted({pm.machine_id for pm in stopped}))
        for pm in stopped:
            pm.status = states.get(pm.machine_id, MachineStatus.SHUTTING_DOWN)
            pm.reason = f"{pm.reason}; terminated"
        return machines

    async def health(self) -> dict[str, Any]:
        try:
            zones = await self.aws.call("ec2", "DescribeAvailabilityZones")
        except ProviderError as exc:
            return {"healthy": False, "error": exc.message, "code": exc.details.get("provider_code")}
        return {
            "healthy": True,
            "region": self.aws.region,
            "zones": [z.get("ZoneName") for z in zones.get("AvailabilityZones", [])],
            "api_calls": sum(self.aws.calls.values()),
            "throttled": self.aws.throttled,
        }


def _cause(exc: BaseException) -> str:
    """`Code: message` of a provider error, for a request's message."""
    code = exc.details.get("provider_code") if isinstance(exc, ProviderError) else None
    text = exc.message if isinstance(exc, ProviderError) else str(exc)
    return f"{code}: {text}" if code and code not in text else text


def _tag(resource: Mapping[str, Any], key: str) -> str | None:
    for t in resource.get("Tags") or []:
        if t.get("Key") == key:
            return str(t.get("Value"))
    return None


def _machine(inst: Mapping[str, Any]) -> ProvisionedMachine:
    state = str((inst.get("State") or {}).get("Name", "pending"))
    status = _STATES.get(state, MachineStatus.PENDING)
    reason = None
    if status in (MachineStatus.SHUTTING_DOWN, MachineStatus.TERMINATED):
        reason = (inst.get("StateReason") or {}).get("Message") or None
    return ProvisionedMachine(
        machine_id=str(inst["InstanceId"]),
        status=status,
        name=inst.get("PrivateDnsName") or None,
        ip_address=inst.get("PrivateIpAddress") or None,
        public_ip_address=inst.get("PublicIpAddress") or None,
        instance_type=inst.get("InstanceType") or None,
        launched_at=inst.get("LaunchTime"),
        reason=reason,
    )
