"""Previews: what a private selection would do, before any budget is spent (seeds 001, 002).

``preview(scores, epsilon)`` takes **public or hypothetical** scores (for example the counts
you expect, or last year's published counts), never the private data, and computes for each
``epsilon``:

- the exact probability of selecting each candidate (:func:`selection_probabilities`: the
  exponential mechanism's softmax ``P[c] ∝ exp(s_c / scale)``, or permute-and-flip's and
  Laplace report-noisy-max's laws), with ``scale = 2 Delta / eps`` (``Delta / eps`` when
  ``monotonic``), the calibration :func:`dpselect.top_k` and :func:`dpselect.recipes.select`
  use;
- the probability of returning a best candidate, and of a wrong answer;
- the utility theorem's bound on a wrong answer (seed 002): ``P[score <= runner-up] <=
  (|O| / |O*|) exp(-eps (OPT - runner-up) / (c Delta))``, and the loss it guarantees at
  ``confidence`` (exponential mechanism only: the theorem is proven for it).

Nothing is sampled and nothing is charged. ``dpselect preview --plot out.png`` draws
P(correct answer) and the theorem's guarantee against ``eps`` (:func:`plot_preview`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ..core.arithmetic import as_decimal, float_up, printed_up
from ..core.errors import ParameterError
from ..mechanisms.utility import selection_probabilities, utility_bound
from ..mechanisms.validate import check_epsilon, check_scale
from ._common import CONFIDENCE, check_confidence, jsonable
from .result import Result

__all__ = [
    "PreviewResult",
    "PreviewRow",
    "TopKPreview",
    "TopKPreviewRow",
    "plot_preview",
    "preview",
    "preview_top_k",
]

Mechanism = Literal["gumbel", "permute_and_flip", "laplace"]
_MECHANISMS = {
    "gumbel": "exponential mechanism (Gumbel report-noisy-max)",
    "permute_and_flip": "permute-and-flip (report-noisy-max with exponential noise)",
    "laplace": "report-noisy-max with Laplace noise",
}
NOTE = "computed from the scores given (public or hypothetical): no data read, no budget spent"


@dataclass(frozen=True)
class PreviewRow:
    """The law of the selection at one ``epsilon``."""

    epsilon: float
    scale: float
    probabilities: list[float]
    p_best: float
    p_wrong: float
    bound_wrong: float | None
    loss: float | None


@dataclass(frozen=True)
class PreviewResult(Result):
    """A preview of a selection over hypothetical scores, for one or several ``epsilon``.

    Attributes
    ----------
    names : list
        The candidates' names: the keys of a mapping of scores, else the positions
        ``0, 1, ...``.
    scores : list of float
        The hypothetical scores, in the order of ``names``.
    sensitivity : float
        ``Delta``: how much one person changes any score.
    monotonic : bool
        Whether the scale is ``Delta / eps`` (monotonic scores) rather than ``2 Delta / eps``.
    mechanism : str
        The selection previewed: ``"gumbel"``, ``"permute_and_flip"`` or ``"laplace"``.
    confidence : float
        The confidence of the utility theorem's loss (``PreviewRow.loss``).
    rows : list of PreviewRow
        One per ``epsilon``, in the order given: the scale, each candidate's selection
        probability (in the order of ``names``), ``p_best``, ``p_wrong``, and the theorem's
        ``bound_wrong`` and ``loss`` (``None`` unless ``mechanism`` is ``"gumbel"``).
    note : str
        That the preview read no data and spent no budget.
    """

    names: list[Any]
    scores: list[float]
    sensitivity: float
    monotonic: bool
    mechanism: str
    confidence: float
    rows: list[PreviewRow]
    note: str = NOTE

    def _dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary."""
        out = asdict(self)
        out["names"] = [jsonable(n) for n in self.names]
        return out

    def _rows(self) -> list[dict[str, Any]]:
        return list(self.to_dict()["rows"])

    def _text(self) -> str:
        best = max(self.scores)
        lines = [
            f"preview of the {_MECHANISMS[self.mechanism]} ({NOTE})",
            f"scores: {dict(zip(map(str, self.names), self.scores, strict=True))}, "
            f"Delta = {self.sensitivity:g}" + (", monotonic" if self.monotonic else ""),
        ]
        for row in self.rows:
            lines.append(
                f"epsilon = {row.epsilon:g}: P[best] = {row.p_best:.6g}, "
                f"P[wrong] = {row.p_wrong:.6g}"
                + (
                    f" (utility theorem: <= {row.bound_wrong:.6g})"
                    if row.bound_wrong is not None
                    else ""
                )
            )
            if row.loss is not None:
                lines.append(
                    f"  with probability at least {self.confidence:.0%} the answer's score is "
                    f"within {printed_up(row.loss)} of the best ({best:g})"
                )
            cells = ", ".join(
                f"{name}: {p:.4g}" for name, p in zip(self.names, row.probabilities, strict=True)
            )
            lines.append(f"  P[each] = {cells}")
        return "\n".join(lines)


