from fractions import Fraction

import pytest

import dpselect.core as dc

INT_VEC = dc.vector_domain(dc.atom_domain(int))
FLOAT_VEC = dc.vector_domain(dc.atom_domain(float))


def make_double() -> dc.Transformation:
    return dc.Transformation(
        input_domain=INT_VEC,
        output_domain=INT_VEC,
        input_metric=dc.SymmetricDistance(),
        output_metric=dc.LInfDistance(),
        function=lambda x: [2 * v for v in x],
        stability_map=lambda d: 2 * d,
    )


def make_toy_measurement(scale: float, metric=None) -> dc.Measurement:
    metric = metric or dc.LInfDistance()
    return dc.Measurement(
        input_domain=INT_VEC,
        input_metric=metric,
        output_measure=dc.MaxDivergence(),
        function=lambda x: max(range(len(x)), key=x.__getitem__),
        privacy_map=lambda d: dc.div_up(metric.range_distance(d), scale),
    )


def test_transformation_map_and_check():
    t = make_double()
    assert t([1, 2]) == [2, 4]
    assert t.map(1) == 2
    assert t.check(1, 2) and not t.check(1, 1)
    with pytest.raises(dc.MetricError, match="non-negative"):
        t.map(-1)


def test_chain_transformation_measurement():
    m = make_double() >> make_toy_measurement(2.0)
    assert m([1, 5, 2]) == 1
    # sym distance 1 -> linf 2 -> range 4 -> eps 4 / 2 = 2
    assert m.map(1) == 2.0
    assert m.check(1, 2.0) and not m.check(1, 1.99)
    assert m.input_metric == dc.SymmetricDistance()
    assert m.output_measure == dc.MaxDivergence()
    scale_again = dc.Transformation(
        input_domain=INT_VEC,
        output_domain=INT_VEC,
        input_metric=dc.LInfDistance(),
        output_metric=dc.LInfDistance(),
        function=lambda x: [3 * v for v in x],
        stability_map=lambda d: 3 * d,
    )
    tt = make_double() >> scale_again
    assert tt.map(1) == 6 and tt([1]) == [6]


def test_postprocess():
    m = make_toy_measurement(1.0) >> (lambda i: ["a", "b"][i])
    assert m([0, 3]) == "b"
    assert m.map(1) == 2.0


def test_chain_mismatch_errors():
    wrong_domain = dc.Measurement(
        input_domain=FLOAT_VEC,
        input_metric=dc.LInfDistance(),
        output_measure=dc.MaxDivergence(),
        function=lambda x: 0,
        privacy_map=lambda d: d,
    )
    with pytest.raises(dc.ChainError, match="input_domain"):
        make_double() >> wrong_domain
    with pytest.raises(dc.ChainError, match="input_metric"):
        make_double() >> make_toy_measurement(1.0, dc.LInfDistance(monotonic=True))
    with pytest.raises(dc.ChainError, match="post-processing"):
        make_toy_measurement(1.0) >> make_double()
    with pytest.raises(dc.ChainError, match="Transformation or a Measurement"):
        make_double() >> 3
    with pytest.raises(dc.ChainError):
        dc.make_chain()
    assert dc.make_chain(make_double(), make_toy_measurement(1.0)).map(1) == 4.0


def test_binary_search_param_smallest_scale_passes():
    # eps = 2 * d_in / scale; for d_out = 0.3 the ideal scale is 20/3, not a float.
    scale = dc.binary_search_param(lambda s: make_toy_measurement(s), d_in=1, d_out=0.3)
    m = make_toy_measurement(scale)
    assert m.check(1, 0.3)
    import math

    below = math.nextafter(scale, 0.0)
    assert not make_toy_measurement(below).check(1, 0.3)
    assert Fraction(scale) >= Fraction(20, 3)


def test_binary_search_largest_epsilon():
    # A measurement parametrised by epsilon: loss = eps * d_in exactly (rounded up).
    def chain(eps: float) -> dc.Measurement:
        return dc.Measurement(
            input_domain=INT_VEC,
            input_metric=dc.SymmetricDistance(),
            output_measure=dc.MaxDivergence(),
            function=lambda x: 0,
            privacy_map=lambda d: dc.mul_up(eps, Fraction(1, 3) * d),
        )

    eps = dc.binary_search_param(chain, d_in=1, d_out=1.0)
    assert chain(eps).check(1, 1.0)
    import math

    assert not chain(math.nextafter(eps, math.inf)).check(1, 1.0)


def test_binary_search_ints_and_errors():
    assert dc.binary_search(lambda k: k * k >= 50, bounds=(0, 100)) == 8
    assert dc.binary_search(lambda k: k * k <= 50, bounds=(0, 100)) == 7
    with pytest.raises(dc.CalibrationError, match="both bounds"):
        dc.binary_search(lambda k: True, bounds=(0, 10))
    with pytest.raises(dc.CalibrationError, match="fails at both"):
        dc.binary_search(lambda k: False, bounds=(0, 10))
    with pytest.raises(dc.CalibrationError, match="probed"):
        dc.binary_search(lambda x: False)
    with pytest.raises(dc.CalibrationError, match="lower <= upper"):
        dc.binary_search(lambda x: x > 1, bounds=(3.0, 1.0))


def test_error_hierarchy():
    for cls in (
        dc.DomainError,
        dc.MetricError,
        dc.MeasureError,
        dc.PrivacyMapError,
        dc.ChainError,
        dc.CalibrationError,
        dc.ParameterError,
        dc.BudgetExceeded,
        dc.LedgerError,
    ):
        assert issubclass(cls, dc.DPSelectError)
    assert dc.PrivacyBudgetExceeded is dc.BudgetExceeded
