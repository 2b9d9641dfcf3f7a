"""The stage of a one-shot private selection: the exponential mechanism over public candidates.

:func:`dpselect.select` and :func:`dpselect.select_hypothesis` run one exponential mechanism
(seed 002; seed 001, Theorem 1.1: report-noisy-max with Gumbel noise) over ``n`` public
candidates at ``epsilon``; :func:`exponential_stage` states it as the release's one
:class:`~dpselect.planning.stage.Stage`, before the charge.

Scale: ``range / epsilon`` rounded up, ``range = Delta`` for monotonic scores and ``2 Delta``
otherwise (:func:`dpselect.mechanisms.exponential.make_exponential_mechanism`). Memory (bytes
held at once, from public sizes): the ``n`` float64 scores, and the exact sampler's float
pass, five 8-byte arrays per candidate of a chunk of at most ``CHUNK_SIZE``
(:mod:`dpselect.sampling.noisy_max`): ``8 n + 40 min(n, CHUNK_SIZE)``.
"""

from __future__ import annotations

from fractions import Fraction

from ..core.arithmetic import float_up
from ..sampling.noisy_max import CHUNK_SIZE
from .stage import Stage

__all__ = ["EXPONENTIAL", "exponential_stage"]

#: The mechanism's name in a stage.
EXPONENTIAL = "exponential mechanism"


def exponential_stage(
    name: str,
    epsilon: float | Fraction,
    sensitivity: float | Fraction,
    *,
    monotonic: bool,
    n_candidates: int,
) -> Stage:
    """The exponential mechanism over ``n_candidates`` at ``epsilon``, as a stage.

    Parameters
    ----------
    name : str
        What the stage does ("select", "select hypothesis").
    epsilon : float or Fraction
        Its pure epsilon for one unit added or removed (the release's whole charge).
    sensitivity : float or Fraction
        ``Delta``: how far one unit moves each score.
    monotonic : bool
        Whether the scores all move the same way (range ``Delta``, else ``2 Delta``).
    n_candidates : int
        The number of candidates.

    Returns
    -------
    Stage
        Its epsilon, scale and memory (module docstring).
    """
    eps = Fraction(epsilon)
    span = Fraction(sensitivity) * (1 if monotonic else 2)
    n = int(n_candidates)
    return Stage(name, EXPONENTIAL, float(eps), scale=float_up(span / eps),
                 memory=8 * n + 40 * min(n, CHUNK_SIZE))  # fmt: skip
