"""CPU and memory of an instance type, for the HostFactory / LSF template attributes.

The schedulers place jobs by `ncpus` and memory, so a wrong value over- or under-fills hosts. The peer
falls back to one fixed small type for anything it does not know; here an unknown type resolves to
None and the caller says so, instead of guessing.

Resolution order: the template's own `configuration` (`ncpus`, `memory_mb`, optional `ncores`, `arch`),
the `scheduler.instance_types` configuration table (type -> the same keys), the built-in table of
burstable types, then the regular families whose memory is a fixed multiple of the vCPU count
(m/c/r, generation 5 and later, plus m4).
"""

import re
from collections.abc import Mapping
from typing import Any, NamedTuple

__all__ = ["Shape", "resolve_shape"]


class Shape(NamedTuple):
    """What a scheduler needs to know about one machine (a NamedTuple: a dataclass would compile its methods at
    every HostFactory call's import; no postponed annotations, which NamedTuple would compile as ForwardRefs)."""

    ncpus: int
    memory_mb: int
    ncores: int
    arch: str = "X86_64"


_GIB = 1024

#: Burstable types: irregular memory per vCPU, so listed one by one (vCPUs, MiB).
_BURSTABLE: dict[str, tuple[int, int]] = {
    "nano": (2, 512),
    "micro": (2, 1 * _GIB),
    "small": (2, 2 * _GIB),
    "medium": (2, 4 * _GIB),
    "large": (2, 8 * _GIB),
    "xlarge": (4, 16 * _GIB),
    "2xlarge": (8, 32 * _GIB),
}
_T2: dict[str, tuple[int, int]] = {
    "nano": (1, 512),
    "micro": (1, 1 * _GIB),
    "small": (1, 2 * _GIB),
    "medium": (2, 4 * _GIB),
    "large": (2, 8 * _GIB),
    "xlarge": (4, 16 * _GIB),
    "2xlarge": (8, 32 * _GIB),
}

#: GiB of memory per vCPU of the regular families.
_GIB_PER_VCPU = {"m": 4, "c": 2, "r": 8}

#: vCPUs of a size name (`medium` exists only in some families, with one vCPU).
_SIZE_VCPUS = {"medium": 1, "large": 2, "xlarge": 4}

_REGULAR = re.compile(r"^(?P<family>[mcr])(?P<gen>\d)(?P<suffix>[a-z-]*)\.(?P<size>medium|large|(?P<n>\d*)xlarge)$")
_T_FAMILY = re.compile(r"^t(?P<gen>[234])(?P<suffix>[a-z]*)\.(?P<size>[a-z0-9]+)$")


def _arch(suffix: str) -> str:
    """Graviton families carry a `g` in their suffix (m6g, c7gn, t4g, r6gd)."""
    return "ARM64" if "g" in suffix else "X86_64"


def _builtin(instance_type: str) -> Shape | None:
    t = _T_FAMILY.match(instance_type)
    if t:
        return _burstable(t)
    r = _REGULAR.match(instance_type)
    return _regular(r) if r else None


def _burstable(t: re.Match[str]) -> Shape | None:
    table = _T2 if t["gen"] == "2" else _BURSTABLE
    if t["size"] not in table:
        return None
    cpus, mem = table[t["size"]]
    arch = "ARM64" if t["gen"] == "4" and "g" in t["suffix"] else _arch(t["suffix"])
    cores = cpus if t["gen"] == "2" or arch == "ARM64" else max(1, cpus // 2)
    return Shape(cpus, mem, cores, arch)


def _regular(r: re.Match[str]) -> Shape | None:
    if int(r["gen"]) < 5 and not (r["family"] == "m" and r["gen"] == "4"):
        return None
    cpus = _SIZE_VCPUS.get(r["size"]) or 4 * int(r["n"] or 1)
    arch = _arch(r["suffix"])
    cores = cpus if arch == "ARM64" or cpus == 1 else cpus // 2
    return Shape(cpus, cpus * _GIB_PER_VCPU[r["family"]] * _GIB, cores, arch)


def _from_mapping(data: Mapping[str, Any], fallback: Shape | None = None) -> Shape | None:
    """A shape from `ncpus`/`memory_mb` keys (`nram`/`mem` accepted), completing a partial one from `fallback`."""
    cpus = data.get("ncpus", fallback.ncpus if fallback else None)
    mem = next((data[k] for k in ("memory_mb", "nram", "mem") if k in data), fallback.memory_mb if fallback else None)
    if cpus is None or mem is None:
        return None
    arch = str(data.get("arch", fallback.arch if fallback else "X86_64"))
    cores = data.get("ncores", fallback.ncores if fallback and fallback.ncpus == int(cpus) else int(cpus))
    return Shape(int(cpus), int(mem), int(cores), arch)


def resolve_shape(
    instance_type: str | None,
    *,
    template_config: Mapping[str, Any] | None = None,
    table: Mapping[str, Any] | None = None,
) -> Shape | None:
    """The shape of `instance_type`, or None when nothing says what it is (never a guess)."""
    configured = (table or {}).get(instance_type or "")
    base = _from_mapping(configured) if isinstance(configured, Mapping) else None
    if base is None and instance_type:
        base = _builtin(instance_type)
    if template_config and any(k in template_config for k in ("ncpus", "memory_mb", "nram", "mem")):
        return _from_mapping(template_config, base)
    return base
