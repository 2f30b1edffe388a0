"""The structural tests read our source as syntax trees made in a child interpreter (`tests.support.sources`).

In CPython 3.11 the AST converter counts its recursion depth in one counter per interpreter: a parse that runs a
finalizer (the garbage collector, mid-parse) which lets another thread parse fails with "AST constructor
recursion depth mismatch". Tests in one process leave such threads (servers' threads format tracebacks, which
parse the failing line), so a structural test parsing in process failed on a worker of the parallel suite.
"""

from __future__ import annotations

import ast
import gc
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tests.support.sources import ROOT, parsed

_PARSING = re.compile(r"\bast\.parse\(|\bcc_visit\(|PyCF_ONLY_AST")


class _Cycle:
    """Garbage whose finalizer lets other threads run, as a socket's or a file's close does."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        time.sleep(0.0001)


@contextmanager
def _another_thread_parsing() -> Iterator[None]:
    stop = threading.Event()

    def parse() -> None:
        while not stop.is_set():
            ast.parse("x = (1 + 2) * 3")
            time.sleep(0)

    thread = threading.Thread(target=parse, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def _failures(parse: Callable[[str], object], source: str, times: int) -> int:
    """Parses of `source` that fail while another thread parses and collected garbage lets it run."""
    failed = 0
    with _another_thread_parsing():
        for _ in range(times):
            for _ in range(20):
                _Cycle()
            try:
                parse(source)
            except SystemError:
                failed += 1
    return failed


def test_a_tree_made_in_a_child_is_untouched_by_threads_parsing_here() -> None:
    source = "\n".join(p.read_text() for p in sorted((ROOT / "pluginsdk" / "server").rglob("*.py"))[:10])
    threshold = gc.get_threshold()
    gc.set_threshold(50)  # collections mid-parse, as a busy process has them
    try:
        in_process = _failures(ast.parse, source, times=20)
        in_a_child = _failures(lambda text: parsed({"s.py": text}), source, times=5)
    finally:
        gc.set_threshold(*threshold)
    assert in_a_child == 0
    if sys.version_info[:2] == (3, 11):  # the hazard itself, on the interpreter CI runs
        assert in_process > 0


def test_only_the_support_module_parses() -> None:
    """Every structural test takes its trees from `tests.support.sources`."""
    own = {ROOT / "tests" / "support" / "sources.py", ROOT / "tests" / "test_source_trees.py"}
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if path not in own
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if _PARSING.search(line)
    ]
    assert found == []
