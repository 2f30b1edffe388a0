"""IBM Spectrum Symphony HostFactory: attributes `type`, `ncpus`, `nram`; return entries carry `gracePeriod`."""

from __future__ import annotations

from typing import ClassVar

from ._hpc import HpcStrategy

__all__ = ["HostFactoryStrategy"]


class HostFactoryStrategy(HpcStrategy):
    """The HostFactory provider-plugin contract (five scripts, JSON in via `-f`, JSON out)."""

    name: ClassVar[str] = "hostfactory"
    memory_attribute: ClassVar[str] = "nram"
