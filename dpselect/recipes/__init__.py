"""Application recipes of the exponential mechanism (seeds 002, 003): the recipes layer.

Each recipe validates its public parameters, charges the ledger (``ledger=``) before touching
the private data, and returns a result dataclass with ``to_dict()`` and a readable ``str``:

- :func:`quantile`: quantiles and medians, over public candidates or continuous on bounds
  (Smith 2011), several at once by composition;
- :func:`best_price`: digital-goods pricing with the seed's revenue guarantee;
- :func:`select_hypothesis`: private hypothesis selection / PAC learning (seed 003,
  Theorem 6), with :func:`pac_sample_size` and :func:`threshold_hypotheses`;
- :func:`select`: the exponential mechanism for any score with a known sensitivity;
- :func:`choose_max_contributions` and :func:`choose_bounds`: a contribution bound
  (generalized exponential mechanism) and clamping bounds (quantiles over power-of-two bins)
  chosen privately;
- :func:`tune`: the best of a random number of private training runs (Papernot and Steinke
  2022);
- :func:`preview` and :func:`plot_preview`: the exact law of a selection on hypothetical
  scores, before any budget is spent.

``docs/examples.md`` works through the seeds' examples with these recipes.
"""

from .bounds import BoundsChoice, ContributionChoice, choose_bounds, choose_max_contributions
from .hypothesis import (
    HypothesisResult,
    pac_sample_size,
    select_hypothesis,
    threshold_hypotheses,
)
from .preview import PreviewResult, PreviewRow, plot_preview, preview
from .pricing import PriceResult, best_price, default_price_step, price_grid
from .quantile_result import QuantileResult
from .quantiles import quantile
from .select import SelectionResult, select
from .tune import TuneResult, tune

__all__ = [
    "BoundsChoice",
    "ContributionChoice",
    "HypothesisResult",
    "PreviewResult",
    "PreviewRow",
    "PriceResult",
    "QuantileResult",
    "SelectionResult",
    "TuneResult",
    "best_price",
    "choose_bounds",
    "choose_max_contributions",
    "default_price_step",
    "pac_sample_size",
    "plot_preview",
    "preview",
    "price_grid",
    "quantile",
    "select",
    "select_hypothesis",
    "threshold_hypotheses",
    "tune",
]
