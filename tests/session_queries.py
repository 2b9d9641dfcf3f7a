"""One top-k or partition-selection query through a :class:`dpselect.Session`, for tests that
build its arguments as one mapping (a parametrized case, a shared ``common``): what the session
binds (the unit, the bounds, the ledger, the schema, the randomness) goes to the session, the
rest to its query."""

from __future__ import annotations

from typing import Any

import dpselect as dp

SESSION_ARGUMENTS = ("privacy_unit", "contributions", "ledger", "schema", "source")


def session_top_k(data: Any, column: str, k: int, epsilon: float, **given: Any) -> Any:
    """``dp.Session(data, ...).top_k(column, k, epsilon=epsilon, ...)`` with ``given`` split
    between the session and the query (one session, opened for this query only)."""
    bound = {name: given.pop(name) for name in SESSION_ARGUMENTS if name in given}
    with dp.Session(data, **bound) as session:
        return session.top_k(column, k, epsilon=epsilon, **given)


def session_partition_selection(
    data: Any, column: str, epsilon: float, delta: float, **given: Any
) -> Any:
    """``dp.Session(data, ...).partition_selection(column, epsilon=..., delta=..., ...)`` with
    ``given`` split between the session and the query, as :func:`session_top_k`."""
    bound = {name: given.pop(name) for name in SESSION_ARGUMENTS if name in given}
    with dp.Session(data, **bound) as session:
        return session.partition_selection(column, epsilon=epsilon, delta=delta, **given)
