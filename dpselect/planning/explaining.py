"""``explain(query, ...)``: run a query up to its charge, and return its plan instead.

Every recipe decides its whole release from public facts before its one charge, and charges
through :func:`dpselect.recipes.release.charge_then`, the only step before which no row is
read. While :func:`explain` runs a query, that step hands its :class:`~.plan.Plan` back here
(:func:`stop_here`) instead of charging: the query's own checks run (a refusal is raised as
it would be), nothing is read from the rows, nothing is charged, nothing is released.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import ParamSpec

from ..core.errors import ParameterError
from .plan import Plan

__all__ = ["explain", "explaining", "stop_here"]

P = ParamSpec("P")

_EXPLAINING: contextvars.ContextVar[bool] = contextvars.ContextVar("dpselect_explaining",
                                                                   default=False)  # fmt: skip


class _Planned(BaseException):
    """Carries the plan from the charge back to :func:`explain`; a ``BaseException`` so that no
    ``except Exception`` on the way can take it for an error."""

    def __init__(self, plan: Plan) -> None:
        super().__init__(plan.query)
        self.plan = plan


def explaining() -> bool:
    """Whether the current call runs under :func:`explain` (the charge must stop there).

    Returns
    -------
    bool
        ``True`` inside :func:`explain`.
    """
    return _EXPLAINING.get()


def stop_here(plan: Plan) -> None:
    """Under :func:`explain`, hand ``plan`` back to it (nothing after this point runs);
    otherwise do nothing. Called by the one charging step, before it charges.

    Parameters
    ----------
    plan : Plan
        The release's plan, as the charge would record it.
    """
    if _EXPLAINING.get():
        raise _Planned(plan)


def explain(query: Callable[P, object], /, *args: P.args, **kwargs: P.kwargs) -> Plan:
    """The plan of ``query(*args, **kwargs)``: its mechanism, every share of its budget, its
    guarantee and what its ledger would be charged, without reading a row or charging.

    ``query`` is any release of dpselect: a top-level function (:func:`dpselect.top_k`,
    :func:`dpselect.quantile`, ...) or a :class:`dpselect.Session` method, with the arguments it
    would be run with. It runs up to its charge: the same checks, the same choices from public
    facts, so a refused query raises here as it would when run. The plan is what the query
    charges when run, unless the ledger changes in between (only the charge decides).

    Parameters
    ----------
    query : callable
        A dpselect query (a function or a Session method).
    *args, **kwargs
        Its arguments, as for running it.

    Returns
    -------
    Plan
        Printable (``print(plan)``) and ``plan.to_dict()``.

    Raises
    ------
    ParameterError
        ``query`` is not a release that charges (it ran to its end without a charge), or any
        refusal of the query itself (a ``ParameterError``, a ``BudgetExceeded``... as when
        run, before anything is read or charged).

    Examples
    --------
    >>> import dpselect as dp
    >>> import pandas as pd
    >>> visits = pd.DataFrame({"page": ["a", "b", "a"]})
    >>> plan = dp.explain(dp.top_k, visits, "page", 1, epsilon=1.0, candidates=["a", "b"])
    >>> plan.query, plan.epsilon, plan.fits
    ('top_k/permute_and_flip', 1.0, None)
    """
    token = _EXPLAINING.set(True)
    try:
        query(*args, **kwargs)
    except _Planned as planned:
        return planned.plan
    finally:
        _EXPLAINING.reset(token)
    name = getattr(query, "__qualname__", None) or type(query).__name__
    raise ParameterError(
        f"explain: {name} ran to its end without a charge, so it has no plan (explain takes a "
        "dpselect query that charges a privacy cost: top_k, quantile, a Session method, ...)"
    )
