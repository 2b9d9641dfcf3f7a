"""Randomness and exact samplers (the lowest layer beside ``dpselect.core``)."""

from .source import (
    InsecureSeededSource,
    RandomSource,
    ScriptedSource,
    SystemRandomSource,
    default_source,
    resolve_source,
)
from .uniform import LazyUniform

__all__ = [
    "InsecureSeededSource",
    "LazyUniform",
    "RandomSource",
    "ScriptedSource",
    "SystemRandomSource",
    "default_source",
    "resolve_source",
]
