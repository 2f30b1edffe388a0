"""CPU and memory from instance types: the built-in table, configuration, and no guessing."""

from __future__ import annotations

import pytest

from pluginsdk.cli import STRATEGIES as CLI_STRATEGIES
from pluginsdk.schedulers import STRATEGIES, get_strategy
from pluginsdk.schedulers.instance_types import Shape, resolve_shape


@pytest.mark.parametrize(("instance_type", "shape"), [
    ("t2.micro", Shape(1, 1024, 1, "X86_64")),
    ("t3.micro", Shape(2, 1024, 1, "X86_64")),
    ("t3a.2xlarge", Shape(8, 32768, 4, "X86_64")),
    ("t4g.medium", Shape(2, 4096, 2, "ARM64")),
    ("m5.xlarge", Shape(4, 16384, 2, "X86_64")),
    ("m4.large", Shape(2, 8192, 1, "X86_64")),
    ("c5.9xlarge", Shape(36, 73728, 18, "X86_64")),
    ("c7g.4xlarge", Shape(16, 32768, 16, "ARM64")),
    ("r6i.2xlarge", Shape(8, 65536, 4, "X86_64")),
    ("m6g.medium", Shape(1, 4096, 1, "ARM64")),
])  # fmt: skip
def test_builtin_table(instance_type: str, shape: Shape) -> None:
    assert resolve_shape(instance_type) == shape


@pytest.mark.parametrize("instance_type", ["c4.large", "r4.large", "x2iedn.xlarge", "m5.metal", "t3.huge", "", None])
def test_unknown_types_resolve_to_none(instance_type: str | None) -> None:
    assert resolve_shape(instance_type) is None


def test_configuration_table_then_template_configuration_win() -> None:
    table = {"c4.large": {"ncpus": 2, "memory_mb": 3840}}
    assert resolve_shape("c4.large", table=table) == Shape(2, 3840, 2)
    assert resolve_shape("m5.large", table={"m5.large": {"ncpus": 2, "memory_mb": 9000, "ncores": 1}}).memory_mb == 9000
    # a template may override part of a known shape; the rest comes from the table
    assert resolve_shape("m5.xlarge", template_config={"memory_mb": 12000}) == Shape(4, 12000, 2)
    assert resolve_shape(None, template_config={"ncpus": 3, "mem": 5000}) == Shape(3, 5000, 3)


def test_strategy_names_agree_and_unknown_is_a_configuration_error() -> None:
    assert CLI_STRATEGIES == STRATEGIES
    assert [get_strategy(n).name for n in STRATEGIES] == list(STRATEGIES)
    from pluginsdk.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="slurm"):
        get_strategy("slurm")
