"""dpselect: differentially private selection with exact sampling and honest accounting.

Layers (docs/architecture.md): ``dpselect.core`` (domains, metrics, measures, measurements),
``dpselect.sampling`` (randomness and exact samplers), ``dpselect.mechanisms`` (constructors
with privacy maps), ``dpselect.accounting`` (composition, conversions, the budget ledger). The
core vocabulary and the mechanism constructors are re-exported here.
"""

from . import accounting, core, mechanisms, sampling
from .core import *  # noqa: F403
from .core import __all__ as _core_all

__version__ = "0.1.0"

from .mechanisms import *  # noqa: F403
from .mechanisms import __all__ as _mechanisms_all

__all__ = [*_core_all, *_mechanisms_all, "accounting", "core", "mechanisms", "sampling"]
