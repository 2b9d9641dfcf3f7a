"""Exact discrete Laplace / discrete Gaussian / Bernoulli(exp(-x)) samplers.

Goodness of fit: every test statistic is compared with a threshold at a false-failure rate of
1e-6 (chi-square quantile, DKW bound for the CDF distance, normal quantile for a proportion).
The reference laws are computed independently of the samplers, with python-flint ``arb``
balls at 128 bits (closed form for the discrete Laplace, a normalising sum over +-40 sigma for
the discrete Gaussian). ``test_broken_variant_fails`` shows once that the same checks, with the
same sample sizes, reject a factor-2 scale bug and a factor-2 variance bug.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from flint import arb, ctx, fmpq
from scipy import stats

from dpselect.core.errors import ParameterError
from dpselect.sampling import discrete
from dpselect.sampling.discrete import (
    sample_bernoulli_exp,
    sample_discrete_gaussian,
    sample_discrete_laplace,
)
from dpselect.sampling.source import InsecureSeededSource, ScriptedSource
from dpselect.sampling.uniform import LazyUniform

ALPHA = 1e-6  # false-failure rate of every statistical check
N = 200_000  # samples per goodness-of-fit test
MIN_EXPECTED = 10  # chi-square bins are merged until each expects this many samples


# ------------------------------------------------------------------------ reference laws
def _arb(q: Fraction) -> arb:
    return arb(fmpq(q.numerator, q.denominator))


def laplace_pmf(scale: Fraction, support: np.ndarray) -> np.ndarray:
    """P(X = x) = (1 - q) / (1 + q) q^|x| with q = exp(-1/scale), in arb at 128 bits."""
    with ctx.workprec(128):
        q = (-1 / _arb(scale)).exp()
        c = (1 - q) / (1 + q)
        return np.array([float((c * q ** int(abs(x))).mid()) for x in support])


def gaussian_pmf(sigma2: Fraction, support: np.ndarray) -> np.ndarray:
    """P(X = x) = exp(-x^2 / (2 sigma2)) / Z, Z summed over the support (+-40 sigma + 40)."""
    with ctx.workprec(128):
        s2 = _arb(sigma2)
        w = [(-(arb(int(x)) ** 2) / (2 * s2)).exp() for x in support]
        z = sum(w, arb(0))
        return np.array([float((v / z).mid()) for v in w])


def support_for(pmf_kind: str, param: Fraction) -> np.ndarray:
    width = float(param) if pmf_kind == "laplace" else math.sqrt(float(param))
    m = int(40 * width) + 40
    return np.arange(-m, m + 1)


def reference(kind: str, param: Fraction) -> tuple[np.ndarray, np.ndarray]:
    support = support_for(kind, param)
    pmf = laplace_pmf(param, support) if kind == "laplace" else gaussian_pmf(param, support)
    return support, pmf


# ------------------------------------------------------------------------ test statistics
def chi_square(samples: np.ndarray, support: np.ndarray, pmf: np.ndarray) -> tuple[float, float]:
    """Pearson's statistic over consecutive bins merged to expect >= MIN_EXPECTED each, and
    its 1 - ALPHA quantile. Samples outside the support fall into the end bins."""
    n = samples.size
    idx = np.clip(np.searchsorted(support, samples), 0, support.size - 1)
    counts = np.bincount(idx, minlength=support.size)
    expected, observed = [], []
    e_acc = o_acc = 0.0
    for e, o in zip(pmf * n, counts, strict=True):
        e_acc += e
        o_acc += o
        if e_acc >= MIN_EXPECTED:
            expected.append(e_acc)
            observed.append(o_acc)
            e_acc = o_acc = 0.0
    expected[-1] += e_acc
    observed[-1] += o_acc
    e_arr, o_arr = np.array(expected), np.array(observed)
    stat = float(np.sum((o_arr - e_arr) ** 2 / e_arr))
    return stat, float(stats.chi2.isf(ALPHA, e_arr.size - 1))


def cdf_distance(samples: np.ndarray, support: np.ndarray, pmf: np.ndarray) -> tuple[float, float]:
    """sup_x |F_n(x) - F(x)| over the support, and the DKW bound at ALPHA (valid for any law,
    discrete included: P(sup |F_n - F| > eps) <= 2 exp(-2 n eps^2))."""
    n = samples.size
    empirical = np.searchsorted(np.sort(samples), support, side="right") / n
    stat = float(np.max(np.abs(empirical - np.cumsum(pmf))))
    return stat, math.sqrt(math.log(2 / ALPHA) / (2 * n))


def assert_fits(samples: np.ndarray, support: np.ndarray, pmf: np.ndarray) -> None:
    chi, chi_max = chi_square(samples, support, pmf)
    ks, ks_max = cdf_distance(samples, support, pmf)
    assert chi < chi_max, f"chi-square {chi:.1f} >= {chi_max:.1f}"
    assert ks < ks_max, f"CDF distance {ks:.5f} >= {ks_max:.5f}"


LAPLACE_SCALES = [0.5, 1, Fraction(37, 10), 10, 1000]
GAUSSIAN_SIGMA2 = [0.25, 1, 10, 100, 10**4]


# ------------------------------------------------------------------------ goodness of fit
@pytest.mark.parametrize("scale", LAPLACE_SCALES)
def test_discrete_laplace_fits(scale: object) -> None:
    samples = sample_discrete_laplace(scale, N, source=InsecureSeededSource(11))
    assert samples.dtype == np.int64 and samples.shape == (N,)
    assert_fits(samples, *reference("laplace", Fraction(scale)))


@pytest.mark.parametrize("sigma2", GAUSSIAN_SIGMA2)
def test_discrete_gaussian_fits(sigma2: object) -> None:
    samples = sample_discrete_gaussian(sigma2, N, source=InsecureSeededSource(12))
    assert samples.dtype == np.int64 and samples.shape == (N,)
    assert_fits(samples, *reference("gaussian", Fraction(sigma2)))


def test_broken_variant_fails() -> None:
    """The checks above, at the same N, reject a factor-2 bug in the parameter."""
    support, pmf = reference("laplace", Fraction(1000))
    wrong = sample_discrete_laplace(2000, N, source=InsecureSeededSource(11))
    chi, chi_max = chi_square(wrong, support, pmf)
    ks, ks_max = cdf_distance(wrong, support, pmf)
    assert chi > chi_max and ks > ks_max

    support, pmf = reference("gaussian", Fraction(10**4))
    wrong = sample_discrete_gaussian(2 * 10**4, N, source=InsecureSeededSource(12))
    chi, chi_max = chi_square(wrong, support, pmf)
    ks, ks_max = cdf_distance(wrong, support, pmf)
    assert chi > chi_max and ks > ks_max


@pytest.mark.parametrize("x", [0, Fraction(1, 10), 1, Fraction(37, 10), 12.5])
def test_bernoulli_exp_frequency(x: object) -> None:
    n = 400_000
    hits = int(np.sum(sample_bernoulli_exp(x, n, source=InsecureSeededSource(13))))
    p = math.exp(-float(Fraction(x)))
    if p == 1.0:
        assert hits == n
        return
    assert stats.binomtest(hits, n, p).pvalue > ALPHA


def test_gaussian_variance_and_symmetry() -> None:
    samples = sample_discrete_gaussian(100, N, source=InsecureSeededSource(14))
    support, pmf = reference("gaussian", Fraction(100))
    var = float(np.sum(pmf * support.astype(float) ** 2))
    sd = math.sqrt(var * 2 / N)  # sd of the sample second moment (kurtosis ~ 3)
    assert abs(float(np.mean(samples.astype(float) ** 2)) - var) < 5.5 * sd
    assert abs(float(np.mean(samples))) < 5.5 * math.sqrt(var / N)


# ------------------------------------------------------------------------ the float path agrees
@pytest.mark.parametrize(
    "scale", [Fraction(1, 2), Fraction(37, 10), Fraction(1000), Fraction(2**36)]
)
def test_float_path_matches_exact_path(scale: Fraction) -> None:
    law = discrete._LaplaceLaw(scale)
    src = InsecureSeededSource(21)
    _, prefix = law.words(1500, src)
    with ctx.workprec(200):  # and the prefixes next to the steps B_k = 2 q^k / (1 + q)
        q = (-1 / _arb(scale)).exp()
        steps = [digits_of(2 * q**k / (1 + q), law.digits) for k in (1, 2, 3, 7, 20)]
    near = [b + j for b in steps for j in range(-2, 3) if b + j > 0]
    prefix = np.concatenate([prefix, np.array(near, dtype=np.int64)])
    magnitude, undecided = law._float_magnitudes(prefix)
    decided = np.setdiff1d(np.arange(prefix.size), undecided)
    for i in decided:
        u = LazyUniform(int(prefix[i]), law.digits)
        assert magnitude[i] == discrete._laplace_magnitude_exact(scale, u, src)


def test_bernoulli_float_path_matches_exact_path() -> None:
    law = discrete._GaussianLaw(Fraction(37, 10))
    src = InsecureSeededSource(22)
    y = np.arange(-20, 21, dtype=np.int64).repeat(25)
    seeded = InsecureSeededSource(23)
    decision = law.keep(y, seeded)
    words = discrete._half_words(InsecureSeededSource(23), y.size)
    for v, w, d in zip(y, words, decision, strict=True):
        assert d == discrete._bernoulli_exp_exact_word(law.exact_x(int(v)), int(w), src)
    # words next to the threshold exp(-x) 2^32: the float path decides right or not at all
    for v in range(0, 12):
        x = law.exact_x(v)
        with ctx.workprec(200):
            b = digits_of((-_arb(x)).exp(), 32)
        near = np.array([w for w in range(b - 2, b + 3) if 0 <= w < 2**32], dtype=np.uint32)
        x_f = np.full(near.size, (v - law.center_f) ** 2 * law.k_f)
        band = law.band_const + law.band_slope * x_f
        decision, undecided = discrete._bernoulli_exp_float(x_f, band, near)
        for i in np.setdiff1d(np.arange(near.size), undecided):
            assert decision[i] == discrete._bernoulli_exp_exact_word(x, int(near[i]), src)


# ------------------------------------------------------------------------ forced rare paths
OFFSET = 150  # a uniform is put at 2^-150 from a boundary: two refinements of 64 are needed


def digits_of(value: arb, nbits: int) -> int:
    """floor(value 2^nbits), which must be unique (checked)."""
    k = (value * arb(2) ** nbits).floor().unique_fmpz()
    assert k is not None
    return int(k)


def laplace_script(law: discrete._LaplaceLaw, u_digits: int, negative: bool) -> ScriptedSource:
    """A source whose next discrete Laplace draw has this sign and a uniform U with the given
    first ``law.digits + 128`` digits: the word (sign bit, then ``law.digits`` digits; a
    32-bit word is the low half of a 64-bit one), then two refinements of 64 digits."""
    word = ((u_digits >> 128) << 1) | int(negative)
    tail = [(u_digits >> 64) & (2**64 - 1), u_digits & (2**64 - 1)]
    return ScriptedSource.from_words([word, *tail])


@pytest.mark.parametrize("scale", [Fraction(37, 10), Fraction(1, 2), Fraction(1000)])
@pytest.mark.parametrize("k", [1, 3])
@pytest.mark.parametrize("side", [-1, 1])
def test_laplace_uniform_within_2_pow_100_of_a_step(scale: Fraction, k: int, side: int) -> None:
    """U at 2^-150 from B_k = 2 q^k / (1 + q), where |X| steps from k to k - 1."""
    law = discrete._LaplaceLaw(scale)
    nbits = law.digits + 128
    with ctx.workprec(500):
        q = (-1 / _arb(scale)).exp()
        boundary = 2 * q**k / (1 + q)
        u_digits = digits_of(boundary, nbits) + side * 2 ** (nbits - OFFSET)
        u = _arb(Fraction(u_digits, 2**nbits))
        expected = k if u < boundary else k - 1  # |X| >= k iff U < B_k
        assert (u < boundary) == (side < 0)
    src = laplace_script(law, u_digits, negative=True)
    _, undecided = law._float_magnitudes(np.array([u_digits >> 128], dtype=np.int64))
    assert undecided.tolist() == [0]  # the float path must not decide this one
    assert sample_discrete_laplace(scale, source=src) == -expected
    assert src.exhausted  # both refinements were read


@pytest.mark.parametrize("scale", [Fraction(37, 10), Fraction(1000)])
def test_laplace_uniform_near_zero(scale: Fraction) -> None:
    """U in [2^-101, 2^-100): the word's digits are 0, the value comes from the exact path."""
    law = discrete._LaplaceLaw(scale)
    nbits = law.digits + 128
    u_digits = 2 ** (nbits - 101) + 12345
    with ctx.workprec(500):
        q = (-1 / _arb(scale)).exp()
        u = _arb(Fraction(u_digits, 2**nbits))
        # independent: the largest k with U < 2 q^k / (1 + q)
        expected = int(((u * (1 + q) / 2).log() / q.log()).floor().unique_fmpz())
    src = laplace_script(law, u_digits, negative=False)
    assert sample_discrete_laplace(scale, source=src) == expected
    assert abs(expected - float(scale) * 101 * math.log(2)) < 1  # |X| = floor(s E + a)


