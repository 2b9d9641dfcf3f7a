"""Private hyperparameter tuning: the best of a random number of private training runs.

``tune(train, configs, epsilon, data=..., delta=...)`` (Papernot and Steinke 2022, PS22):

- ``train(config, rho)`` returns a zCDP :class:`~dpselect.core.measurement.Measurement` on
  ``data`` that releases ``(score, model)`` and costs at most ``rho`` at distance 1 (for
  example a model trained with the Gaussian mechanism and its validation accuracy with
  discrete Gaussian noise). Building it must not read ``data``.
- One *run* picks a configuration uniformly at random (exactly, from the randomness source;
  independent of the data) and runs its measurement: ``rho``-zCDP.
- The number of runs ``K`` is drawn from the truncated negative binomial law ``D_{eta,
  gamma}`` (PS22, Theorem 2; default ``eta = 0``, the logarithmic law) or a Poisson law
  (Theorem 6) with mean ``mean_runs``; the best run is released (:func:`~dpselect.mechanisms.
  private_candidates.make_repeat_and_select`).
- ``rho`` is the largest per-run budget (found by bisection on the exact map) such that the
  Renyi curve of the whole, converted at ``delta`` (:func:`~dpselect.accounting.
  rdp_to_approx_dp`), is at most ``epsilon``. The ledger is charged ``(epsilon, delta)``
  before any run.

**Order.** ``train(config, rho)`` is called for every configuration *before* the charge, to
build each run and check that it is zCDP (a run that is not is refused before anything is
spent); it is not given the data and must not read it. The runs themselves, the only steps
given ``data``, run after the charge is durable.

**The privacy unit** is whatever the runs protect: PS22's theorems turn ``rho``-zCDP runs
*for some neighbouring relation* into an ``(epsilon, delta)``-DP release *for the same
relation*. ``privacy_unit="user_id"`` is the ledger's record of that relation (default: one
row of ``data`` added or removed); it is a label, since the library cannot inspect a run:
each run ``train(config, rho)`` must be ``rho``-zCDP for one whole unit (all its rows) added
or removed, for example a model trained with per-person contribution bounds and noise
calibrated to them. Where a run's sensitivity to one unit cannot be bounded (an unbounded
number of rows per person feeding an unclipped statistic), no label makes the release private
for that unit.

The result reports, for comparison, the per-run ``rho`` one could afford by running every
configuration once and paying for all of them by composition (``rho_total / len(configs)``,
``rho_total`` the zCDP budget of ``(epsilon, delta)``): that plan releases every run; this one
releases only the best of about ``mean_runs`` runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal

from ..accounting.params import check_loss
from ..core.errors import ParameterError
from ..core.measurement import Measurement
from ..mechanisms.private_candidates import make_repeat_and_select
from ..mechanisms.tuning import (
    check_run,
    make_random_run,
    per_run_rho,
    rho_per_run_if_composed,
    tnb_gamma_for_mean,
    total_epsilon,
)
from ..mechanisms.validate import check_delta, check_epsilon
from ..planning.epsilon_range import check_epsilon_range
from ..planning.stage import Stage
from ..sampling.source import RandomSource, resolve_source
from ._common import jsonable, open_ledger
from .release import charge_then, check_unit_label
from .result import Result

__all__ = ["TuneResult", "tnb_gamma_for_mean", "tune"]


@dataclass(frozen=True)
class TuneResult(Result):
    """The best run's ``(score, model)`` and configuration, with the privacy accounting.

    Attributes
    ----------
    config : object
        The configuration of the released run, one of ``configs``; ``None`` when the Poisson
        law drew no run at all.
    score : object
        That run's score, as its measurement released it (noisy); ``None`` when no run.
    model : object
        That run's model (left out of :meth:`to_dict`); ``None`` when no run.
    epsilon : float
        The ``epsilon`` of the whole release's ``(epsilon, delta)`` guarantee (what the ledger
        was charged).
    delta : float
        The ``delta`` of that guarantee.
    rho_per_run : float
        The zCDP budget each run was built with (``train(config, rho)``): the largest one that
        keeps the whole within ``(epsilon, delta)``.
    rho_per_run_if_composed : float
        For comparison, the per-run ``rho`` of running every configuration once and paying by
        composition: ``rho_total / len(configs)``, ``rho_total`` the zCDP budget of
        ``(epsilon, delta)``.
    mean_runs : float
        The mean of the law of the number of runs, as given.
    distribution : str
        That law: ``"truncated_negative_binomial"`` or ``"poisson"``.
    ledger : str or None
        The path of the ledger charged for this release; ``None`` without a ledger.
    parameters : dict
        The public parameters (``epsilon``, ``delta``, ``n_configs``, ``mean_runs``,
        ``distribution``, ``eta``, ``rho_per_run``, and ``privacy_unit`` when given).
    """

    config: Any
    score: Any
    model: Any
    epsilon: float
    delta: float
    rho_per_run: float
    rho_per_run_if_composed: float
    mean_runs: float
    distribution: str
    ledger: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)

    def _dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary (the model itself is left out)."""
        return {
            "config": jsonable(self.config),
            "score": jsonable(self.score),
            "epsilon": self.epsilon,
            "delta": self.delta,
            "rho_per_run": self.rho_per_run,
            "rho_per_run_if_composed": self.rho_per_run_if_composed,
            "mean_runs": self.mean_runs,
            "distribution": self.distribution,
            "ledger": self.ledger,
            "parameters": self.parameters,
        }

    def _text(self) -> str:
        return "\n".join(
            [
                f"best configuration: {self.config!r} (noisy score {self.score})",
                f"mechanism: best of a random number of private runs ({self.distribution}, "
                f"mean {self.mean_runs:g}; Papernot and Steinke 2022)",
                f"privacy cost: epsilon = {self.epsilon:.6g}, delta = {self.delta:.3g}",
                f"per-run budget: rho = {self.rho_per_run:.6g} (paying for every configuration "
                f"by composition would allow rho = {self.rho_per_run_if_composed:.6g} per run)",
            ]
        )


