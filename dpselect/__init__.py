"""dpselect: differentially private selection with exact sampling and honest accounting.

Layers (docs/architecture.md), each importing only those below it:

- recipes: :func:`top_k`, :func:`most_common` (the main job), :func:`quantile`,
  :func:`best_price`, :func:`select_hypothesis`, :func:`select`, :func:`preview`, and the
  ``dpselect`` command;
- ``dpselect.data``: data files and frames to score vectors (DuckDB);
- ``dpselect.mechanisms`` (constructors with privacy maps) and ``dpselect.accounting``
  (composition, conversions, the budget ledger);
- ``dpselect.core`` (domains, metrics, measures, measurements) and ``dpselect.sampling``
  (randomness and exact samplers).

The core vocabulary, the mechanism constructors and the recipes are re-exported here.
"""

from . import accounting, core, data, mechanisms, recipes, sampling
from .accounting import Ledger
from .api import TopKResult, most_common, top_k
from .core import *  # noqa: F403
from .core import __all__ as _core_all
from .mechanisms import *  # noqa: F403
from .mechanisms import __all__ as _mechanisms_all
from .recipes import *  # noqa: F403
from .recipes import __all__ as _recipes_all

__version__ = "0.1.0"

__all__ = [
    *_core_all,
    *_mechanisms_all,
    *_recipes_all,
    "Ledger",
    "TopKResult",
    "accounting",
    "core",
    "data",
    "mechanisms",
    "most_common",
    "recipes",
    "sampling",
    "top_k",
]