def test_laplace_uniform_near_one() -> None:
    for scale in (Fraction(37, 10), Fraction(1000)):  # 31 and 63 digits in the word
        src = ScriptedSource.from_words([2**64 - 1])  # U's digits all 1: |X| = 0
        assert sample_discrete_laplace(scale, source=src) == 0


def test_laplace_beyond_int64_gives_python_ints() -> None:
    """A uniform below 2^-(63 + 64 * 46) at scale 2^52 gives |X| > 2^63: not clipped."""
    src = ScriptedSource(bytes(8 * 47), then=InsecureSeededSource(3))
    out = sample_discrete_laplace(2**52, 1, source=src)
    assert out.dtype == object
    assert abs(out[0]) > 2**63 and isinstance(out[0], int)
    assert abs(out[0]) < 2**52 * (64 * 48 * math.log(2))


@pytest.mark.parametrize("x", [Fraction(7, 3), Fraction(1, 1000), Fraction(25)])
@pytest.mark.parametrize("side", [-1, 1])
def test_bernoulli_uniform_within_2_pow_100_of_threshold(x: Fraction, side: int) -> None:
    nbits = 32 + 128
    with ctx.workprec(500):
        p = (-_arb(x)).exp()
        v_digits = digits_of(p, nbits) + side * 2 ** (nbits - OFFSET)
        expected = _arb(Fraction(v_digits, 2**nbits)) < p
        assert expected == (side < 0)
    word = v_digits >> 128  # the low half of the first word holds the first 32 digits
    tail = [(v_digits >> 64) & (2**64 - 1), v_digits & (2**64 - 1)]
    src = ScriptedSource.from_words([word, *tail])
    assert sample_bernoulli_exp(x, source=src) == expected
    assert src.exhausted


