"""Cost of the storable-value check every operation runs on its input (issue 12 item 11).

    python bench/input_bench.py [--quick]

Builds a few typical operations (`OperationSpec.build`, what every interface does per call) with the check
and with it bypassed, in alternating rounds, and prints one table: microseconds per build and the ratio.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import timeit
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CASES: list[tuple[str, dict[str, Any]]] = [
    ("get_template", {"template_id": "web"}),
    ("list_templates", {"limit": "10"}),
    ("list_api_keys", {"page_size": "5"}),
    ("create_request", {"template_id": "web", "count": 2, "tags": {"team": "hpc"}}),
    (
        "create_template",
        {
            "template_id": "web",
            "image_id": "ami-1",
            "tags": {"team": "hpc", "env": "prod"},
            "instance_types": {"t3.small": 1.0, "t3.large": 2.0},
            "configuration": {"spot": {"max_price": 0.05}, "zones": ["a", "b", "c"]},
        },
    ),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    args = parser.parse_args()
    import pluginsdk.models.values as values
    from pluginsdk.operations import CATALOG

    number = 2_000 if args.quick else 20_000
    real = values.is_storable

    def bypass(value: Any, depth: int = 0) -> bool:
        return True

    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {number} builds per round, best of 3")
    print(f"{'operation':<18} {'checked µs':>11} {'bypassed µs':>12} {'ratio':>6}")
    for name, params in CASES:
        spec = CATALOG[name]
        spec.build(params)
        best = {True: float("inf"), False: float("inf")}
        for _ in range(3):
            for checked in (True, False):
                values.is_storable = real if checked else bypass  # type: ignore[assignment]
                run = functools.partial(spec.build, params)
                best[checked] = min(best[checked], timeit.timeit(run, number=number) / number)
        values.is_storable = real  # type: ignore[assignment]
        on, off = best[True] * 1e6, best[False] * 1e6
        print(f"{name:<18} {on:>11.1f} {off:>12.1f} {on / off:>6.2f}")


if __name__ == "__main__":
    main()