def tune(
    train: Callable[[Any, float], Measurement],
    configs: Sequence[Any],
    epsilon: float,
    *,
    data: Any,
    delta: float = 1e-6,
    mean_runs: float = 10.0,
    distribution: Literal["truncated_negative_binomial", "poisson"] = "truncated_negative_binomial",
    eta: float = 0,
    ledger: Any = None,
    source: RandomSource | None = None,
    privacy_unit: str | None = None,
) -> TuneResult:
    """The best of a random number of private runs over ``configs``, ``(epsilon, delta)``-DP.

    Parameters
    ----------
    train : callable
        ``train(config, rho)`` returns a ``rho``-zCDP :class:`~dpselect.core.Measurement`
        releasing ``(score, model)``, higher scores better (module docstring).
    configs : sequence
        The public configurations.
    epsilon : float
        The total privacy cost.
    data : object
        The private data, passed to each run.
    delta : float, default 1e-6
        The approximate-DP ``delta``.
    mean_runs : float, default 10
        The mean number of runs.
    distribution : {"truncated_negative_binomial", "poisson"}
        The law of the number of runs (``eta``: the negative binomial's shape).
    ledger, source
        The budget ledger and the randomness of the configurations and of the number of runs
        (tests only; the runs use their own sources).
    privacy_unit : str, optional
        Whom the runs protect, as the ledger records it (default: one row of ``data``). Each
        run must be ``rho``-zCDP for one such unit added or removed (module docstring); a
        ledger bound to another unit refuses the query before anything is charged.

    Returns
    -------
    TuneResult
        The best run's configuration, score and model, and the accounting.

    Raises
    ------
    ParameterError, MeasureError, BudgetExceeded, LedgerError
        Invalid parameters, a run that is not zCDP, budget left, or a ledger bound to another
        unit, before any run.

    Privacy
    -------
    Papernot and Steinke 2022, Theorems 2 and 6: ``K`` runs, each ``rho``-zCDP, ``K`` drawn
    from ``D_{eta, gamma}`` or Poisson, the best released; its Rényi curve, converted at
    ``delta``, is at most ``epsilon`` (bisection on the exact map,
    :func:`~dpselect.mechanisms.tuning.per_run_rho`). The guarantee is for the unit the runs
    protect (``privacy_unit``), which the caller states and the library records.

    Examples
    --------
    >>> import math
    >>> import dpselect as dp
    >>> from dpselect.core import AnyDomain, L1Distance, Measurement, SymmetricDistance
    >>> from dpselect.core import ZeroConcentratedDivergence, atom_domain
    >>> from dpselect.mechanisms import make_gaussian
    >>> from dpselect.sampling import InsecureSeededSource  # reproducible, not private
    >>> def train(config, rho):  # a noisy count, penalised by the distance to 2
    ...     noisy = make_gaussian(atom_domain(int), L1Distance(), 1.01 / math.sqrt(2 * rho),
    ...                           source=InsecureSeededSource(config))
    ...     return Measurement(AnyDomain(), SymmetricDistance(), ZeroConcentratedDivergence(),
    ...                        lambda data: (noisy(data) - abs(config - 2), f"model-{config}"),
    ...                        noisy.map)
    >>> result = dp.tune(train, [1, 2, 3], epsilon=1.0, data=10, source=InsecureSeededSource(2))
    >>> result.config
    2
    """
    plan = _plan_tune(train, configs, epsilon, delta, mean_runs, distribution, eta, privacy_unit)
    src = resolve_source(source)
    mech = make_repeat_and_select(make_random_run(plan.runs, src), distribution, source=src,
                                  **plan.law)  # fmt: skip
    assert total_epsilon(float(plan.rho), plan.delta, distribution, plan.law) <= plan.epsilon
    composed = rho_per_run_if_composed(plan.epsilon, plan.delta, len(plan.configs))
    book = open_ledger(ledger)
    parameters = plan.parameters(mean_runs, distribution, eta, privacy_unit)

    def release() -> TuneResult:
        config, score, model = _best_run(mech(data), plan.configs)
        return TuneResult(
            config=config, score=score, model=model, epsilon=float(plan.epsilon),
            delta=float(plan.delta), rho_per_run=float(plan.rho),
            rho_per_run_if_composed=composed, mean_runs=float(mean_runs),
            distribution=distribution, ledger=None if book is None else book.path,
            parameters=parameters,
        )  # fmt: skip

    # The unit the runs protect (rows by default); the data is whatever the runs read: no
    # description.
    stage = Stage(
        "tune",
        "repeat and select (Papernot and Steinke 2022)",
        float(plan.epsilon),
        float(plan.delta),
    )
    return charge_then(
        book, release, float(plan.epsilon), float(plan.delta), None, "approx", "tune",
        parameters, privacy_unit=privacy_unit, source=None, stages=(stage,),
    )  # fmt: skip


