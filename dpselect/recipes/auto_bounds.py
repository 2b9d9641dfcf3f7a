"""``quantile(..., bounds="auto")``: clamping bounds chosen privately, then the quantiles.

The recipe and its rule are :func:`~dpselect.recipes.quantiles.quantile_with_auto_bounds` and
:func:`~dpselect.recipes.quantiles.auto_bound_levels`, in the quantiles recipe (they call it and
it calls them); this module keeps their import path.
"""

from .quantiles import auto_bound_levels, quantile_with_auto_bounds

__all__ = ["auto_bound_levels", "quantile_with_auto_bounds"]
