"""Provisioning handlers, one module per operation group (listed in `backends.local.engine.HANDLER_MODULES`).

Each declares its handlers in its own table (`handlers = HandlerTable(Deps)`); the engine's registry
loads a module and registers its table on first use (`backends.local.engine`), so a CLI call imports
only its own. Each handler receives the engine's `Deps` (`backends/local/deps.py`: store, templates,
providers, tier-2 filters), never the engine.
"""
