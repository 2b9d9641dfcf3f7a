"""Privacy accounting: composition theorems, conversions, combinators and a durable ledger.

Which theorem applies when is described in ``docs/accounting.md``. Every function rounds toward
a larger privacy loss (and a smaller per-query budget), evaluating transcendental formulas in
``arb`` interval arithmetic (python-flint) and summing losses as exact fractions.
"""

from .best import THEOREMS, CompositionResult, MechanismLoss, best_epsilon
from .combinators import (
    AdaptiveCompositor,
    PrivacyFilter,
    make_adaptive_composition,
    make_composition,
    make_privacy_filter,
)
from .composition import (
    advanced_composition,
    advanced_composition_corollary,
    advanced_composition_inverse,
    basic_composition,
)
from .ledger import APPLICATION_ID, ROWS, Ledger, LedgerEntry, LedgerTotal, Quote, UnitTotal
from .optimal import (
    bounded_range_composition,
    bounded_range_composition_delta,
    kov_heterogeneous_composition,
    optimal_homogeneous_composition,
    optimal_homogeneous_delta,
)
from .renyi import (
    DEFAULT_ORDERS,
    RenyiCurve,
    bounded_range_rdp,
    compose_rdp,
    gaussian_rdp,
    pure_dp_rdp,
    rdp_to_approx_dp,
    zcdp_rdp,
)
from .zcdp import (
    approx_dp_to_zcdp_budget,
    bounded_range_to_zcdp,
    cks_epsilon_at_order,
    cks_optimal_order,
    gaussian_zcdp,
    pure_dp_to_zcdp,
    zcdp_composition,
    zcdp_to_approx_dp,
)

__all__ = [
    "APPLICATION_ID",
    "DEFAULT_ORDERS",
    "ROWS",
    "THEOREMS",
    "AdaptiveCompositor",
    "CompositionResult",
    "Ledger",
    "LedgerEntry",
    "LedgerTotal",
    "MechanismLoss",
    "PrivacyFilter",
    "Quote",
    "RenyiCurve",
    "UnitTotal",
    "advanced_composition",
    "advanced_composition_corollary",
    "advanced_composition_inverse",
    "approx_dp_to_zcdp_budget",
    "basic_composition",
    "best_epsilon",
    "bounded_range_composition",
    "bounded_range_composition_delta",
    "bounded_range_rdp",
    "bounded_range_to_zcdp",
    "cks_epsilon_at_order",
    "cks_optimal_order",
    "compose_rdp",
    "gaussian_rdp",
    "gaussian_zcdp",
    "kov_heterogeneous_composition",
    "make_adaptive_composition",
    "make_composition",
    "make_privacy_filter",
    "optimal_homogeneous_composition",
    "optimal_homogeneous_delta",
    "pure_dp_rdp",
    "pure_dp_to_zcdp",
    "rdp_to_approx_dp",
    "zcdp_composition",
    "zcdp_rdp",
    "zcdp_to_approx_dp",
]
