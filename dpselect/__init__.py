"""dpselect: differentially private selection with exact sampling and honest accounting."""

from .core import *  # noqa: F403
from .core import __all__ as _core_all

__version__ = "0.1.0"

__all__ = [*_core_all]
