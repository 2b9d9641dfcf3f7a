"""``python -m dpselect`` runs the command line."""

from .cli import main

main()
