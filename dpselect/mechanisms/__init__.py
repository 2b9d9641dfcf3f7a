"""Mechanism constructors: each returns a :class:`~dpselect.core.Measurement` with its map.

See docs/mechanisms.md (and docs/mechanisms_topk_counts.md) for each constructor's law,
privacy map and proof.

``__all__`` holds every public ``make_*`` constructor defined in this package's modules
(tests/mechanisms/test_exports.py checks it), with a few helpers (``gaussian_sigma_*``,
``utility_bound``, ``NoisyTopK``, ...). Importing :mod:`dpselect` does not import this package:
it loads on first use.
"""

from .decimal_grain import make_grain_histogram
from .exponential import make_exponential_mechanism
from .gaussian import (
    gaussian_delta_analytic,
    gaussian_sigma_analytic,
    gaussian_sigma_classic,
    make_gaussian,
)
from .generalized_exponential import make_generalized_exponential_mechanism
from .histogram_top_k import make_noisy_histogram_top_k
from .joint_top_k import make_joint_top_k
from .laplace import make_laplace
from .partition_selection import (
    make_optimal_partition_selection,
    make_threshold_partition_selection,
)
from .policy_top_k import make_policy_top_k
from .private_candidates import make_repeat_and_select, make_select_private_candidate
from .quantile_candidates import make_candidate_quantile, make_candidate_quantiles
from .quantile_continuous import make_continuous_quantile
from .quantile_joint import make_joint_quantiles
from .quantile_recursive import make_recursive_quantiles
from .quantile_tree import make_tree_quantiles
from .report_noisy_max import (
    make_base_exponential_candidates_gumbel,
    make_noisy_max,
    make_noisy_top_k,
    make_report_noisy_max_gumbel,
)
from .set_union import make_policy_set_union
from .topk_counts import (
    NoisyTopK,
    make_gumbel_top_k_with_counts,
    make_limited_domain_top_k,
    make_oneshot_laplace_top_k,
)
from .tuning import make_random_run
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
    "make_candidate_quantile",
    "make_candidate_quantiles",
    "make_continuous_quantile",
    "make_exponential_mechanism",
    "make_gaussian",
    "make_generalized_exponential_mechanism",
    "make_grain_histogram",
    "make_gumbel_top_k_with_counts",
    "make_joint_quantiles",
    "make_joint_top_k",
    "make_laplace",
    "make_limited_domain_top_k",
    "make_noisy_histogram_top_k",
    "make_noisy_max",
    "make_noisy_top_k",
    "make_oneshot_laplace_top_k",
    "make_optimal_partition_selection",
    "make_policy_set_union",
    "make_policy_top_k",
    "make_random_run",
    "make_recursive_quantiles",
    "make_repeat_and_select",
    "make_report_noisy_max_gumbel",
    "make_select_private_candidate",
    "make_threshold_partition_selection",
    "make_tree_quantiles",
    "selection_probabilities",
    "utility_bound",
]
