"""Mechanism constructors: each returns a :class:`~dpselect.core.Measurement` with its map.

See docs/mechanisms.md (and docs/mechanisms_topk_counts.md) for each constructor's law,
privacy map and proof.
"""

from .exponential import make_exponential_mechanism
from .gaussian import (
    gaussian_delta_analytic,
    gaussian_sigma_analytic,
    gaussian_sigma_classic,
    make_gaussian,
)
from .generalized_exponential import make_generalized_exponential_mechanism
from .laplace import make_laplace
from .private_candidates import make_repeat_and_select, make_select_private_candidate
from .report_noisy_max import (
    make_base_exponential_candidates_gumbel,
    make_noisy_max,
    make_noisy_top_k,
    make_report_noisy_max_gumbel,
)
from .topk_counts import (
    NoisyTopK,
    make_gumbel_top_k_with_counts,
    make_limited_domain_top_k,
    make_oneshot_laplace_top_k,
)
from .utility import (
    UtilityBound,
    hair_colour_example,
    selection_probabilities,
    utility_bound,
)

__all__ = [
    "NoisyTopK",
    "UtilityBound",
    "gaussian_delta_analytic",
    "gaussian_sigma_analytic",
    "gaussian_sigma_classic",
    "hair_colour_example",
    "make_base_exponential_candidates_gumbel",
    "make_exponential_mechanism",
    "make_gaussian",
    "make_generalized_exponential_mechanism",
    "make_gumbel_top_k_with_counts",
    "make_laplace",
    "make_limited_domain_top_k",
    "make_noisy_max",
    "make_noisy_top_k",
    "make_oneshot_laplace_top_k",
    "make_repeat_and_select",
    "make_report_noisy_max_gumbel",
    "make_select_private_candidate",
    "selection_probabilities",
    "utility_bound",
]
