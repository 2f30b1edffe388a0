"""`python -m pluginsdk` runs the command line."""

from .cli import main

main()
