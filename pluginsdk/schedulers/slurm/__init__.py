"""Slurm cloud bursting: the power-saving programs and the worker behind them (docs/schedulers.md, "Slurm").

Slurm calls `ResumeProgram` / `SuspendProgram` / `ResumeFailProgram` with a hostlist and waits for them, and
keeps none of their output. So the programs (`programs.py`) only expand the hostlist, read the resume file,
leave the work as one file in a spool directory (`spool.py`) and start the worker; the worker (`worker.py`)
does the provider work through the SDK — one machine per node, named after it (`nodes.py` maps nodes to
templates) — marks nodes Slurm cannot have down with the reason (`scontrol.py`), and deletes the spool file
only when the work is recorded. A worker killed half way leaves the file; the next worker, or `pluginsdk
slurm reconcile` (`reconcile.py`), finishes it. `conf.py` prints the `slurm.conf` lines for the templates.
"""
