"""Privacy audit (2026-11-22): one regression test per bug found, failing before its fix.

Each test checks a sensitivity, a map or a charge against what the data can actually do
between neighbours (one row or one person added or removed).
"""

from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

from dpselect.api import top_k
from dpselect.data.scores import candidate_scores, match_multiplicity
from dpselect.data.tables import open_table
from dpselect.sampling.source import InsecureSeededSource

# ----------------------------------------------------------------------------------------
# Rows are people, two candidates that match one value: one row moves both scores, so the
# histograms' L1 (and L2^2) sensitivity is 2, not max_contributions = 1.

MERGING = [
    # (column values, their dtype, candidates): 4 and 4.0 both match the text "4";
    # "7" and "07" both cast to the integer 7
    (["4", "x"], "str", [4, 4.0, 5]),
    ([7, 3], "int64", ["7", "07", "3"]),
]


@pytest.mark.parametrize(("rows", "dtype", "cands"), MERGING)
def test_histogram_noise_covers_candidates_that_match_one_value(rows, dtype, cands):
    data = pd.DataFrame({"v": pd.Series(rows, dtype=dtype)})
    neighbour = data.iloc[1:]  # the first row removed
    diff = candidate_scores(open_table(data), "v", cands) - candidate_scores(
        open_table(neighbour), "v", cands
    )
    l1 = int(np.abs(diff).sum())
    assert l1 == 2
    assert match_multiplicity(open_table(data).require_column("v"), cands) == 2
    lap = top_k(data, "v", 2, 1.0, candidates=cands, mechanism="laplace_histogram", counts=True,
                source=InsecureSeededSource(1))  # fmt: skip
    # discrete Laplace of scale b on counts of L1 sensitivity l1: the loss is l1 / b
    assert Fraction(l1) / Fraction(lap.parameters["count_scale"]) <= Fraction(lap.epsilon)
    gauss = top_k(data, "v", 2, 1.0, candidates=cands, delta=1e-6,
                  mechanism="gaussian_histogram", counts=True,
                  source=InsecureSeededSource(1))  # fmt: skip
    sigma = Fraction(gauss.parameters["count_scale"])
    assert Fraction(int((diff * diff).sum())) / (2 * sigma * sigma) <= Fraction(gauss.rho)


def test_match_multiplicity_is_one_for_distinct_matches():
    assert match_multiplicity("VARCHAR", ["a", "b", "a "]) == 1
    assert match_multiplicity("VARCHAR", [4, 5]) == 1
    assert match_multiplicity("BIGINT", ["x", "y"]) == 1  # nothing converts: nothing matches
    assert match_multiplicity("DOUBLE", ["1", "1.0", "1e0", "2"]) == 3
