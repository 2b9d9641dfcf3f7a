"""Mechanism constructors: each returns a :class:`~dpselect.core.Measurement` with its map.

See docs/mechanisms.md for each constructor's law, privacy map and proof.
"""

from .exponential import make_exponential_mechanism
from .report_noisy_max import (
    make_base_exponential_candidates_gumbel,
    make_noisy_max,
    make_noisy_top_k,
    make_report_noisy_max_gumbel,
)

__all__ = [
    "make_base_exponential_candidates_gumbel",
    "make_exponential_mechanism",
    "make_noisy_max",
    "make_noisy_top_k",
    "make_report_noisy_max_gumbel",
]
