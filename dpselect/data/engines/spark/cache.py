"""A small frame cached and computed before the query that joins it with the rows is planned
(:func:`_materialised`): the distinct values with their codes or identities, which Spark then
broadcasts to the rows when they are few. The session's setting for the cached plan is set and
restored under one lock (:data:`_CONF_LOCK`); a session that refuses the cache gets the same
plan without it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from .columns import _spark
from .progress import run_action

_CACHED_PARTITIONING = "spark.sql.optimizer.canChangeCachedPlanOutputPartitioning"

#: Held while :func:`_cached` sets, caches and restores the setting: two threads querying one
#: session at once would otherwise interleave the save and the restore (the second saves the
#: first's value and puts it back last).
_CONF_LOCK = threading.Lock()


@contextlib.contextmanager
def _materialised(small: Any) -> Iterator[Any]:
    """``small`` (a frame of the distinct values and their codes) cached and computed before
    the query that joins it with the rows is planned; the cache is dropped on exit.

    Why: Spark estimates an aggregate's size from its input, so a join of the rows with the
    distinct values is planned as a sort-merge join, and adaptive execution shuffles both
    sides at once before it finds the values few enough to broadcast: at 10^7 rows the rows
    were shuffled by value for nothing, then again by unit (docs/performance.md, "Bounding
    plans"). Computed first, the values carry their real size, and Spark's own rule
    (``autoBroadcastJoinThreshold``) broadcasts them when they are small and keeps the
    sort-merge join otherwise: the same result either way, and the plan dpselect builds is
    the same for every data set (the choice of join is Spark's, as with adaptive execution).
    The cache keeps Spark's storage level (memory and disk): it never fails for many values,
    and is dropped even on an error. Where the session offers no cache (a Spark error from
    ``cache()`` itself, as on some managed Connect services), ``small`` is yielded as it is:
    the plan without the cache, the same result.
    """
    cached = _cached(small)
    if cached is None:
        yield small
        return
    try:
        yield cached
    finally:
        cached.unpersist()


def _cached(small: Any) -> Any:
    """``small`` cached and computed (:func:`_materialised`), or ``None`` when the session
    refuses to cache.

    The cached plan is planned with ``canChangeCachedPlanOutputPartitioning`` on (set for the
    ``cache()`` call only, then restored; left as it is where the session refuses the
    setting): otherwise Spark plans it without adaptive coalescing, in 200 tasks of a few
    rows each, which cost as much as the shuffle saved. The set, the ``cache()`` and the
    restore run under one module lock (:data:`_CONF_LOCK`), so threads sharing a session
    restore the setting they found; the values are computed after the lock is released.
    """
    from pyspark.errors import PySparkException

    conf = _spark(small).conf
    with _CONF_LOCK:
        try:
            old = conf.get(_CACHED_PARTITIONING, None)
            conf.set(_CACHED_PARTITIONING, "true")
        except PySparkException:  # a managed session may refuse the setting: only slower
            old, changed = None, False
        else:
            changed = True
        try:
            cached = small.cache()
        except PySparkException:
            return None
        finally:
            if changed and old is None:
                conf.unset(_CACHED_PARTITIONING)
            elif changed:
                conf.set(_CACHED_PARTITIONING, old)
    try:
        run_action(cached.count)
    except BaseException:
        cached.unpersist()
        raise
    return cached
