import math
from fractions import Fraction

import numpy as np
import pytest

import dpselect.core as dc


def test_atom_domains_are_distinct_types():
    assert isinstance(dc.atom_domain(float), dc.FloatDomain)
    assert not isinstance(dc.atom_domain(float), dc.NaNFloatDomain)
    assert isinstance(dc.atom_domain(float, nan=True), dc.NaNFloatDomain)
    assert isinstance(dc.atom_domain(int), dc.IntDomain)
    assert dc.atom_domain(float) != dc.atom_domain(float, nan=True)
    assert dc.atom_domain(float) == dc.atom_domain(float, nan=False)


def test_atom_membership():
    f = dc.atom_domain(float)
    assert f.member(1.5) and f.member(3) and f.member(math.inf)
    assert not f.member(math.nan) and not f.member("1") and not f.member(True)
    assert dc.atom_domain(float, nan=True).member(math.nan)
    i = dc.atom_domain(int, bounds=(0, 10))
    assert i.member(0) and i.member(10) and i.member(np.int64(5))
    assert not i.member(11) and not i.member(1.0) and not i.member(-1)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(T=str), "T must be int or float"),
        (dict(T=int, nan=True), "nan=True applies to float"),
        (dict(T=float, bounds=(2.0, 1.0)), "lower <= upper"),
        (dict(T=float, bounds=(math.nan, 1.0)), "NaN"),
        (dict(T=float, bounds=[0.0, 1.0]), "tuple"),
    ],
)
def test_atom_domain_errors(kwargs, match):
    with pytest.raises(dc.DomainError, match=match):
        dc.atom_domain(**kwargs)


def test_vector_domain_membership():
    v = dc.vector_domain(dc.atom_domain(float), size=3)
    assert v.member([1.0, 2.0, 3.0])
    assert v.member(np.array([1.0, 2.0, 3.0]))
    assert not v.member(np.array([1.0, np.nan, 3.0]))
    assert not v.member([1.0, 2.0])
    assert not v.member(np.ones((3, 1)))
    assert not v.member("abc")
    vi = dc.vector_domain(dc.atom_domain(int, bounds=(0, 5)))
    assert vi.member(np.array([0, 5], dtype=np.int32))
    assert not vi.member(np.array([0, 6]))
    assert not vi.member(np.array([0.0, 1.0]))  # float dtype is not an int vector
    assert vi.member([])
    with pytest.raises(dc.DomainError, match="size"):
        dc.vector_domain(dc.atom_domain(int), size=-1)
    with pytest.raises(dc.DomainError, match="atom"):
        dc.vector_domain("int")  # type: ignore[arg-type]


def test_range_distance():
    assert dc.LInfDistance(monotonic=True).range_distance(1) == 1
    assert dc.LInfDistance().range_distance(1) == 2
    assert dc.LInfDistance().range_distance(Fraction(1, 3)) == Fraction(2, 3)
    assert dc.LInfDistance().range_distance(1e308) == math.inf  # overflow rounds up
    assert dc.LInfDistance().range_distance(0.1) >= Fraction(2) * Fraction(0.1)
    assert dc.RangeDistance().range_distance(3) == 3
    assert dc.InfDifferenceDistance is dc.RangeDistance
    with pytest.raises(dc.MetricError, match="non-negative"):
        dc.LInfDistance().range_distance(-1)
    with pytest.raises(dc.MetricError, match="NaN"):
        dc.LInfDistance().range_distance(math.nan)
    with pytest.raises(dc.MetricError, match="monotonic"):
        dc.RangeDistance(monotonic=False)


def test_dataset_metrics_need_ints():
    dc.SymmetricDistance().validate(2)
    with pytest.raises(dc.MetricError, match="int"):
        dc.SymmetricDistance().validate(1.5)
    with pytest.raises(dc.MetricError, match="int"):
        dc.ChangeOneDistance().validate(0.5)
    dc.L1Distance().validate(0.5)
    dc.L2Distance().validate(Fraction(1, 2))
    assert dc.L1Distance() != dc.L2Distance()


def test_measures_compare():
    assert dc.MaxDivergence().compare(1.0, 1.0)
    assert not dc.MaxDivergence().compare(1.0000001, 1.0)
    assert dc.ZeroConcentratedDivergence().compare(0.125, 0.5)
    a = dc.Approximate(dc.MaxDivergence())
    assert a.compare((1.0, 1e-7), (1.0, 1e-6))
    assert not a.compare((1.0, 1e-5), (1.0, 1e-6))
    with pytest.raises(dc.MeasureError, match="tuple"):
        a.compare(1.0, (1.0, 0.0))
    with pytest.raises(dc.MeasureError, match="delta"):
        a.compare((1.0, 2.0), (1.0, 3.0))
    with pytest.raises(dc.MeasureError, match="MaxDivergence"):
        dc.Approximate(dc.ZeroConcentratedDivergence())
    r = dc.RenyiDivergence()
    assert r.compare(lambda alpha: alpha * 0.5, (2.0, 1.0))
    assert not r.compare(lambda alpha: alpha * 0.5, (3.0, 1.0))
    with pytest.raises(dc.MeasureError, match="alpha"):
        r.compare(lambda a: a, (1.0, 1.0))
    with pytest.raises(dc.MeasureError, match="non-negative"):
        dc.MaxDivergence().compare(-1.0, 1.0)
