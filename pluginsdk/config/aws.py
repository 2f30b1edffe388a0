"""`provider.aws`: the AWS driver's group (docs/aws.md), in a module of its own so that a configuration that
does not give it never creates its model."""

from typing import ClassVar, Literal

from pydantic import Field

from .group import SettingsGroup

__all__ = ["AwsProviderSettings"]


class AwsProviderSettings(SettingsGroup):
    """`provider.aws`: the AWS driver (docs/aws.md)."""

    retired: ClassVar[dict[str, str]] = dict.fromkeys(
        ("retry_base_delay", "retry_max_delay"),
        "is gone: botocore's retry mode sets the backoff (provider.aws.retry_mode: standard or adaptive; "
        "provider.aws.max_attempts)",
    )

    endpoint_url: str | None = None
    region: str | None = None
    profile: str | None = None
    default_instance_type: str | None = None
    fleet_role: str | None = None
    availability_zones: list[str] | str | None = None
    retry_mode: Literal["standard", "adaptive", "legacy"] | None = None
    max_attempts: int = Field(5, ge=1, le=100)
    timeout: float = Field(30.0, gt=0)
    interruption_queue_url: str | None = None
    """SQS queue receiving EventBridge's EC2 interruption events (docs/providers.md)."""
    interruption_wait_seconds: int = Field(0, ge=0, le=20)
    """Long-poll seconds of each receive from it (0: off)."""
    interruption_keep_stopped: bool = False
    """Keep an instance its interruption stopped or hibernated (shown `stopped`, listed for return) instead of
    terminating it (docs/providers.md#interruptions-through-sqs)."""
