"""dpselect: differentially private selection with exact sampling and honest accounting.

Layers (docs/architecture.md): ``dpselect.core`` (domains, metrics, measures, measurements),
``dpselect.sampling`` (randomness and exact samplers), ``dpselect.accounting`` (composition,
conversions, the budget ledger). The core vocabulary is re-exported here.
"""

from . import accounting, core, sampling
from .core import *  # noqa: F403
from .core import __all__ as _core_all

__version__ = "0.1.0"

__all__ = [*_core_all, "accounting", "core", "sampling"]
