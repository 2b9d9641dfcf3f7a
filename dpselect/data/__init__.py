"""The data layer: sources opened as engines (:class:`Engine`) that compute score vectors,
counts and histograms; :mod:`dpselect.data.rules` holds the rules every engine follows."""

from __future__ import annotations

from .engine import Engine

__all__ = ["Engine"]