@dataclass(frozen=True)
class _TunePlan:
    """A tuning planned from public facts: its budget, law of runs, per-run rho and runs."""

    epsilon: Fraction
    delta: Fraction
    configs: list[Any]
    law: dict[str, Any]
    rho: Fraction  # the largest per-run budget keeping the whole within (epsilon, delta)
    runs: list[Measurement]  # one checked zCDP run per configuration

    def parameters(
        self, mean_runs: float, distribution: str, eta: float, privacy_unit: str | None
    ) -> dict[str, Any]:
        """The public parameters the ledger and the result record."""
        return {
            "epsilon": float(self.epsilon), "delta": float(self.delta),
            "n_configs": len(self.configs), "mean_runs": float(mean_runs),
            "distribution": distribution,
            "eta": float(eta) if distribution != "poisson" else None,
            "rho_per_run": float(self.rho),
            **({} if privacy_unit is None else {"privacy_unit": privacy_unit}),
        }  # fmt: skip


def _plan_tune(
    train: Any,
    configs: Any,
    epsilon: float,
    delta: float,
    mean_runs: float,
    distribution: str,
    eta: float,
    privacy_unit: str | None,
) -> _TunePlan:
    """Check the public parameters in order, find the per-run rho and build every run (each
    checked zCDP), before anything is charged."""
    eps = Fraction(check_epsilon(epsilon))
    check_epsilon_range(eps)
    dlt = Fraction(check_delta(delta, allow_zero=False))
    cfgs = _checked_configs(train, configs)
    check_unit_label(privacy_unit)
    law = _law_of_runs(distribution, mean_runs, eta)
    rho = _rho_per_run(eps, dlt, distribution, law, mean_runs)
    runs = [check_run(train(c, float(rho)), c, rho) for c in cfgs]
    return _TunePlan(eps, dlt, cfgs, law, rho, runs)


def _checked_configs(train: Any, configs: Any) -> list[Any]:
    """The public configurations as a list, and ``train`` a callable (refused otherwise)."""
    if isinstance(configs, (str, bytes)) or not isinstance(configs, Sequence) or not configs:
        raise ParameterError("configs must be a non-empty list of public configurations")
    if not callable(train):
        raise ParameterError("train must be a callable train(config, rho) -> Measurement")
    return list(configs)


def _law_of_runs(distribution: str, mean_runs: float, eta: float) -> dict[str, Any]:
    """The parameters of the law of the number of runs (Poisson, or PS22's ``D_{eta, gamma}``
    with the ``gamma`` giving mean ``mean_runs``)."""
    if distribution == "poisson":
        mu = check_loss(mean_runs, "mean_runs")
        if mu <= 0:
            raise ParameterError(f"mean_runs must be positive, got {mean_runs!r}")
        return {"mean": mu}
    if distribution == "truncated_negative_binomial":
        return {"eta": Fraction(eta), "gamma": tnb_gamma_for_mean(eta, mean_runs)}
    raise ParameterError(
        f'distribution must be "truncated_negative_binomial" or "poisson", got {distribution!r}'
    )


def _rho_per_run(
    eps: Fraction, dlt: Fraction, distribution: str, law: dict[str, Any], mean_runs: float
) -> Fraction:
    """The largest per-run zCDP budget keeping the whole within ``(eps, dlt)`` (refused when
    even a tiny one does not)."""
    lo = per_run_rho(eps, dlt, distribution, tuple(sorted(law.items())))
    if lo == 0:
        raise ParameterError(
            f"epsilon = {float(eps):g} at delta = {float(dlt):g} is too small for about "
            f"{mean_runs:g} runs: even a tiny per-run budget exceeds it"
        )
    return Fraction(lo)


def _best_run(out: Any, cfgs: list[Any]) -> tuple[Any, Any, Any]:
    """``(config, score, model)`` of the released run; all ``None`` when no run was drawn."""
    if out is None:  # Poisson: no run at all
        return None, None, None
    score, (index, model) = out
    return cfgs[index], score, model