def _scores(scores: Any) -> tuple[list[Any], list[float]]:
    if isinstance(scores, Mapping):
        names, values = list(scores.keys()), list(scores.values())
    elif isinstance(scores, (Sequence, np.ndarray)) and not isinstance(scores, (str, bytes)):
        values = list(scores)
        names = list(range(len(values)))
    else:
        raise ParameterError(
            "scores must be a list of numbers or a mapping name -> number, "
            f"got {type(scores).__name__}"
        )
    if not values:
        raise ParameterError("scores must not be empty")
    out = []
    for name, v in zip(names, values, strict=True):
        if isinstance(v, bool) or not isinstance(v, (int, float, Fraction, np.number)):
            raise ParameterError(f"score of {name!r} must be a number, got {v!r}")
        if not math.isfinite(float(v)):
            raise ParameterError(f"score of {name!r} must be finite, got {v!r}")
        out.append(float(v))
    return names, out


def _epsilons(epsilon: Any) -> list[Fraction]:
    values = list(epsilon) if isinstance(epsilon, (list, tuple, np.ndarray)) else [epsilon]
    if not values:
        raise ParameterError("epsilon must be a number or a non-empty list of numbers")
    plain = [float(e) if isinstance(e, np.floating) else e for e in values]
    for e in plain:
        check_epsilon(e)
    # the decimals as typed (0.1 is 1/10): a release calibrates to the float just below
    return [as_decimal(e) for e in plain]


def _row(
    scores: list[float],
    eps: Fraction,
    delta: Fraction,
    monotonic: bool,
    mechanism: Mechanism,
    confidence: float,
) -> PreviewRow:
    scale = float_up((1 if monotonic else 2) * delta / eps)
    noise = "exponential" if mechanism == "permute_and_flip" else mechanism
    probs = selection_probabilities(scores, scale, noise=noise)
    best = max(scores)
    optimal = np.asarray(scores) == best
    p_wrong = float(probs[~optimal].sum())
    p_best = float(probs[optimal].sum())
    bound_wrong: float | None = None
    loss: float | None = None
    if mechanism == "gumbel":
        n_opt = int(optimal.sum())
        others = [s for s in scores if s != best]
        if others:
            gap = Fraction(best) - Fraction(max(others))
            bound_wrong = utility_bound(
                eps, delta, len(scores), n_optimal=n_opt, loss=gap, monotonic=monotonic
            ).probability
        else:
            bound_wrong = 0.0
        loss = utility_bound(
            eps, delta, len(scores), n_optimal=n_opt, confidence=confidence, monotonic=monotonic
        ).loss
    return PreviewRow(
        epsilon=float(eps),
        scale=scale,
        probabilities=[float(p) for p in probs],
        p_best=p_best,
        p_wrong=p_wrong,
        bound_wrong=bound_wrong,
        loss=loss,
    )


def _check_mechanism(mechanism: Any) -> Mechanism:
    if mechanism not in _MECHANISMS:
        raise ParameterError(f"mechanism must be one of {sorted(_MECHANISMS)}, got {mechanism!r}")
    return mechanism  # type: ignore[no-any-return]


