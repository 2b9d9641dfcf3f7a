"""Top-k for counts, with noisy counts (seed 004 and its references).

Three constructors, each in its own module and re-exported here:

- :func:`~dpselect.mechanisms.oneshot_laplace.make_oneshot_laplace_top_k`: the one-shot
  Laplace top-k of Qiao, Su and Zhang (2021), which releases the *set* of the top ``k`` indices
  (sorted by index, no ranking) from one draw of Laplace noise, ``(epsilon, delta)``-DP for
  ``epsilon < 0.2``, ``delta < 0.05``, and optionally their counts with fresh noise.
- :func:`~dpselect.mechanisms.limited_domain.make_limited_domain_top_k`: the limited-domain
  mechanism of Durfee and Rogers (2019) for histograms whose items are not public: it sees only
  the true top ``k_bar`` counts and may stop early.
- :func:`~dpselect.mechanisms.gumbel_counts.make_gumbel_top_k_with_counts`: one-shot Gumbel
  top-k (``k`` rounds of the exponential mechanism, seed 004 Theorem 1) followed by exact
  discrete Laplace or discrete Gaussian noise on the selected counts, accounted together.

What the three share, the result type :class:`NoisyTopK` and the checks of count-vector
domains and metrics, is in :mod:`~dpselect.mechanisms.noisy_counts` (which the constructors
import; this module only re-exports) and re-exported here. ``docs/mechanisms_topk_counts.md``
gives each law, map and proof, and seed 004's noise comparison with numbers.
"""

from __future__ import annotations

from .gumbel_counts import make_gumbel_top_k_with_counts
from .limited_domain import make_limited_domain_top_k
from .noisy_counts import (
    NoisyTopK,
    check_count_metric,
    check_count_vector_domain,
    check_k,
    count_vector,
    noisy_values,
)
from .oneshot_laplace import make_oneshot_laplace_top_k

__all__ = [
    "NoisyTopK",
    "check_count_metric",
    "check_count_vector_domain",
    "check_k",
    "count_vector",
    "make_gumbel_top_k_with_counts",
    "make_limited_domain_top_k",
    "make_oneshot_laplace_top_k",
    "noisy_values",
]
