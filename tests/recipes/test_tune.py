"""dpselect.tune (issue 16): the per-run budget is the largest that fits (epsilon, delta), the
ledger is charged before any run, refusals happen before the charge, and the best
configuration wins on well-separated scores."""

from __future__ import annotations

import math
from collections import Counter
from fractions import Fraction

import pytest

import dpselect.core as dc
from dpselect.accounting import rdp_to_approx_dp
from dpselect.accounting.ledger import Ledger
from dpselect.accounting.renyi import zcdp_rdp
from dpselect.mechanisms.gaussian import make_gaussian
from dpselect.mechanisms.private_candidates import repeat_and_select_rdp
from dpselect.recipes.tune import tnb_gamma_for_mean, tune
from dpselect.sampling import InsecureSeededSource
from tests.gof import assert_fits

CONFIGS = [1, 2, 3, 50]


def make_train(seed, overspend=1.0):
    """A run for config c on a count x: score c * x + discrete Gaussian noise, rho-zCDP for
    the count's sensitivity c (so the noise scales with c)."""
    src = InsecureSeededSource(seed)

    def train(config, rho):
        sigma = config / math.sqrt(2 * rho) / math.sqrt(overspend) * (1 + 1e-9)
        noisy = make_gaussian(dc.atom_domain(int), dc.L1Distance(), sigma, source=src)

        def function(x):
            return (noisy(config * x), f"model-{config}")

        return dc.Measurement(
            dc.AnyDomain(),
            dc.SymmetricDistance(),
            dc.ZeroConcentratedDivergence(),
            function,
            lambda d_in: noisy.map(config * d_in),
        )

    return train


def test_tune_fits_the_budget_and_charges_the_ledger(tmp_path):
    book = Ledger.create(tmp_path / "l.db", 5.0, 1e-3)
    r = tune(
        make_train(1),
        CONFIGS,
        1.0,
        data=100,
        delta=1e-6,
        ledger=book,
        source=InsecureSeededSource(2),
    )
    assert r.config in CONFIGS and r.model == f"model-{r.config}"
    assert book.spent()[0] == 1.0 and book.entries()[-1].mechanism == "tune"
    law = {"eta": Fraction(0), "gamma": tnb_gamma_for_mean(0, 10)}
    total = rdp_to_approx_dp(
        repeat_and_select_rdp(zcdp_rdp(r.rho_per_run), "truncated_negative_binomial", **law),
        1e-6,
    )[0]
    assert total <= 1.0
    above = rdp_to_approx_dp(
        repeat_and_select_rdp(zcdp_rdp(r.rho_per_run * 1.01), "truncated_negative_binomial", **law),
        1e-6,
    )[0]
    assert above > 1.0  # the largest per-run rho, to 1%
    assert "per-run budget" in str(r) and r.to_dict()["config"] == r.config
    assert r.rho_per_run_if_composed > 0


@pytest.mark.slow
def test_tune_picks_the_best_configuration():
    """Config 50's score is 50 x = 5000, far above the others and their noise: it wins exactly
    when it is drawn among the K runs, P = 1 - E[(3/4)^K] = 1 - ln(1 - (1 - gamma) 3/4) /
    ln(gamma) for the logarithmic law (about 0.64 at mean 10)."""
    wins = Counter(
        tune(make_train(i), CONFIGS, 2.0, data=100, source=InsecureSeededSource(100 + i)).config
        for i in range(30)
    )
    gamma = float(tnb_gamma_for_mean(0, 10))
    p = 1 - math.log(1 - (1 - gamma) * 0.75) / math.log(gamma)
    assert_fits([wins[50], 30 - wins[50]], [p, 1 - p])


def test_tune_refusals_before_the_charge(tmp_path):
    book = Ledger.create(tmp_path / "l.db", 5.0, 1e-3)
    with pytest.raises(dc.ParameterError, match="costs rho"):
        tune(make_train(1, overspend=2.0), CONFIGS, 1.0, data=1, ledger=book)
    with pytest.raises(dc.ParameterError, match="configs"):
        tune(make_train(1), [], 1.0, data=1, ledger=book)
    with pytest.raises(dc.ParameterError, match="distribution"):
        tune(make_train(1), CONFIGS, 1.0, data=1, distribution="binomial", ledger=book)
    with pytest.raises(dc.ParameterError, match="mean_runs"):
        tune(make_train(1), CONFIGS, 1.0, data=1, mean_runs=0.5, ledger=book)
    with pytest.raises(dc.ParameterError, match="epsilon"):
        tune(make_train(1), CONFIGS, -1.0, data=1, ledger=book)
    assert book.spent()[0] == 0.0