def preview(
    scores: Any,
    epsilon: Any,
    sensitivity: float = 1,
    *,
    monotonic: bool = False,
    mechanism: Mechanism = "gumbel",
    confidence: float = CONFIDENCE,
) -> PreviewResult:
    """The exact law of a selection over hypothetical ``scores`` at each ``epsilon``.

    ``scores``: a list, or a mapping ``name -> score`` (for example expected counts).
    ``epsilon``: a number or a list. ``monotonic=True`` previews counts as
    :func:`dpselect.top_k` scores them (``scale = Delta / eps``); the default is the seed's
    general ``2 Delta / eps``. Uses only the scores given: nothing is sampled or charged.

    Parameters
    ----------
    scores : list or dict
        Hypothetical (or public) scores; a dict names the candidates.
    epsilon : float or list of float
        One or several privacy costs to preview.
    sensitivity : float, default 1
        How much one person changes any score.
    monotonic : bool, default False
        True when every score moves in the same direction between neighbours.
    mechanism : {"gumbel", "permute_and_flip", "laplace"}, default "gumbel"
        The selection's noise.
    confidence : float, default 0.95
        The confidence of the utility theorem's bound.

    Returns
    -------
    PreviewResult
        One row per ``epsilon``: the exact selection probabilities and the bound.

    Raises
    ------
    ParameterError
        Invalid parameters (nothing is spent: no data is read).

    Examples
    --------
    >>> import dpselect as dp
    >>> result = dp.preview([10, 8, 1], epsilon=1.0)
    >>> round(result.rows[0].p_best, 3)
    0.725
    """
    names, values = _scores(scores)
    eps_list = _epsilons(epsilon)
    delta = Fraction(check_scale(sensitivity, "sensitivity", allow_zero=False))
    if not isinstance(monotonic, bool):
        raise ParameterError(f"monotonic must be a bool, got {monotonic!r}")
    mech = _check_mechanism(mechanism)
    conf = check_confidence(confidence)
    rows = [_row(values, e, delta, monotonic, mech, conf) for e in eps_list]
    return PreviewResult(
        names=names,
        scores=values,
        sensitivity=float(delta),
        monotonic=monotonic,
        mechanism=mech,
        confidence=conf,
        rows=rows,
    )


def _grid(scores: list[float], delta: float, monotonic: bool, marks: list[float]) -> np.ndarray:
    """Log-spaced epsilons around the marks, or around where the answer becomes reliable."""
    if marks:
        lo, hi = min(marks) / 10, max(marks) * 10
    else:
        best = max(scores)
        others = [s for s in scores if s != best]
        gap = best - max(others) if others else delta
        middle = (1 if monotonic else 2) * delta * math.log(max(2, len(scores))) / gap
        lo, hi = middle / 30, middle * 30
    return np.logspace(math.log10(lo), math.log10(hi), 81)


