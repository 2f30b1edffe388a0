"""Running notebooks in the tests: the Jupyter modules, or a skip where they or a python3 kernel are missing."""

from __future__ import annotations

from typing import Any

import pytest


def jupyter() -> tuple[Any, Any]:
    """`nbformat` and `nbclient`; skips the calling test where either, or the python3 kernelspec, is missing."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        KernelSpecManager().get_kernel_spec("python3")
    except NoSuchKernel:
        pytest.skip("no python3 kernelspec installed (ipykernel missing)")
    return nbformat, nbclient
