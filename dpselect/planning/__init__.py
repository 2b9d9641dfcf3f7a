"""Planning: what a release will do, decided from public facts before anything is charged.

:class:`Contributions` holds the contribution bounds of a privacy unit as one value;
:class:`Plan` holds a release's decided cost, mechanism and shares, and :func:`explain` returns
it for any query without reading a row or charging (docs/session.md, "Explain before paying").
:mod:`dpselect.planning.top_k_request` and :mod:`dpselect.planning.partition_selection_request`
check a top-k's and a partition selection's public arguments into one request before anything
is opened or charged; :mod:`dpselect.planning.quantile_request` and
:mod:`dpselect.planning.price_request` hold a quantile's and a best price's arguments as one
``QuantileRequest`` and ``PriceRequest``. The planners of values from the data and of groups
(:mod:`dpselect.planning.partition_selection_plan`, :mod:`dpselect.planning.unknown_domain_plan`,
:mod:`dpselect.planning.group_plan`, :mod:`dpselect.planning.grouped_keys_plan`,
:mod:`dpselect.planning.grouped_top_k_plan`, with the choices of
:mod:`dpselect.planning.unknown_domain_choice`) return each release's mechanism, charge,
parameters and stages from public facts.
This package sits below the recipes: they build what it describes.
"""

from .contributions import Contributions
from .explaining import explain
from .plan import Plan

__all__ = ["Contributions", "Plan", "explain"]
