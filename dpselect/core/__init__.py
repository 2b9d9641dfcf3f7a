"""The core vocabulary of dpselect: domains, metrics, measures, transformations,
measurements, chaining, calibration and errors (seeds 000 and 001).

The errors are imported at once (the command line needs them and they are light); the rest is
loaded on first use (PEP 562), so ``from dpselect.core.errors import ...`` does not import
NumPy or python-flint."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .errors import (
    BudgetExceeded,
    CalibrationError,
    ChainError,
    DataError,
    DomainError,
    DPSelectError,
    LedgerError,
    MeasureError,
    MetricError,
    ParameterError,
    PrivacyBudgetExceeded,
    PrivacyMapError,
)

if TYPE_CHECKING:  # the eager imports, for type checkers and readers
    from .arithmetic import add_up, div_up, exact, float_down, float_up, mul_up, sqrt_up
    from .calibration import binary_search, binary_search_param
    from .domains import (
        AnyDomain,
        AtomDomain,
        Domain,
        FloatDomain,
        IntDomain,
        NaNFloatDomain,
        VectorDomain,
        atom_domain,
        vector_domain,
    )
    from .measurement import Measurement, Transformation, make_chain
    from .measures import (
        Approximate,
        MaxDivergence,
        Measure,
        RenyiDivergence,
        ZeroConcentratedDivergence,
    )
    from .metrics import (
        ChangeOneDistance,
        InfDifferenceDistance,
        L1Distance,
        L2Distance,
        LInfDistance,
        Metric,
        RangeDistance,
        SymmetricDistance,
    )

__all__ = [
    "AnyDomain",
    "Approximate",
    "AtomDomain",
    "BudgetExceeded",
    "CalibrationError",
    "ChainError",
    "ChangeOneDistance",
    "DPSelectError",
    "DataError",
    "Domain",
    "DomainError",
    "FloatDomain",
    "InfDifferenceDistance",
    "IntDomain",
    "L1Distance",
    "L2Distance",
    "LInfDistance",
    "LedgerError",
    "MaxDivergence",
    "Measure",
    "MeasureError",
    "Measurement",
    "Metric",
    "MetricError",
    "NaNFloatDomain",
    "ParameterError",
    "PrivacyBudgetExceeded",
    "PrivacyMapError",
    "RangeDistance",
    "RenyiDivergence",
    "SymmetricDistance",
    "Transformation",
    "VectorDomain",
    "ZeroConcentratedDivergence",
    "add_up",
    "atom_domain",
    "binary_search",
    "binary_search_param",
    "div_up",
    "exact",
    "float_down",
    "float_up",
    "make_chain",
    "mul_up",
    "sqrt_up",
    "vector_domain",
]


#: Submodules whose ``__all__`` names are re-exported here, loaded on first use.
_SUBMODULES = ("arithmetic", "calibration", "domains", "measurement", "measures", "metrics")


def __getattr__(name: str) -> Any:
    if name in __all__:
        for sub in _SUBMODULES:
            module = importlib.import_module(f"{__name__}.{sub}")
            if name in module.__all__:
                value = getattr(module, name)
                globals()[name] = value
                return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
