"""`python -m pluginsdk` runs the command line."""

from ._entry import main

main()
