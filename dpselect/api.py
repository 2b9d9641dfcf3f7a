"""The top-k recipe's old address, kept for old imports: ``from dpselect.api import top_k``.

The code is :mod:`dpselect.recipes.top_k`, one recipe among the others (issue 23); this module
only re-exports its public names, the same objects (``dpselect.api.top_k is dpselect.top_k``).
New code imports from :mod:`dpselect` (``dp.top_k``, ``dp.most_common``, ``dp.TopKResult``)
or from :mod:`dpselect.recipes.top_k`.
"""

from __future__ import annotations

from .recipes.top_k import (
    AUTO_FRACTION,
    CONFIDENCE,
    LIMITED_DOMAIN,
    MECHANISMS,
    Mechanism,
    TopKResult,
    check_auto_fraction,
    most_common,
    top_k,
)

__all__ = [
    "AUTO_FRACTION",
    "CONFIDENCE",
    "LIMITED_DOMAIN",
    "MECHANISMS",
    "Mechanism",
    "TopKResult",
    "check_auto_fraction",
    "most_common",
    "top_k",
]
