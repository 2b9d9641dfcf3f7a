"""Transformations and measurements, the seeds' building blocks (seeds 000, 001).

A :class:`Transformation` maps a dataset to another value with a *stability map*
``d_in -> d_mid`` (how far apart outputs are when inputs are ``d_in`` apart). A
:class:`Measurement` releases a random value with a *privacy map* ``d_in -> d_out`` (the privacy
loss for inputs ``d_in`` apart, seed 001, postcondition 2). ``>>`` chains them, checking that
the output domain and metric of the left side are the input domain and metric of the right.
A measurement may also be chained with a plain function of its output (post-processing, which
never costs privacy).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .domains import Domain
from .errors import ChainError, PrivacyMapError
from .measures import Measure
from .metrics import Metric

__all__ = ["Measurement", "Transformation", "make_chain"]


def _validated_map(metric: Metric, raw: Callable[[Any], Any], d_in: Any) -> Any:
    metric.validate(d_in)
    out = raw(d_in)
    if out is None:
        raise PrivacyMapError("the map returned no distance")
    return out


@dataclass(frozen=True, eq=False)
class Transformation:
    """A stable function from ``input_domain`` to ``output_domain``."""

    input_domain: Domain
    output_domain: Domain
    input_metric: Metric
    output_metric: Metric
    function: Callable[[Any], Any]
    stability_map: Callable[[Any], Any]

    def __call__(self, x: Any) -> Any:
        return self.function(x)

    def map(self, d_in: Any) -> Any:
        """The output distance of inputs ``d_in`` apart (never an under-statement).

        Parameters
        ----------
        d_in : int, float or Fraction
            The input distance under ``input_metric``: a non-negative number (an int under
            :class:`SymmetricDistance` and :class:`ChangeOneDistance`).

        Returns
        -------
        object
            The output distance under ``output_metric``, from ``stability_map``.

        Raises
        ------
        MetricError
            ``d_in`` is not a valid distance under ``input_metric``.
        PrivacyMapError
            The stability map returned ``None``.
        """
        return _validated_map(self.input_metric, self.stability_map, d_in)

    def check(self, d_in: Any, d_out: Any) -> bool:
        """Whether inputs ``d_in`` apart give outputs at most ``d_out`` apart.

        Parameters
        ----------
        d_in : int, float or Fraction
            The input distance, as for :meth:`map`.
        d_out : int, float or Fraction
            The output distance to stay within, under ``output_metric``.

        Returns
        -------
        bool
            ``map(d_in) <= d_out``.
        """
        return bool(self.map(d_in) <= d_out)

    def __rshift__(self, other: Any) -> Any:
        if isinstance(other, Transformation):
            _check_link(self, other)
            return Transformation(
                input_domain=self.input_domain,
                output_domain=other.output_domain,
                input_metric=self.input_metric,
                output_metric=other.output_metric,
                function=_compose(self.function, other.function),
                stability_map=_compose(self.map, other.map),
            )
        if isinstance(other, Measurement):
            _check_link(self, other)
            return Measurement(
                input_domain=self.input_domain,
                input_metric=self.input_metric,
                output_measure=other.output_measure,
                function=_compose(self.function, other.function),
                privacy_map=_compose(self.map, other.map),
            )
        raise ChainError(
            f"a Transformation can be chained with a Transformation or a Measurement, "
            f"not {type(other).__name__}"
        )


@dataclass(frozen=True, eq=False)
class Measurement:
    """A randomised function from ``input_domain`` with a privacy map into ``output_measure``."""

    input_domain: Domain
    input_metric: Metric
    output_measure: Measure
    function: Callable[[Any], Any]
    privacy_map: Callable[[Any], Any]

    def __call__(self, x: Any) -> Any:
        return self.function(x)

    def map(self, d_in: Any) -> Any:
        """The privacy loss of inputs ``d_in`` apart, rounded toward a larger loss.

        Parameters
        ----------
        d_in : int, float or Fraction
            The input distance under ``input_metric``: a non-negative number (an int under
            :class:`SymmetricDistance` and :class:`ChangeOneDistance`).

        Returns
        -------
        object
            The loss in the form of ``output_measure``: ``epsilon`` (:class:`MaxDivergence`),
            ``rho`` (:class:`ZeroConcentratedDivergence`), an ``(epsilon, delta)`` tuple
            (:class:`Approximate`) or a curve ``alpha -> epsilon`` (:class:`RenyiDivergence`).

        Raises
        ------
        MetricError
            ``d_in`` is not a valid distance under ``input_metric``.
        PrivacyMapError
            The privacy map returned ``None``.
        """
        return _validated_map(self.input_metric, self.privacy_map, d_in)

    def check(self, d_in: Any, d_out: Any) -> bool:
        """Whether inputs ``d_in`` apart are ``d_out``-close under the output measure.

        Parameters
        ----------
        d_in : int, float or Fraction
            The input distance, as for :meth:`map`.
        d_out : object
            The privacy target in the form of ``output_measure`` (see
            :meth:`Measure.compare <dpselect.core.measures.Measure.compare>`).

        Returns
        -------
        bool
            ``output_measure.compare(map(d_in), d_out)``: the loss is within the target.
        """
        return self.output_measure.compare(self.map(d_in), d_out)

    def __rshift__(self, postprocess: Any) -> Measurement:
        if isinstance(postprocess, (Transformation, Measurement)) or not callable(postprocess):
            raise ChainError(
                "a Measurement can only be followed by a post-processing function of its "
                f"output, not {type(postprocess).__name__}"
            )
        return Measurement(
            input_domain=self.input_domain,
            input_metric=self.input_metric,
            output_measure=self.output_measure,
            function=_compose(self.function, postprocess),
            privacy_map=self.privacy_map,
        )


def _compose(f: Callable[[Any], Any], g: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def composed(x: Any) -> Any:
        return g(f(x))

    return composed


def _check_link(left: Transformation, right: Transformation | Measurement) -> None:
    if left.output_domain != right.input_domain:
        raise ChainError(
            f"cannot chain: output_domain {left.output_domain!r} of the left side differs "
            f"from input_domain {right.input_domain!r} of the right side"
        )
    if left.output_metric != right.input_metric:
        raise ChainError(
            f"cannot chain: output_metric {left.output_metric!r} of the left side differs "
            f"from input_metric {right.input_metric!r} of the right side"
        )


def make_chain(
    *pieces: Transformation | Measurement | Callable[[Any], Any],
) -> Transformation | Measurement:
    """Chain ``pieces`` left to right with ``>>``.

    Parameters
    ----------
    *pieces : Transformation, Measurement or callable
        At least one piece: Transformations, then at most one Measurement, then
        post-processing functions of its output. Each link must match the previous piece's
        output domain and metric.

    Returns
    -------
    Transformation or Measurement
        The chain (the piece itself when only one is given).

    Raises
    ------
    ChainError
        No piece, or two neighbouring pieces that cannot be chained.
    """
    if not pieces:
        raise ChainError("make_chain needs at least one piece")
    out: Any = pieces[0]
    for piece in pieces[1:]:
        out = out >> piece
    chain: Transformation | Measurement = out
    return chain
