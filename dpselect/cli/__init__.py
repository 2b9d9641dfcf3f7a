"""The ``dpselect`` command line (recipes layer). Entry point: :func:`main`."""

from .main import main

__all__ = ["main"]
