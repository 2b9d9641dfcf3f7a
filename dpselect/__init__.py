"""dpselect: differentially private selection with exact sampling and honest accounting.

The top level is the task tier: the recipes, their results, the :class:`Ledger`, the errors
and the randomness sources (``dpselect.__all__``, 40 names):

- the front door: :class:`Session` (the data, its privacy unit, the :class:`Contributions`
  bounds and the ledger, bound once; its queries carry the recipes' names), and
  :func:`explain`, which returns any query's :class:`Plan` before it is paid;
- recipes (shorthands that run one query): :func:`top_k`, :func:`most_common` (the main
  job), :func:`partition_selection`, :func:`quantile`, :func:`best_price`,
  :func:`select_hypothesis`, :func:`select`, :func:`tune`, :func:`choose_max_contributions`,
  :func:`choose_bounds`, :func:`preview`, :func:`preview_top_k`, :func:`plot_preview`, and
  the ``dpselect`` command;
- their results, all derived from :class:`Result` (``to_dict()``, ``to_frame()``, ``str``).

The framework tier lives in sub-namespaces (as OpenDP's ``dp.m`` and ``dp.t``):

- ``dpselect.mechanisms``: constructors that return measurements with privacy maps;
- ``dpselect.accounting``: composition, conversions, the budget ledger;
- ``dpselect.core``: domains, metrics, measures, measurements, chaining, calibration, errors;
- ``dpselect.sampling``: randomness sources and exact samplers;
- ``dpselect.recipes``: the recipes and their helpers (``pac_sample_size``, ``price_grid``);
- ``dpselect.data``: data files and frames to score vectors (DuckDB, Spark).

Everything is loaded on first use (PEP 562), so ``import dpselect`` and the ``dpselect``
command start fast. Framework names are read from their sub-namespace
(``dpselect.mechanisms.make_laplace``, ``dpselect.core.vector_domain``), not from the top level.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

__version__ = "0.2.0"

if TYPE_CHECKING:  # the eager imports, for type checkers and readers
    from . import accounting, core, data, mechanisms, recipes, sampling  # noqa: F401
    from .accounting import Ledger
    from .core.errors import (
        BudgetExceeded,
        CalibrationError,
        DataError,
        DPSelectError,
        LedgerError,
        ParameterError,
    )
    from .planning import Plan, explain
    from .planning.contributions import Contributions
    from .recipes import (
        BoundsChoice,
        ContributionChoice,
        HypothesisResult,
        PreviewResult,
        PriceResult,
        QuantileResult,
        SelectionResult,
        TuneResult,
        choose_bounds,
        choose_max_contributions,
        plot_preview,
        preview,
        select,
        select_hypothesis,
        tune,
    )
    from .recipes.grouping import GroupedResult
    from .recipes.preview import TopKPreview, preview_top_k
    from .recipes.result import Result
    from .recipes.top_k_result import TopKResult
    from .recipes.unknown_domain_result import KeysResult
    from .sampling.source import InsecureSeededSource, RandomSource, SystemRandomSource
    from .session import Session
    from .shorthands import best_price, most_common, partition_selection, quantile, top_k

#: The task tier: each public name and the module that defines it.
_NAMED = {
    # the front door
    "Session": "session",
    "Contributions": "planning",
    "Plan": "planning",
    "explain": "planning",
    # recipes
    "top_k": "shorthands",
    "most_common": "shorthands",
    "partition_selection": "shorthands",
    "quantile": "shorthands",
    "best_price": "shorthands",
    "select_hypothesis": "recipes",
    "select": "recipes",
    "tune": "recipes",
    "choose_max_contributions": "recipes",
    "choose_bounds": "recipes",
    "preview": "recipes",
    "preview_top_k": "recipes.preview",
    "plot_preview": "recipes",
    # results
    "Result": "recipes.result",
    "TopKResult": "recipes.top_k_result",
    "KeysResult": "recipes.unknown_domain_result",
    "GroupedResult": "recipes.grouping",
    "QuantileResult": "recipes",
    "PriceResult": "recipes",
    "HypothesisResult": "recipes",
    "SelectionResult": "recipes",
    "TuneResult": "recipes",
    "PreviewResult": "recipes",
    "TopKPreview": "recipes.preview",
    "BoundsChoice": "recipes",
    "ContributionChoice": "recipes",
    # the ledger, errors and sources
    "Ledger": "accounting",
    "DPSelectError": "core.errors",
    "ParameterError": "core.errors",
    "DataError": "core.errors",
    "BudgetExceeded": "core.errors",
    "LedgerError": "core.errors",
    "CalibrationError": "core.errors",
    "RandomSource": "sampling.source",
    "SystemRandomSource": "sampling.source",
    "InsecureSeededSource": "sampling.source",
}

__all__ = [
    "BoundsChoice",
    "BudgetExceeded",
    "CalibrationError",
    "ContributionChoice",
    "Contributions",
    "DPSelectError",
    "DataError",
    "GroupedResult",
    "HypothesisResult",
    "InsecureSeededSource",
    "KeysResult",
    "Ledger",
    "LedgerError",
    "ParameterError",
    "Plan",
    "PreviewResult",
    "PriceResult",
    "QuantileResult",
    "RandomSource",
    "Result",
    "SelectionResult",
    "Session",
    "SystemRandomSource",
    "TopKPreview",
    "TopKResult",
    "TuneResult",
    "best_price",
    "choose_bounds",
    "choose_max_contributions",
    "explain",
    "most_common",
    "partition_selection",
    "plot_preview",
    "preview",
    "preview_top_k",
    "quantile",
    "select",
    "select_hypothesis",
    "top_k",
    "tune",
]

_SUBPACKAGES = ("accounting", "core", "data", "mechanisms", "recipes", "sampling")


def _module(name: str) -> Any:
    return importlib.import_module(f"{__name__}.{name}")


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if name in _SUBPACKAGES:
        value = _module(name)
    elif name in _NAMED:
        value = getattr(_module(_NAMED[name]), name)
    else:
        # a submodule such as ``dpselect.session``, as after the eager imports
        if importlib.util.find_spec(f"{__name__}.{name}") is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = _module(name)
    globals()[name] = value  # later look-ups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_SUBPACKAGES))
