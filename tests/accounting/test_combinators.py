"""make_composition, make_adaptive_composition and make_privacy_filter."""

from fractions import Fraction

import pytest

from dpselect.accounting import (
    make_adaptive_composition,
    make_composition,
    make_privacy_filter,
    zcdp_rdp,
)
from dpselect.core import (
    Approximate,
    BudgetExceeded,
    ChainError,
    L1Distance,
    MaxDivergence,
    MeasureError,
    Measurement,
    PrivacyMapError,
    RenyiDivergence,
    ZeroConcentratedDivergence,
    atom_domain,
)

DOMAIN = atom_domain(float)
METRIC = L1Distance()


PURE = MaxDivergence()


def toy(eps, measure=PURE, tag=None):
    """A measurement whose map is d_in * eps (in the measure's form); it returns ``tag``."""

    def privacy_map(d_in):
        if isinstance(measure, Approximate):
            return (d_in * eps[0], eps[1])
        if isinstance(measure, RenyiDivergence):
            return zcdp_rdp(d_in * eps)
        return d_in * eps

    return Measurement(DOMAIN, METRIC, measure, lambda x: (tag, x), privacy_map)


def test_composition_sums_exactly_and_rounds_up():
    m = make_composition([toy(0.1, tag=1), toy(0.2, tag=2)])
    assert m(5.0) == [(1, 5.0), (2, 5.0)]
    assert Fraction(m.map(1.0)) >= Fraction(0.1) + Fraction(0.2)
    assert m.map(1.0) == 0.30000000000000004
    assert m.check(1.0, 0.31) and not m.check(1.0, 0.3)


def test_composition_in_each_measure():
    z = make_composition([toy(0.1, ZeroConcentratedDivergence())] * 3)
    assert z.output_measure == ZeroConcentratedDivergence()
    assert z.map(1.0) >= 0.3
    a = make_composition([toy((0.1, 1e-7), Approximate()), toy((0.5, 0.0), Approximate())])
    eps, delta = a.map(1.0)
    assert eps >= 0.6 and delta >= 1e-7
    r = make_composition([toy(0.1, RenyiDivergence()), toy(0.2, RenyiDivergence())])
    assert r.map(1.0)(2.0) >= 0.6 - 1e-15


def test_composition_refuses_mismatches():
    with pytest.raises(MeasureError):
        make_composition([toy(0.1), toy(0.1, ZeroConcentratedDivergence())])
    other = Measurement(atom_domain(int), METRIC, MaxDivergence(), lambda x: x, lambda d: d)
    with pytest.raises(ChainError):
        make_composition([toy(0.1), other])
    with pytest.raises(ChainError):
        make_composition([])


def test_adaptive_composition():
    meas = make_adaptive_composition(DOMAIN, METRIC, MaxDivergence(), d_in=1.0, d_mids=[0.5, 0.25])
    assert meas.map(1.0) == 0.75
    with pytest.raises(PrivacyMapError):
        meas.map(2.0)
    compositor = meas(3.0)
    with pytest.raises(BudgetExceeded):
        compositor(toy(0.6))  # over its slot: refused, nothing charged
    assert compositor.answered == 0 and compositor.spent == 0.0
    assert compositor(toy(0.5, tag="a")) == ("a", 3.0)
    assert compositor(toy(0.1, tag="b")) == ("b", 3.0)
    with pytest.raises(BudgetExceeded):
        compositor(toy(0.0))  # no slot left
    assert compositor.spent == 0.75


@pytest.mark.parametrize(
    "measure,loss,budget,expected",
    [
        (MaxDivergence(), 0.1, 1.0, 9),  # 10 * Fraction(0.1) > 1: exact sums refuse the 10th
        (ZeroConcentratedDivergence(), 0.125, 1.0, 8),
        (Approximate(), (0.1, 1e-7), (10.0, 5e-7), 5),
    ],
)
def test_privacy_filter_refuses_what_does_not_fit(measure, loss, budget, expected):
    meas = make_privacy_filter(DOMAIN, METRIC, measure, d_in=1.0, d_out=budget)
    assert meas.map(0.5) == budget
    filt = meas(0.0)
    answered = 0
    for _ in range(20):
        try:
            filt(toy(loss, measure))
            answered += 1
        except BudgetExceeded as exc:
            assert "nothing charged" in str(exc)
    assert answered == expected == filt.answered
    assert measure.compare(filt.spent, budget)


def test_privacy_filter_accepts_a_smaller_query_after_a_refusal():
    filt = make_privacy_filter(DOMAIN, METRIC, MaxDivergence(), d_in=1.0, d_out=1.0)(0.0)
    filt(toy(0.75))
    with pytest.raises(BudgetExceeded) as info:
        filt(toy(0.5))
    assert "0.25" in str(info.value)  # the message shows what remains
    assert filt.remaining == 0.25
    filt(toy(0.25))
    assert filt.remaining == 0.0
    with pytest.raises(MeasureError):
        filt(toy(0.1, ZeroConcentratedDivergence()))
    with pytest.raises(MeasureError):
        make_privacy_filter(DOMAIN, METRIC, RenyiDivergence(), d_in=1.0, d_out=(2.0, 1.0))