def _label_axes(
    ax: Any, names: list[Any], values: list[float], mechanism: Mechanism, title: str | None
) -> None:
    """The preview plot's log axis, labels, title (the mechanism and the first scores),
    grid and legend."""
    ax.set_xscale("log")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("ε (log scale)")
    ax.set_ylabel("probability")
    shown = ", ".join(f"{n}: {s:g}" for n, s in list(zip(names, values, strict=True))[:6])
    more = ", ..." if len(values) > 6 else ""
    ax.set_title(title or f"{_MECHANISMS[mechanism]}\nscores {shown}{more}", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right", fontsize=9)


def plot_preview(
    scores: Any,
    path: str | Path,
    epsilon: Any = None,
    *,
    sensitivity: float = 1,
    monotonic: bool = False,
    mechanism: Mechanism = "gumbel",
    title: str | None = None,
) -> Path:
    """Plot P(correct answer) and the utility theorem's guarantee against ``eps`` (log axis).

    The curve spans a decade either side of the given ``epsilon`` values (marked with dotted
    lines), or the range where the answer becomes reliable. Saved as a PNG with matplotlib's
    Agg canvas (no display, no global backend change).

    Parameters
    ----------
    scores : list or dict
        Hypothetical scores, as for :func:`preview`.
    path : str or Path
        The PNG to write.
    epsilon : list of float, optional
        The grid of privacy costs (default: a grid around the scores' gaps).
    sensitivity, monotonic, mechanism
        As for :func:`preview`.
    title : str, optional
        The plot's title.

    Returns
    -------
    Path
        The file written.

    Raises
    ------
    ParameterError
        Invalid parameters; ImportError without matplotlib.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> import dpselect as dp
    >>> out = dp.plot_preview([10, 8, 1], Path(tempfile.mkdtemp()) / "preview.png")
    >>> out.name
    'preview.png'
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    names, values = _scores(scores)
    marks = [float(e) for e in _epsilons(epsilon)] if epsilon is not None else []
    delta = float(check_scale(sensitivity, "sensitivity", allow_zero=False))
    grid = _grid(values, delta, monotonic, marks)
    result = preview(scores, list(grid), sensitivity, monotonic=monotonic, mechanism=mechanism)
    p_best = [row.p_best for row in result.rows]
    fig = Figure(figsize=(7, 4.2), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.plot(grid, p_best, color="C0", lw=2, label="P(correct answer), exact")
    if mechanism == "gumbel":
        guarantee = [max(0.0, 1.0 - (row.bound_wrong or 0.0)) for row in result.rows]
        ax.plot(
            grid, guarantee, color="C1", lw=2, ls="--", label="utility theorem: P(correct) at least"
        )
    for e in marks:
        ax.axvline(e, color="0.4", ls=":", lw=1)
        p = preview(scores, e, sensitivity, monotonic=monotonic, mechanism=mechanism).rows[0].p_best
        ax.annotate(f"ε = {e:g}\nP = {p:.3f}", (e, p), textcoords="offset points", xytext=(6, -28))
    _label_axes(ax, names, values, mechanism, title)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, format="png")
    return out


# ------------------------------------------------------------------------------------------
# Which top-k mechanism: the options the public criterion weighs, before anything is spent


@dataclass(frozen=True)
class TopKPreviewRow:
    """One calibrated option: its noise scale, what bought it, and the accuracy it gives."""

    mechanism: str
    name: str
    scale: float
    accounting: str
    #: ``None`` where no reference gap is computed (the measured policy rule)
    gap_90: float | None
    margin_95: float | None
    chosen: bool
    #: values from the data: the threshold, the ranking noise's standard deviation and the
    #: predicted count a top value needs (``UnknownDomainOption.criterion``; least wins)
    threshold: float | None = None
    noise_sd: float | None = None
    needed: float | None = None


@dataclass(frozen=True)
class TopKPreview(Result):
    """The top-k options at ``(k, epsilon, delta, n, max_contributions)``: no data read.

    Attributes
    ----------
    k : int
        How many values the top-k would release.
    n_candidates : int or None
        The number of public candidates; ``None`` for values from the data.
    epsilon : float
        The ``epsilon`` of the top-k previewed.
    delta : float
        Its ``delta`` (0 by default; values from the data need ``delta > 0``).
    max_contributions : int
        How many values each person counts toward.
    rows : list of TopKPreviewRow
        One per option weighed, ``chosen`` marking the one ``mechanism="auto"`` runs: its
        noise scale and accounting, and, with candidates, ``gap_90`` and ``margin_95``; for
        values from the data, ``threshold``, ``noise_sd`` and ``needed``.
    note : str
        That only public parameters were used: no data read, no budget spent.
    max_rows_per_value : int
        How many of a person's rows count toward one value (1: a score counts persons).
    """

    k: int
    n_candidates: int | None
    epsilon: float
    delta: float
    max_contributions: int
    rows: list[TopKPreviewRow]
    note: str = "public parameters only: no data read, no budget spent"
    #: rows of one person counted per value (1: a score counts persons)
    max_rows_per_value: int = 1

    def _rows(self) -> list[dict[str, Any]]:
        return list(self.to_dict()["rows"])

    def _text(self) -> str:
        n = (
            "values from the data"
            if self.n_candidates is None
            else f"{self.n_candidates} candidates"
        )
        lines = [
            f"top-{self.k} of {n} at epsilon = {self.epsilon:g}, delta = {self.delta:g}, "
            f"max_contributions = {self.max_contributions}"
            + (
                f", max_rows_per_value = {self.max_rows_per_value}"
                if self.max_rows_per_value != 1
                else ""
            )
            + f" ({self.note})",
        ]
        if self.n_candidates is None:
            from ..planning.unknown_domain_choice import RANKING_SDS_PER_RANK

            sds = RANKING_SDS_PER_RANK * self.k
            lines.append(
                f"needed: the predicted count the {_nth(self.k)} value needs to be found, the "
                f"threshold (a count released with probability 1/2) plus {sds:g} standard "
                "deviations of the ranking noise (limited domain: its reference margin); the "
                "least wins"
            )
            for r in self.rows:
                mark = "*" if r.chosen else " "
                thr = "-" if r.threshold is None else f"{r.threshold:.4g}"
                sd = "-" if r.noise_sd is None else f"{r.noise_sd:.4g}"
                need = "-" if r.needed is None else f"{r.needed:.4g}"
                lines.append(
                    f"{mark} {r.mechanism:<20} threshold {thr:<8} noise sd {sd:<8} "
                    f"needed {need:<8} {r.accounting}"
                )
            lines.append("* the mechanism mechanism='auto' runs")
            return "\n".join(lines)
        lines.append(
            "gap 90%: the margin the true top k must lead the others by to come back exactly "
            "with probability 90% (reference instance); margin 95%: every returned value's "
            "score is within the margin of the same rank's true score with probability 95%"
        )
        for r in self.rows:
            margin = "-" if r.margin_95 is None else f"{printed_up(r.margin_95)}"
            gap = "n/a" if r.gap_90 is None else f"{r.gap_90:.4g}"
            mark = "*" if r.chosen else " "
            lines.append(
                f"{mark} {r.mechanism:<20} scale {r.scale:<10.4g} gap 90% {gap:<10} "
                f"margin 95% {margin:<10} {r.accounting}"
            )
        lines.append("* the mechanism mechanism='auto' runs")
        return "\n".join(lines)


def _nth(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k}{suffix}"


def preview_top_k(
    k: int,
    n_candidates: int | None,
    epsilon: float,
    *,
    delta: float = 0.0,
    max_contributions: int = 1,
    max_rows_per_value: int = 1,
) -> TopKPreview:
    """The options :func:`dpselect.top_k` weighs for these public parameters, with the
    accuracy each would give; ``n_candidates=None`` for values from the data. Nothing is
    read or charged.

    Parameters
    ----------
    k : int
        How many values the top-k would release.
    n_candidates : int or None
        The number of public candidates (None: values from the data).
    epsilon, delta : float
        The privacy cost of the top-k.
    max_contributions : int, default 1
        How many values each person counts toward.
    max_rows_per_value : int, default 1
        How many of a person's rows count toward one value (scales, gaps and accuracy
        figures are then ``r`` times larger; the choice is the same for candidates).

    Returns
    -------
    TopKPreview
        One row per option: its scale, accounting and accuracy; ``chosen`` marks the one
        ``mechanism="auto"`` runs.

    Raises
    ------
    ParameterError
        Invalid parameters (nothing is spent: no data is read).

    Examples
    --------
    >>> import dpselect as dp
    >>> options = dp.preview_top_k(3, 50, epsilon=1.0)
    >>> [row.mechanism for row in options.rows if row.chosen]
    ['laplace_histogram']
    """
    from ..mechanisms.validate import check_delta, check_int

    k = check_int(k, "k", minimum=1)
    eps = float(check_epsilon(epsilon))
    dlt = float(check_delta(delta))
    c = check_int(max_contributions, "max_contributions", minimum=1)
    r = check_int(max_rows_per_value, "max_rows_per_value", minimum=1)
    if n_candidates is None:
        if dlt == 0:
            raise ParameterError("values from the data need delta > 0")
        rows = _unknown_domain_rows(k, eps, dlt, c, r)
        return TopKPreview(k, None, eps, dlt, c, rows, max_rows_per_value=r)
    n = check_int(n_candidates, "n_candidates", minimum=k)
    rows = _with_joint(_candidate_rows(k, n, eps, dlt, c, r), k, n, eps, dlt, c, r)
    return TopKPreview(k, n, eps, dlt, c, rows, max_rows_per_value=r)


def _unknown_domain_rows(k: int, eps: float, dlt: float, c: int, r: int) -> list[TopKPreviewRow]:
    """The options for values from the data: policy set union (with a unit), then each plan
    of :func:`~dpselect.planning.unknown_domain_choice.choose_unknown_domain`."""
    from ..mechanisms.choice import METHOD_NAMES
    from ..mechanisms.policy_top_k import policy_top_k_plan
    from ..planning.unknown_domain_choice import POLICY_TOP_K_NAME, choose_unknown_domain
    from ..planning.unknown_domain_plan import use_policy_top_k

    rows: list[TopKPreviewRow] = []
    ud_best, ud_options = choose_unknown_domain(k, eps, dlt, c, r)
    policy = use_policy_top_k(k, eps, dlt, c) if c > 1 else False
    if c > 1:  # a unit: policy set union then the top k (persons in the driver; rows at r > 1)
        su = policy_top_k_plan(k, eps, dlt, c, max_rows_per_value=r).set_union
        rows.append(
            TopKPreviewRow(
                "policy_top_k",
                POLICY_TOP_K_NAME,
                su.scale,
                "measured rule (use_policy_top_k); engines with persons in the driver",
                None,
                None,
                policy,
            )
        )
    for u in ud_options:
        name = (
            "limited-domain top-k (Durfee and Rogers 2019)"
            if u.mechanism == "gumbel"
            else "partition selection by thresholding, then " + METHOD_NAMES[u.mechanism]
        )
        rows.append(
            TopKPreviewRow(
                u.mechanism, name, u.scale, "", u.criterion, None,
                u is ud_best and not policy, u.threshold, u.noise_sd, u.criterion,
            )
        )  # fmt: skip
    return rows


def _candidate_rows(k: int, n: int, eps: float, dlt: float, c: int, r: int) -> list[TopKPreviewRow]:
    """The options :func:`~dpselect.mechanisms.choice.choose_top_k` weighs over ``n`` public
    candidates, each with its accuracy margin at the default confidence."""
    from ..mechanisms.choice import choose_top_k
    from ..mechanisms.topk_accuracy import histogram_halfwidth, selection_margin

    beta = 1 - CONFIDENCE
    rows: list[TopKPreviewRow] = []
    chosen, all_options = choose_top_k(k, n, eps, dlt, c, r)
    for o in all_options:
        if o.mechanism.endswith("_histogram"):
            hnoise: Literal["laplace", "gaussian"] = (
                "laplace" if o.mechanism == "laplace_histogram" else "gaussian"
            )
            margin: float = 2 * histogram_halfwidth(hnoise, o.scale, n, beta)
        else:
            noise = "exponential" if o.mechanism == "permute_and_flip" else "gumbel"
            margin = selection_margin(noise, o.scale, k, n, beta)
        rows.append(
            TopKPreviewRow(o.mechanism, o.name, o.scale, o.accounting, o.gap, margin, o is chosen)
        )
    return rows


def _with_joint(
    rows: list[TopKPreviewRow], k: int, n: int, eps: float, dlt: float, c: int, r: int
) -> list[TopKPreviewRow]:
    """``rows`` and the joint exponential top-k when top_k's plan weighs it after them (chosen
    instead of them when the plan picks it)."""
    from ..planning.top_k_plan import joint_may_compete, plan_joint_top_k, plan_top_k

    if not joint_may_compete(k, n, dlt, False, False):  # what top_k's plan weighs after these
        return rows
    joint = plan_joint_top_k(n, k, eps, None, max_rows_per_value=r)
    picked = plan_top_k(n, k, eps, dlt, "auto", False, c, None, max_rows_per_value=r)
    if picked.method == "joint":
        rows = [replace(row, chosen=False) for row in rows]
    # the reference instance: P(the k leaders) = 1 / (1 + (C(n, k) - 1) exp(-g / scale))
    gap = joint.scale * (math.log(math.comb(n, k) - 1) + math.log(9)) if k < n else 0.0
    rows.append(
        TopKPreviewRow(
            "joint", joint.name, joint.scale, joint.accounting, gap, joint.margin,
            picked.method == "joint",
        )
    )  # fmt: skip
    return rows