@pytest.mark.parametrize("y", [0, 3, -7])
@pytest.mark.parametrize("side", [-1, 1])
def test_gaussian_acceptance_within_2_pow_100(y: int, side: int) -> None:
    sigma2 = Fraction(37, 10)
    law = discrete._GaussianLaw(sigma2)
    x = (abs(y) - sigma2 / law.t) ** 2 / (2 * sigma2)  # CKS Algorithm 3, written out again
    nbits = 32 + 128
    with ctx.workprec(500):
        p = (-_arb(x)).exp()
        v_digits = digits_of(p, nbits) + side * 2 ** (nbits - OFFSET)
        expected = _arb(Fraction(v_digits, 2**nbits)) < p
    tail = [(v_digits >> 64) & (2**64 - 1), v_digits & (2**64 - 1)]
    src = ScriptedSource.from_words([v_digits >> 128, *tail])
    assert law.keep(np.array([y], dtype=np.int64), src).tolist() == [expected]
    assert src.exhausted


# ------------------------------------------------------------------------ API and errors
def test_scalars_shapes_and_determinism() -> None:
    assert isinstance(sample_discrete_laplace(3), int)
    assert isinstance(sample_discrete_gaussian(3), int)
    assert isinstance(sample_bernoulli_exp(Fraction(1, 2)), bool)
    assert sample_discrete_laplace(3, (2, 3)).shape == (2, 3)
    assert sample_discrete_gaussian(3, 0).shape == (0,)
    assert sample_bernoulli_exp(1, (4,)).dtype == bool
    a = sample_discrete_gaussian(Fraction(9, 2), 1000, source=InsecureSeededSource(5))
    b = sample_discrete_gaussian(4.5, 1000, source=InsecureSeededSource(5))
    assert np.array_equal(a, b)


