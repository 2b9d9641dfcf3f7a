"""The Laplace and Gaussian mechanisms on the power-of-two lattice, and Gaussian calibrations.

- Privacy maps against hand values (exact Fractions) and against OpenDP 0.16 (same lattice
  exponent ``k``: identical floats; OpenDP's default ``k = -1074`` needs no rounding slack, so
  ours is above it by at most ``d 2^-30`` relative).
- Goodness of fit: each function releases ``2^k (r(x) + Z)`` with ``Z`` exactly the discrete law
  of the map's proof. Chi-square at a false-failure rate of 1e-6 (``tests/gof.py``) on 100k
  draws against bin probabilities from the exact CDF; ``test_gof_catches_factor_two`` shows that
  the same checks reject a mechanism whose scale is off by 2.
- Every construction error names its argument; data values never raise.
- Analytic Gaussian (Balle and Wang 2018) against Google's dp-accounting (exact PLD of the
  continuous Gaussian) and a scipy reference.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import optimize, stats

from dpselect.accounting import zcdp_to_approx_dp
from dpselect.core import (
    Approximate,
    DomainError,
    L1Distance,
    L2Distance,
    LInfDistance,
    MaxDivergence,
    MeasureError,
    MetricError,
    ParameterError,
    SymmetricDistance,
    ZeroConcentratedDivergence,
    atom_domain,
    float_up,
    vector_domain,
)
from dpselect.mechanisms.gaussian import (
    gaussian_delta_analytic,
    gaussian_sigma_analytic,
    gaussian_sigma_classic,
    make_gaussian,
)
from dpselect.mechanisms.laplace import make_laplace
from dpselect.mechanisms.lattice import Lattice, granularity_exponent
from dpselect.sampling import InsecureSeededSource
from tests.gof import assert_fits, chi2_statistic, chi2_threshold, fits

N = 100_000  # draws per goodness-of-fit test (one vectorised call)
FLOAT = atom_domain(float)
INT = atom_domain(int)


def src(seed: int) -> InsecureSeededSource:
    return InsecureSeededSource(seed)


# ------------------------------------------------------------------------------ hand values
def test_laplace_map_hand_values() -> None:
    m = make_laplace(INT, L1Distance(), 2)
    assert (m.map(0), m.map(1), m.map(3), m.map(Fraction(1, 3))) == (
        0.0,
        0.5,
        1.5,
        float_up(Fraction(1, 6)),
    )
    assert float_up(Fraction(1, 6)) > 1 / 6  # rounded up, not to nearest
    assert m.map(1 / 3) == float_up(Fraction(1 / 3) / 2)
    assert m.map(math.inf) == math.inf
    # float data: k = floor(log2 1) - 30 = -30, slack 2^-30 per coordinate
    m = make_laplace(FLOAT, L1Distance(), 1.0)
    assert m.map(1.0) == float_up(1 + Fraction(1, 2**30)) == 1.0000000009313226
    assert m.map(0) == 0.0
    m = make_laplace(vector_domain(FLOAT, size=10), L1Distance(), 3.0)
    k = granularity_exponent(Fraction(3))
    assert k == -29
    assert m.map(2) == float_up((2 + 10 * Fraction(2) ** k) / 3)


def test_gaussian_map_hand_values() -> None:
    m = make_gaussian(INT, L2Distance(), 1)
    assert (m.map(0), m.map(1), m.map(2)) == (0.0, 0.5, 2.0)
    m = make_gaussian(vector_domain(INT), L2Distance(), 2)  # ints: no size needed
    assert m.map(1) == 0.125
    m = make_gaussian(vector_domain(FLOAT, size=9), L2Distance(), 1.0)  # sqrt 9 = 3 exactly
    assert m.map(1) == float_up((1 + 3 * Fraction(1, 2**30)) ** 2 / 2)
    m = make_gaussian(vector_domain(FLOAT, size=10), L2Distance(), 1.0)
    exact = (1 + math.sqrt(10) * 2.0**-30) ** 2 / 2
    assert exact <= m.map(1) <= exact * (1 + 1e-15)
    assert m.output_measure == ZeroConcentratedDivergence()


def test_gaussian_approximate_map() -> None:
    m = make_gaussian(INT, L1Distance(), 1, output_measure=Approximate(MaxDivergence()), delta=1e-6)
    assert m.output_measure == Approximate(MaxDivergence())
    eps, delta = m.map(1)
    assert (eps, delta) == (zcdp_to_approx_dp(0.5, 1e-6), 1e-6)
    assert eps == pytest.approx(5.2215344445, rel=1e-9)
    assert m.map(0) == (0.0, 1e-6)
    assert m.check(1, (5.23, 1e-6)) and not m.check(1, (5.2, 1e-6))


# ------------------------------------------------------------------------------ OpenDP 0.16
dp = pytest.importorskip("opendp.prelude")
dp.enable_features("contrib")


@pytest.mark.parametrize("scale", [0.3, 1.0, 7.5, 1234.5])
@pytest.mark.parametrize("d_in", [0.5, 1.0, 3.0])
def test_maps_match_opendp(scale: float, d_in: float) -> None:
    k = granularity_exponent(Fraction(scale))
    f_atom = dp.atom_domain(T=float, nan=False)
    peers = [
        # (ours, OpenDP at our k, OpenDP default k)
        (
            make_laplace(FLOAT, L1Distance(), scale),
            dp.m.make_laplace(f_atom, dp.absolute_distance(T=float), scale, k=k),
            dp.m.make_laplace(f_atom, dp.absolute_distance(T=float), scale),
            1,
        ),
        (
            make_laplace(vector_domain(FLOAT, size=7), L1Distance(), scale),
            dp.m.make_laplace(
                dp.vector_domain(f_atom, size=7), dp.l1_distance(T=float), scale, k=k
            ),
            dp.m.make_laplace(dp.vector_domain(f_atom, size=7), dp.l1_distance(T=float), scale),
            7,
        ),
        (
            make_gaussian(FLOAT, L2Distance(), scale),
            dp.m.make_gaussian(f_atom, dp.absolute_distance(T=float), scale, k=k),
            dp.m.make_gaussian(f_atom, dp.absolute_distance(T=float), scale),
            1,
        ),
        (
            make_gaussian(vector_domain(FLOAT, size=16), L2Distance(), scale),
            dp.m.make_gaussian(
                dp.vector_domain(f_atom, size=16), dp.l2_distance(T=float), scale, k=k
            ),
            dp.m.make_gaussian(dp.vector_domain(f_atom, size=16), dp.l2_distance(T=float), scale),
            16,
        ),
    ]
    for ours, same_k, default_k, d in peers:
        assert ours.map(d_in) == same_k.map(d_in)
        # OpenDP's default lattice 2^-1074 holds every float: no slack, so ours is a bit above.
        relative_slack = 2 * d * 2.0**-30 * scale / d_in + 1e-15
        assert default_k.map(d_in) <= ours.map(d_in) <= default_k.map(d_in) * (1 + relative_slack)
        assert ours.map(0) == 0.0  # OpenDP charges the slack even at d_in = 0
    # integers: no lattice rounding anywhere, identical maps
    for d in (1, 2, 5):
        assert make_laplace(INT, L1Distance(), scale).map(d) == dp.m.make_laplace(
            dp.atom_domain(T=int), dp.absolute_distance(T=int), scale
        ).map(d)
        assert make_gaussian(INT, L1Distance(), scale).map(d) == dp.m.make_gaussian(
            dp.atom_domain(T=int), dp.absolute_distance(T=int), scale
        ).map(d)


def test_approximate_map_matches_opendp() -> None:
    for scale in (0.7, 1.0, 4.0):
        peer = dp.c.make_fix_delta(
            dp.c.make_zCDP_to_approxDP(
                dp.m.make_gaussian(dp.atom_domain(T=int), dp.absolute_distance(T=int), scale)
            ),
            1e-7,
        )
        ours = make_gaussian(
            INT, L1Distance(), scale, output_measure=Approximate(MaxDivergence()), delta=1e-7
        )
        eps, delta = ours.map(1)
        assert delta == 1e-7
        assert eps == pytest.approx(peer.map(1)[0], rel=1e-12)


# ------------------------------------------------------------------------------ exact laws
def laplace_cdf(t: float, z: np.ndarray) -> np.ndarray:
    """P(Z <= z) for P(Z = z) ∝ exp(-|z| / t): q^-z / (1 + q) below 0, 1 - q^(z+1)/(1+q)."""
    q1 = 1.0 + math.exp(-1.0 / t)
    z = np.asarray(z, dtype=float)
    with np.errstate(over="ignore"):
        return np.where(z < 0, np.exp(z / t) / q1, 1.0 - np.exp(-(z + 1) / t) / q1)


def gaussian_cdf(sigma: float, z: np.ndarray) -> np.ndarray:
    """P(Z <= z) for the discrete Gaussian: an explicit normalised sum for small sigma, the
    normal CDF at z + 1/2 for sigma >= 1000 (midpoint rule: error below 1e-12 there)."""
    z = np.asarray(z, dtype=float)
    if sigma >= 1000:
        return stats.norm.cdf((z + 0.5) / sigma)
    m = int(40 * sigma) + 40
    support = np.arange(-m, m + 1)
    w = np.exp(-(support.astype(float) ** 2) / (2 * sigma**2))
    cum = np.cumsum(w) / w.sum()
    idx = np.clip(np.searchsorted(support, z, side="right") - 1, -1, support.size - 1)
    return np.where(idx < 0, 0.0, cum[np.maximum(idx, 0)])


def binned(noise: np.ndarray, cdf, width: float, half_bins: int = 24):
    """Counts of integer noise in ``2 * half_bins`` bins of ``width`` plus two tails, and the
    exact probabilities of the same bins."""
    inner = np.unique(np.round(np.arange(-half_bins, half_bins + 1) * width))
    edges = np.concatenate([[-np.inf], inner, [np.inf]])
    counts = np.histogram(noise, bins=edges - 0.5)[0]  # integer z in [e_j, e_j+1)
    upper = np.concatenate([inner - 1, [np.inf]])  # bin j holds z <= upper[j]
    cdf_up = np.concatenate([cdf(upper[:-1]), [1.0]])
    probs = np.diff(np.concatenate([[0.0], cdf_up]))
    return counts, probs


def lattice_noise(out: np.ndarray, x: np.ndarray, k: int | None) -> np.ndarray:
    """``out / 2^k - r(x)`` with ``r`` computed independently (exact Fractions)."""
    if k is None:
        return np.asarray(out, dtype=np.int64) - np.asarray(x, dtype=np.int64)
    step = Fraction(2) ** k
    cache: dict[float, int] = {}
    for v in np.unique(x):
        cache[float(v)] = round(Fraction(float(v)) / step)
    r = (
        np.array([cache[float(v)] for v in x], dtype=np.int64)
        if len(cache) > 1
        else cache[float(x[0])]
    )
    scaled = np.ldexp(np.asarray(out, dtype=float), -k)
    assert np.all(scaled == np.round(scaled)), "outputs are not on the lattice 2^k Z"
    return scaled.astype(np.int64) - r


CASES = [
    # (name, constructor, atom, scale, data value, law)
    ("laplace int", make_laplace, INT, 3, 5, "laplace"),
    ("laplace float", make_laplace, FLOAT, 1.7, 0.3, "laplace"),
    ("laplace float tiny scale", make_laplace, FLOAT, 1e-7, 123.456, "laplace"),
    (
        "laplace float bounded",
        make_laplace,
        atom_domain(float, bounds=(0.0, 10.0)),
        2.5,
        9.99,
        "laplace",
    ),
    ("gaussian int", make_gaussian, INT, 4, -7, "gaussian"),
    ("gaussian float", make_gaussian, FLOAT, 2.5, -0.7, "gaussian"),
    ("gaussian float large", make_gaussian, FLOAT, 3e5, 1e6 + 0.1, "gaussian"),
]


def draw(case, scale_factor: float = 1.0, seed: int = 0):
    """Noise of one vectorised release, in units of the lattice of the case's own scale (a
    mechanism built with ``scale * scale_factor`` may use a coarser lattice)."""
    _, make, atom, scale, value, _ = case
    m = make(
        vector_domain(atom, size=N),
        L1Distance() if make is make_laplace else L2Distance(),
        scale * scale_factor,
        source=src(seed),
    )
    data = np.full(N, value, dtype=np.int64 if atom is INT else float)
    if atom is INT:
        return lattice_noise(m(data), data, None)
    k = granularity_exponent(Fraction(scale * scale_factor))
    k_ref = granularity_exponent(Fraction(scale))
    assert k >= k_ref
    return lattice_noise(m(data), data, k) * 2 ** (k - k_ref)


def law_bins(case, noise):
    _, _, atom, scale, _, law = case
    k = None if atom is INT else granularity_exponent(Fraction(scale))
    t = float(Fraction(scale) / (1 if k is None else Fraction(2) ** k))
    if law == "laplace":
        return binned(noise, lambda z: laplace_cdf(t, z), width=t / 4)
    return binned(noise, lambda z: gaussian_cdf(t, z), width=t / 6)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_released_values_fit_the_exact_law(case) -> None:
    noise = draw(case, seed=sum(map(ord, case[0])))
    counts, probs = law_bins(case, noise)
    assert_fits(counts, probs)


def test_opendp_samples_fit_the_same_law() -> None:
    """OpenDP's integer mechanisms sample the same discrete laws: its draws pass the same
    checks against the same reference probabilities (a check of the reference itself)."""
    vec = dp.vector_domain(dp.atom_domain(T=int))
    for case, peer in (
        (CASES[0], dp.m.make_laplace(vec, dp.l1_distance(T=int), 3.0)),
        (CASES[4], dp.m.make_gaussian(vec, dp.l2_distance(T=int), 4.0)),
    ):
        value = case[4]
        noise = np.asarray(peer([value] * (N // 2)), dtype=np.int64) - value
        counts, probs = law_bins(case, noise)
        assert_fits(counts, probs)


def test_gof_catches_factor_two() -> None:
    """The same checks, at the same N, reject a mechanism built with twice the scale."""
    for case in CASES:
        noise = draw(case, scale_factor=2.0, seed=7)
        counts, probs = law_bins(case, noise)
        stat, df = chi2_statistic(counts, probs)
        assert stat > 10 * chi2_threshold(df), (case[0], stat, chi2_threshold(df))
        assert not fits(counts, probs)


def test_clamping_and_output_types() -> None:
    bounded = make_laplace(atom_domain(float, bounds=(0.0, 10.0)), L1Distance(), 1.0, source=src(1))
    out = [bounded(100.0) for _ in range(200)]  # clamped to 10 before the noise
    assert abs(np.mean(out) - 10.0) < 0.5 and all(isinstance(v, float) for v in out)
    ints = make_laplace(atom_domain(int, bounds=(0, 5)), L1Distance(), 1.0, source=src(2))
    assert all(isinstance(ints(v), int) for v in (-(10**30), 3, 10**30))
    wide = make_gaussian(vector_domain(INT), L2Distance(), 1.0, source=src(3))
    out_big = wide([0, 2**80, -(2**90)])
    assert int(out_big[1]) - 2**80 < 100 and out_big.dtype == object
    f = make_gaussian(vector_domain(FLOAT, size=3), L2Distance(), 1e-6, source=src(4))
    res = f([1e300, math.inf, -math.inf])
    assert res[0] == pytest.approx(1e300) and abs(res[1]) > 1e308 and res[2] < -1e308


def test_lattice_rounding_is_exact_for_huge_integers() -> None:
    """NumPy would round 2^63 + 1 to a float (or a list [0, 2^63] to float64): the lattice
    takes such integers exactly."""
    lat = Lattice(-40)
    assert lat.to_lattice([2**63 + 1, 0.75], 2).tolist() == [(2**63 + 1) << 40, 3 << 38]
    assert lat.to_lattice(np.array([2**60 + 1], dtype=np.int64), 1)[0] == (2**60 + 1) << 40
    ints = Lattice(None)
    assert ints.to_lattice([0, 2**63], 2).tolist() == [0, 2**63]
    assert ints.to_lattice([-1, 2**64 + 1], 2).tolist() == [-1, 2**64 + 1]
    # ties go to even, and tiny values far below 2^k / 2 go to 0
    assert Lattice(0).to_lattice([0.5, 1.5, 2.5, -0.5, 5e-324], 5).tolist() == [0, 2, 2, 0, 0]


# ------------------------------------------------------------------------------ errors
def names(exc: pytest.ExceptionInfo, argument: str) -> bool:
    return argument in str(exc.value)


@pytest.mark.parametrize("make", [make_laplace, make_gaussian])
def test_construction_errors_name_the_argument(make) -> None:
    metric = L1Distance() if make is make_laplace else L2Distance()
    wrong_vector_metric = L2Distance() if make is make_laplace else L1Distance()
    bad = [
        (DomainError, "input_domain", dict(input_domain=atom_domain(float, nan=True))),
        (
            DomainError,
            "input_domain",
            dict(input_domain=vector_domain(atom_domain(float, nan=True), size=2)),
        ),
        (DomainError, "size", dict(input_domain=vector_domain(FLOAT))),
        (DomainError, "input_domain", dict(input_domain="floats")),
        (MetricError, "input_metric", dict(input_metric=LInfDistance())),
        (MetricError, "input_metric", dict(input_metric=SymmetricDistance())),
        (
            MetricError,
            "input_metric",
            dict(input_domain=vector_domain(FLOAT, size=2), input_metric=wrong_vector_metric),
        ),
        (ParameterError, "scale", dict(scale=0)),
        (ParameterError, "scale", dict(scale=-1.0)),
        (ParameterError, "scale", dict(scale=math.nan)),
        (ParameterError, "scale", dict(scale=math.inf)),
        (ParameterError, "scale", dict(scale="1")),
        (ParameterError, "scale", dict(scale=True)),
        (ParameterError, "scale", dict(scale=2.0**-1050)),  # lattice below the smallest float
        (
            ParameterError,
            "scale",
            dict(input_domain=INT, scale=2.0**-40 if make is make_gaussian else 2.0**-70),
        ),
        (
            ParameterError,
            "scale",
            dict(input_domain=INT, scale=2.0**53 if make is make_laplace else 2.0**51),
        ),
        (ParameterError, "source", dict(source=42)),
    ]
    for error, argument, override in bad:
        kwargs = dict(input_domain=FLOAT, input_metric=metric, scale=1.0) | override
        with pytest.raises(error) as exc:
            make(**kwargs)
        assert names(exc, argument), (override, str(exc.value))


def test_gaussian_measure_errors() -> None:
    approx = Approximate(MaxDivergence())
    with pytest.raises(ParameterError, match="delta"):
        make_gaussian(FLOAT, L2Distance(), 1.0, delta=1e-6)
    with pytest.raises(ParameterError, match="delta"):
        make_gaussian(FLOAT, L2Distance(), 1.0, output_measure=approx)
    for bad_delta in (0, 1, -0.1, 1.5, math.nan):
        with pytest.raises(ParameterError, match="delta"):
            make_gaussian(FLOAT, L2Distance(), 1.0, output_measure=approx, delta=bad_delta)
    with pytest.raises(MeasureError, match="output_measure"):
        make_gaussian(FLOAT, L2Distance(), 1.0, output_measure=MaxDivergence())


def test_map_refuses_negative_distance() -> None:
    for m in (make_laplace(FLOAT, L1Distance(), 1.0), make_gaussian(INT, L2Distance(), 1.0)):
        with pytest.raises(MetricError, match="d_in"):
            m.map(-1.0)


def test_calibration_errors_name_the_argument() -> None:
    cases = [
        (gaussian_sigma_classic, (1, 1.0, 1e-5), "epsilon"),  # not proven for eps >= 1
        (gaussian_sigma_classic, (1, 0, 1e-5), "epsilon"),
        (gaussian_sigma_classic, (1, 0.5, 0), "delta"),
        (gaussian_sigma_classic, (0, 0.5, 1e-5), "sensitivity"),
        (gaussian_sigma_analytic, (1, -1, 1e-5), "epsilon"),
        (gaussian_sigma_analytic, (1, 1, 1.0), "delta"),
        (gaussian_sigma_analytic, (-1, 1, 1e-5), "sensitivity"),
        (gaussian_delta_analytic, (1, 0, 1.0), "sigma"),
        (gaussian_delta_analytic, (1, 1, -1.0), "epsilon"),
        (gaussian_delta_analytic, (math.inf, 1, 1.0), "sensitivity"),
    ]
    for fn, args, argument in cases:
        with pytest.raises(ParameterError, match=argument):
            fn(*args)


# ------------------------------------------------------------------------------ properties
SCALES = st.floats(min_value=1e-3, max_value=1e4)
D_INS = st.one_of(st.floats(min_value=0, max_value=1e6), st.fractions(min_value=0, max_value=10**6))
SIZES = st.sampled_from([1, 3, 10, 1000])


@settings(max_examples=150, deadline=None)
@given(
    kind=st.sampled_from(["laplace", "gaussian"]),
    floats=st.booleans(),
    scale=SCALES,
    size=SIZES,
    d1=D_INS,
    d2=D_INS,
)
def test_maps_monotone_non_negative_and_rounded_up(kind, floats, scale, size, d1, d2) -> None:
    make = make_laplace if kind == "laplace" else make_gaussian
    metric = L1Distance() if kind == "laplace" else L2Distance()
    m = make(vector_domain(FLOAT if floats else INT, size=size), metric, scale)
    lo, hi = sorted([Fraction(d1), Fraction(d2)])
    lo_v, hi_v = m.map(lo), m.map(hi)
    assert 0 <= lo_v <= hi_v
    k = granularity_exponent(Fraction(scale)) if floats else None
    b = Fraction(scale)
    for d, value in ((lo, lo_v), (hi, hi_v)):
        if d == 0:
            assert value == 0.0
            continue
        if kind == "laplace":
            exact = (d + (size * Fraction(2) ** k if floats else 0)) / b
            assert value == float_up(exact)  # the smallest float above the exact value
        else:
            root = math.isqrt(size)
            sqrt_lo = (
                Fraction(root)
                if root * root == size
                else Fraction(math.sqrt(size)) * (1 - Fraction(1, 2**50))
            )
            lower = (d + (sqrt_lo * Fraction(2) ** k if floats else 0)) ** 2 / (2 * b * b)
            assert Fraction(value) >= lower  # never below the true bound
            tiny = Fraction(2) ** -1074  # a value below the smallest float rounds up to it
            assert Fraction(value) <= lower * (1 + Fraction(1, 10**12)) + tiny  # and tight


FLOAT_VALUES = st.floats(allow_nan=False, allow_infinity=True, allow_subnormal=True)
INT_VALUES = st.integers(min_value=-(2**100), max_value=2**100)
MECHANISMS = {
    "laplace float": make_laplace(vector_domain(FLOAT, size=4), L1Distance(), 0.01, source=src(5)),
    "gaussian float": make_gaussian(vector_domain(FLOAT, size=4), L2Distance(), 3.0, source=src(6)),
    "laplace bounded": make_laplace(
        vector_domain(atom_domain(float, bounds=(-1.0, 1.0)), size=4),
        L1Distance(),
        1.0,
        source=src(7),
    ),
    "laplace int": make_laplace(vector_domain(INT), L1Distance(), 2.0, source=src(8)),
    "gaussian int": make_gaussian(vector_domain(INT), L2Distance(), 0.5, source=src(9)),
    "scalar float": make_laplace(FLOAT, L2Distance(), 1e-300, source=src(10)),
    "scalar int": make_gaussian(INT, L1Distance(), 1e9, source=src(11)),
}


@settings(max_examples=120, deadline=None)
@given(data=st.data(), name=st.sampled_from(sorted(MECHANISMS)))
def test_data_in_the_domain_never_raise(data, name) -> None:
    """Neighbouring inputs drawn from the domain (anything in it, infinities included) are
    both released without an error: errors depend only on public facts."""
    m = MECHANISMS[name]
    dom = m.input_domain
    atom = getattr(dom, "element_domain", dom)
    values = INT_VALUES if atom == INT or "int" in name else FLOAT_VALUES
    if atom.bounds is not None:
        values = st.floats(*atom.bounds)
    if dom is atom:
        x, x2 = data.draw(values), data.draw(values)
    else:
        x = data.draw(st.lists(values, min_size=4, max_size=4))
        x2 = list(x)
        x2[data.draw(st.integers(0, 3))] = data.draw(values)
        if "float" in name or "bounded" in name:
            x, x2 = np.array(x, dtype=float), np.array(x2, dtype=float)
    assert dom.member(x) and dom.member(x2)
    for v in (x, x2):
        out = m(v)
        assert out is not None


def test_nan_is_outside_the_domain() -> None:
    m = make_laplace(FLOAT, L1Distance(), 1.0)
    with pytest.raises(DomainError):
        m(math.nan)
    v = make_laplace(vector_domain(FLOAT, size=2), L1Distance(), 1.0)
    with pytest.raises(DomainError, match="size"):
        v([1.0, 2.0, 3.0])


# ------------------------------------------------------------------------------ calibration
def reference_delta(sens: float, sigma: float, eps: float) -> float:
    a, b = sens / (2 * sigma), eps * sigma / sens
    return stats.norm.cdf(a - b) - math.exp(eps) * stats.norm.cdf(-a - b)


def test_classic_calibration_hand_value() -> None:
    expected = math.sqrt(2 * math.log(1.25 / 1e-5)) / 0.5
    got = gaussian_sigma_classic(1, 0.5, 1e-5)
    assert expected <= got <= expected * (1 + 1e-15)
    assert gaussian_sigma_classic(3, 0.5, 1e-5) == pytest.approx(3 * got, rel=1e-15)


dp_accounting = pytest.importorskip("dp_accounting")
from dp_accounting.pld import privacy_loss_mechanism as plm  # noqa: E402


@pytest.mark.parametrize(
    "sens, sigma, eps",
    [(1, 1, 1), (1, 2.5, 0.5), (2, 0.7, 3), (1, 10, 0.1), (1, 0.3, 8), (1, 5.0, 0.0)],
)
def test_analytic_delta_matches_dp_accounting_and_scipy(sens, sigma, eps) -> None:
    ours = gaussian_delta_analytic(sens, sigma, eps)
    google = plm.GaussianPrivacyLoss(sigma, sensitivity=sens).get_delta_for_epsilon(eps)
    assert ours == pytest.approx(google, rel=1e-9, abs=1e-15)
    assert ours == pytest.approx(reference_delta(sens, sigma, eps), rel=1e-9, abs=1e-15)


@pytest.mark.parametrize(
    "eps, delta", [(0.1, 1e-5), (0.5, 1e-6), (1.0, 1e-5), (3.0, 1e-10), (10.0, 1e-3)]
)
def test_analytic_sigma_is_smallest_and_certified(eps, delta) -> None:
    sigma = gaussian_sigma_analytic(1, eps, delta)
    assert gaussian_delta_analytic(1, sigma, eps) <= delta
    below = math.nextafter(sigma, 0)
    assert reference_delta(1, below * (1 - 1e-9), eps) > delta  # a hair smaller fails
    ref = optimize.brentq(lambda s: reference_delta(1, s, eps) - delta, 1e-3, 1e3, xtol=1e-14)
    assert sigma == pytest.approx(ref, rel=1e-8) and sigma >= ref * (1 - 1e-9)
    if eps < 1:  # analytic calibration beats the classic formula (Balle and Wang 2018)
        assert sigma < gaussian_sigma_classic(1, eps, delta)