BAD_PARAMETERS = [
    (-1, "> 0"),
    (0, "> 0"),
    (Fraction(-1, 3), "> 0"),
    (math.nan, "finite"),
    (math.inf, "finite"),
    (True, "bool"),
    ("1", "str"),
    (1 + 0j, "complex"),
    (None, "NoneType"),
    (2.0**60, "lie in"),
    (2.0**-70, "lie in"),
]


@pytest.mark.parametrize(("value", "message"), BAD_PARAMETERS)
def test_bad_scale(value: object, message: str) -> None:
    with pytest.raises(ParameterError, match="scale") as info:
        sample_discrete_laplace(value, 3)  # type: ignore[arg-type]
    assert message in str(info.value)


@pytest.mark.parametrize(("value", "message"), BAD_PARAMETERS[:-2])
def test_bad_sigma2(value: object, message: str) -> None:
    with pytest.raises(ParameterError, match="sigma2") as info:
        sample_discrete_gaussian(value, 3)  # type: ignore[arg-type]
    assert message in str(info.value)


@pytest.mark.parametrize("value", [2.0**101, 2.0**-70])
def test_sigma2_range(value: float) -> None:
    with pytest.raises(ParameterError, match="sigma2 must lie in"):
        sample_discrete_gaussian(value)


@pytest.mark.parametrize("value", [-1, Fraction(-1, 2), math.nan, math.inf, True, "0"])
def test_bad_x(value: object) -> None:
    with pytest.raises(ParameterError, match="x must"):
        sample_bernoulli_exp(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("size", [-1, 2.0, True, "3", (2, -1), (2, 1.5)])
@pytest.mark.parametrize(
    "sampler", [sample_discrete_laplace, sample_discrete_gaussian, sample_bernoulli_exp]
)
def test_bad_size(sampler: object, size: object) -> None:
    with pytest.raises(ParameterError, match="size"):
        sampler(1, size)  # type: ignore[operator]


def test_bad_source() -> None:
    with pytest.raises(ParameterError, match="source"):
        sample_discrete_laplace(1, 3, source=object())  # type: ignore[arg-type]
