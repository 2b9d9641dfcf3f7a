"""The public texts and parameters of fixed quantile releases, as recorded before the plans
were built from cached public constants: the plans (tree, joint, the auto rule's grain plans)
must say the same words and numbers. Everything of ``to_dict()`` but the released values is
compared (they depend on the seeded draws, checked elsewhere). To regenerate after a deliberate
change of a text: print ``{name: _public(release(name))}`` as JSON and paste it below.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dpselect.planning.contributions import Contributions
from dpselect.planning.quantile_request import quantile_request
from dpselect.recipes.quantiles import quantile as recipe_quantile
from dpselect.sampling import InsecureSeededSource


def _cases():
    rng = np.random.default_rng(0)
    tenth = np.round(rng.normal(50, 10, 5000), 1)
    cont = rng.normal(50, 10, 4000)
    ints = np.round(rng.exponential(300, 3000))
    small = rng.normal(5, 1, 40)
    users = rng.integers(0, 900, 3000)
    D = [k / 10 for k in range(1, 10)]
    yield (
        "auto_tenths",
        dict(data=pd.DataFrame({"v": tenth}), q=[0.1, 0.5, 0.9], epsilon=1.0, bounds=(0.0, 100.0)),
    )
    yield (
        "auto_continuous",
        dict(data=pd.DataFrame({"v": cont}), q=D, epsilon=1.0, bounds=(0.0, 100.0)),
    )
    yield (
        "auto_ints_eps4",
        dict(data=pd.DataFrame({"v": ints}), q=D, epsilon=4.0, bounds=(0.0, 5000.0)),
    )
    yield (
        "auto_small_tree",
        dict(data=pd.DataFrame({"v": small}), q=[0.25, 0.5, 0.75], epsilon=0.5, bounds=(0.0, 10.0)),
    )
    yield (
        "joint_named",
        dict(
            data=pd.DataFrame({"v": tenth}),
            q=D,
            epsilon=0.3,
            bounds=(0.0, 100.0),
            mechanism="joint",
        ),
    )
    yield (
        "joint_resolution",
        dict(
            data=pd.DataFrame({"v": cont}),
            q=[0.2, 0.4, 0.6, 0.8],
            epsilon=2.0,
            bounds=(-10.0, 110.0),
            mechanism="joint",
            resolution=0.25,
        ),
    )
    yield (
        "tree_named",
        dict(
            data=pd.DataFrame({"v": tenth}), q=D, epsilon=1.0, bounds=(0.0, 100.0), mechanism="tree"
        ),
    )
    yield (
        "auto_unit",
        dict(
            data=pd.DataFrame({"v": tenth[:3000], "u": users}),
            q=D,
            epsilon=1.0,
            bounds=(0.0, 100.0),
            privacy_unit="u",
            contributions=Contributions(values_per_unit=3),
        ),
    )


def _public(result):
    d = result.to_dict()
    d.pop("values", None)
    d["parameters"].pop("row_rules", None)  # tests/data/test_row_rules.py
    return json.loads(json.dumps(d, default=str))


_CASES = dict(_cases())


@pytest.mark.parametrize("name", sorted(_CASES))
def test_release_texts_and_parameters_are_unchanged(name):
    kw = dict(_CASES[name])
    data = kw.pop("data")
    request = quantile_request("v", kw.pop("q"), kw.pop("epsilon"), **kw)
    result = recipe_quantile(data, request, source=InsecureSeededSource(3))
    assert _public(result) == EXPECTED[name]


EXPECTED = {
    "auto_continuous": {
        "accuracy": [
            (
                "accuracy: with probability at least 95%, the 10 gaps that the values c"
                "ut in [0, 100] hold row counts within 270.6 rows in total of their tar"
                "gets (q_j - q_(j-1)) n, beyond the least total E that values lying in "
                "gaps at least 0.05 wide between the rows could attain (E = 0 when ever"
                "y target rank falls in such a gap; n rows after clamping, each row mov"
                "ed by less than w = 0.05 and each value then rounded to a multiple of "
                "0.1; joint exponential mechanism, Gillenwater, Joseph, Kulesza 2021; t"
                "he derivation: --json, docs/quantiles.md)"
            ),
        ],
        "budget_split": (
            "0.05 (1/20 of epsilon) to a noisy histogram of the rows' decimal grain"
            " (6 bins, discrete Laplace; N its sum), then 0.95 to one mechanism for"
            " all levels, the tree if 0.95 N < 700, else the joint mechanism"
        ),
        "derivation": [
            (
                "with probability at least 95%, the 10 gaps that the values cut (bounds"
                " included) hold row counts within E + 3.79 * (9 ln((hi - lo) / l) + 2."
                "996) rows of their targets (q_j - q_(j-1)) n in total (n rows after cl"
                "amping, each moved by less than the resolution w, values before their "
                "rounding to a multiple of 10^floor(log10(2w)), which moves each by at "
                "most half of it and a float rounding; l any length, E = the least tota"
                "l attained by values lying in intervals at least l long between consec"
                "utive distinct rows or bounds; joint exponential mechanism, Gillenwate"
                "r, Joseph, Kulesza 2021, docs/quantiles.md)"
            ),
            (
                "A = 3.78959 rows per unit of score, t = ln(1 / (1 - confidence)) + 2 r"
                "ho = 2.99575, hi - lo = 100, m = 9"
            ),
            (
                "printed at l = 0.05 (the resolution w, or (hi - lo) / 10^6 without one"
                "): 270.592 rows beyond E; each halving of l adds 23.65 rows"
            ),
        ],
        "epsilon": 1.0,
        "epsilon_each": 0.95,
        "ledger": None,
        "levels": [
            "1/10",
            "1/5",
            "3/10",
            "2/5",
            "1/2",
            "3/5",
            "7/10",
            "4/5",
            "9/10",
        ],
        "method": (
            "joint exponential mechanism (Gillenwater, Joseph, Kulesza 2021) on [0,"
            " 100]: all 9 values in one draw"
        ),
        "notes": [
            (
                "noisy grain histogram [4049, -29, 4, 11, 47, -17] (rows on none of the"
                " grids 0.001, 0.01, 0.1, 1, 10, then on the first 1, 2, ... of them; d"
                "iscrete Laplace of scale 20, released), noisy row count N = 4065 (its "
                "sum); no recording grid (the default resolution from the bounds and ep"
                "silon) (docs/quantiles.md, 'The recording grid of a float column'), 0."
                "95 N >= 700: the joint mechanism (docs/quantiles.md, 'Choosing the met"
                "hod')"
            ),
        ],
        "parameters": {
            "bounds": [
                0.0,
                100.0,
            ],
            "column": "v",
            "epsilon": 1.0,
            "grain_histogram": {
                "grids": [
                    0.001,
                    0.01,
                    0.1,
                    1.0,
                    10.0,
                ],
                "noisy_counts": [
                    4049,
                    -29,
                    4,
                    11,
                    47,
                    -17,
                ],
                "recording_grid": None,
            },
            "method": "joint",
            "n_candidates": None,
            "noisy_rows": 4065,
            "q": [
                0.1,
                0.2,
                0.3,
                0.4,
                0.5,
                0.6,
                0.7,
                0.8,
                0.9,
            ],
            "resolution": 0.05,
        },
        "q": [
            0.1,
            0.2,
            0.3,
            0.4,
            0.5,
            0.6,
            0.7,
            0.8,
            0.9,
        ],
        "resolution": 0.05,
        "rounding_loss": 2.86102294921875e-05,
    },
    "auto_ints_eps4": {
        "accuracy": [
            (
                "accuracy: with probability at least 95%, the 10 gaps that the values c"
                "ut in [0, 5000] hold row counts within 81.37 rows in total of their ta"
                "rgets (q_j - q_(j-1)) n, beyond the least total E that values lying in"
                " gaps at least 0.5 wide between the rows could attain (E = 0 when ever"
                "y target rank falls in such a gap; n rows after clamping, each row mov"
                "ed by less than w = 0.5 and each value then rounded to a multiple of 1"
                "; joint exponential mechanism, Gillenwater, Joseph, Kulesza 2021; the "
                "derivation: --json, docs/quantiles.md)"
            ),
        ],
        "budget_split": (
            "0.2 (1/20 of epsilon) to a noisy histogram of the rows' decimal grain "
            "(6 bins, discrete Laplace; N its sum), then 3.8 to one mechanism for a"
            "ll levels, the tree if 3.8 N < 700, else the joint mechanism"
        ),
        "derivation": [
            (
                "with probability at least 95%, the 10 gaps that the values cut (bounds"
                " included) hold row counts within E + 0.9474 * (9 ln((hi - lo) / l) + "
                "2.996) rows of their targets (q_j - q_(j-1)) n in total (n rows after "
                "clamping, each moved by less than the resolution w, values before thei"
                "r rounding to a multiple of 10^floor(log10(2w)), which moves each by a"
                "t most half of it and a float rounding; l any length, E = the least to"
                "tal attained by values lying in intervals at least l long between cons"
                "ecutive distinct rows or bounds; joint exponential mechanism, Gillenwa"
                "ter, Joseph, Kulesza 2021, docs/quantiles.md)"
            ),
            (
                "A = 0.947376 rows per unit of score, t = ln(1 / (1 - confidence)) + 2 "
                "rho = 2.99575, hi - lo = 5000, m = 9"
            ),
            (
                "printed at l = 0.5 (the resolution w, or (hi - lo) / 10^6 without one)"
                ": 81.369 rows beyond E; each halving of l adds 5.911 rows"
            ),
        ],
        "epsilon": 4.0,
        "epsilon_each": 3.8,
        "ledger": None,
        "levels": [
            "1/10",
            "1/5",
            "3/10",
            "2/5",
            "1/2",
            "3/5",
            "7/10",
            "4/5",
            "9/10",
        ],
        "method": (
            "joint exponential mechanism (Gillenwater, Joseph, Kulesza 2021) on [0,"
            " 5000]: all 9 values in one draw"
        ),
        "notes": [
            (
                "noisy grain histogram [12, -7, 1, 2672, 304, 35] (rows on none of the "
                "grids 0.01, 0.1, 1, 10, 100, then on the first 1, 2, ... of them; disc"
                "rete Laplace of scale 5, released), noisy row count N = 3017 (its sum)"
                "; recording grid 1 (resolution 0.5) (docs/quantiles.md, 'The recording"
                " grid of a float column'), 3.8 N >= 700: the joint mechanism (docs/qua"
                "ntiles.md, 'Choosing the method')"
            ),
        ],
        "parameters": {
            "bounds": [
                0.0,
                5000.0,
            ],
            "column": "v",
            "epsilon": 4.0,
            "grain_histogram": {
                "grids": [
                    0.01,
                    0.1,
                    1.0,
                    10.0,
                    100.0,
                ],
                "noisy_counts": [
                    12,
                    -7,
                    1,
                    2672,
                    304,
                    35,
                ],
                "recording_grid": 1.0,
            },
            "method": "joint",
            "n_candidates": None,
            "noisy_rows": 3017,
            "q": [
                0.1,
                0.2,
                0.3,
                0.4,
                0.5,
                0.6,
                0.7,
                0.8,
                0.9,
            ],
            "resolution": 0.5,
        },
        "q": [
            0.1,
            0.2,
            0.3,
            0.4,
            0.5,
            0.6,
            0.7,
            0.8,
            0.9,
        ],
        "resolution": 0.5,
        "rounding_loss": 2.86102294921875e-05,
    },
    "auto_small_tree": {
        "accuracy": [
            (
                "accuracy: with probability at least 95% for all values at once, the va"
                "lue for q has at most q n + 1003 rows below it - 0.1563 and at most (1"
                " - q) n + 1003 above it + 0.1563 (the leaf width; n rows after clampin"
                "g; every noisy count within 32 of its value; docs/quantiles.md, 'the t"
                "ree'; a loose bound)"
            ),
        ],
        "budget_split": (
            "0.025 (1/20 of epsilon) to a noisy histogram of the rows' decimal grai"
            "n (6 bins, discrete Laplace; N its sum), then 0.475 to one mechanism f"
            "or all levels, the tree if 0.475 N < 700, else the joint mechanism"
        ),
        "derivation": [],
        "epsilon": 0.5,
        "epsilon_each": 0.475,
        "ledger": None,
        "levels": [
            "1/4",
            "1/2",
            "3/4",
        ],
        "method": (
            "quantile tree (hierarchical histogram, 8-ary, 2 levels, 64 leaves, exa"
            "ct discrete Laplace noise of scale 2 / epsilon, consistent counts: Hay"
            " et al. 2010) on [0, 10]: all 3 values from one noisy tree"
        ),
        "notes": [
            (
                "noisy grain histogram [138, -58, 9, 22, 95, -33] (rows on none of the "
                "grids 0.0001, 0.001, 0.01, 0.1, 1, then on the first 1, 2, ... of them"
                "; discrete Laplace of scale 40, released), noisy row count N = 173 (it"
                "s sum); no recording grid (the default resolution from the bounds and "
                "epsilon) (docs/quantiles.md, 'The recording grid of a float column'), "
                "0.475 N < 700: the tree (docs/quantiles.md, 'Choosing the method')"
            ),
        ],
        "parameters": {
            "bounds": [
                0.0,
                10.0,
            ],
            "column": "v",
            "epsilon": 0.5,
            "grain_histogram": {
                "grids": [
                    0.0001,
                    0.001,
                    0.01,
                    0.1,
                    1.0,
                ],
                "noisy_counts": [
                    138,
                    -58,
                    9,
                    22,
                    95,
                    -33,
                ],
                "recording_grid": None,
            },
            "method": "tree",
            "n_candidates": None,
            "noisy_rows": 173,
            "q": [
                0.25,
                0.5,
                0.75,
            ],
            "resolution": None,
        },
        "q": [
            0.25,
            0.5,
            0.75,
        ],
        "resolution": None,
        "rounding_loss": None,
    },
    "auto_tenths": {
        "accuracy": [
            (
                "accuracy: with probability at least 95%, the 4 gaps that the values cu"
                "t in [0, 100] hold row counts within 97.77 rows in total of their targ"
                "ets (q_j - q_(j-1)) n, beyond the least total E that values lying in g"
                "aps at least 0.05 wide between the rows could attain (E = 0 when every"
                " target rank falls in such a gap; n rows after clamping, each row move"
                "d by less than w = 0.05 and each value then rounded to a multiple of 0"
                ".1; joint exponential mechanism, Gillenwater, Joseph, Kulesza 2021; th"
                "e derivation: --json, docs/quantiles.md)"
            ),
        ],
        "budget_split": (
            "0.05 (1/20 of epsilon) to a noisy histogram of the rows' decimal grain"
            " (6 bins, discrete Laplace; N its sum), then 0.95 to one mechanism for"
            " all levels, the tree if 0.95 N < 700, else the joint mechanism"
        ),
        "derivation": [
            (
                "with probability at least 95%, the 4 gaps that the values cut (bounds "
                "included) hold row counts within E + 3.79 * (3 ln((hi - lo) / l) + 2.9"
                "96) rows of their targets (q_j - q_(j-1)) n in total (n rows after cla"
                "mping, each moved by less than the resolution w, values before their r"
                "ounding to a multiple of 10^floor(log10(2w)), which moves each by at m"
                "ost half of it and a float rounding; l any length, E = the least total"
                " attained by values lying in intervals at least l long between consecu"
                "tive distinct rows or bounds; joint exponential mechanism, Gillenwater"
                ", Joseph, Kulesza 2021, docs/quantiles.md)"
            ),
            (
                "A = 3.78952 rows per unit of score, t = ln(1 / (1 - confidence)) + 2 r"
                "ho = 2.99574, hi - lo = 100, m = 3"
            ),
            (
                "printed at l = 0.05 (the resolution w, or (hi - lo) / 10^6 without one"
                "): 97.7638 rows beyond E; each halving of l adds 7.881 rows"
            ),
        ],
        "epsilon": 1.0,
        "epsilon_each": 0.95,
        "ledger": None,
        "levels": [
            "1/10",
            "1/2",
            "9/10",
        ],
        "method": (
            "joint exponential mechanism (Gillenwater, Joseph, Kulesza 2021) on [0,"
            " 100]: all 3 values in one draw"
        ),
        "notes": [
            (
                "noisy grain histogram [49, -29, 4, 4482, 520, 39] (rows on none of the"
                " grids 0.001, 0.01, 0.1, 1, 10, then on the first 1, 2, ... of them; d"
                "iscrete Laplace of scale 20, released), noisy row count N = 5065 (its "
                "sum); recording grid 0.1 (resolution 0.05) (docs/quantiles.md, 'The re"
                "cording grid of a float column'), 0.95 N >= 700: the joint mechanism ("
                "docs/quantiles.md, 'Choosing the method')"
            ),
        ],
        "parameters": {
            "bounds": [
                0.0,
                100.0,
            ],
            "column": "v",
            "epsilon": 1.0,
            "grain_histogram": {
                "grids": [
                    0.001,
                    0.01,
                    0.1,
                    1.0,
                    10.0,
                ],
                "noisy_counts": [
                    49,
                    -29,
                    4,
                    4482,
                    520,
                    39,
                ],
                "recording_grid": 0.1,
            },
            "method": "joint",
            "n_candidates": None,
            "noisy_rows": 5065,
            "q": [
                0.1,
                0.5,
                0.9,
            ],
            "resolution": 0.05,
        },
        "q": [
            0.1,
            0.5,
            0.9,
        ],
        "resolution": 0.05,
        "rounding_loss": 1.1444091796875e-05,
    },
    "auto_unit": {
        "accuracy": [
            (
                "accuracy: with probability at least 95%, the 10 gaps that the values c"
                "ut in [0, 100] hold row counts within 811.9 rows in total of their tar"
                "gets (q_j - q_(j-1)) n, beyond the least total E that values lying in "
                "gaps at least 0.05 wide between the rows could attain (E = 0 when ever"
                "y target rank falls in such a gap; n rows after clamping, each row mov"
                "ed by less than w = 0.05 and each value then rounded to a multiple of "
                "0.1; joint exponential mechanism, Gillenwater, Joseph, Kulesza 2021; t"
                "he derivation: --json, docs/quantiles.md)"
            ),
        ],
        "budget_split": (
            "0.05 (1/20 of epsilon) to a noisy histogram of the rows' decimal grain"
            " (6 bins, discrete Laplace; N its sum), then 0.95 to one mechanism for"
            " all levels, the tree if (0.95 / 3) N < 700, else the joint mechanism"
        ),
        "derivation": [
            (
                "with probability at least 95%, the 10 gaps that the values cut (bounds"
                " included) hold row counts within E + 11.37 * (9 ln((hi - lo) / l) + 2"
                ".996) rows of their targets (q_j - q_(j-1)) n in total (n rows after c"
                "lamping, each moved by less than the resolution w, values before their"
                " rounding to a multiple of 10^floor(log10(2w)), which moves each by at"
                " most half of it and a float rounding; l any length, E = the least tot"
                "al attained by values lying in intervals at least l long between conse"
                "cutive distinct rows or bounds; joint exponential mechanism, Gillenwat"
                "er, Joseph, Kulesza 2021, docs/quantiles.md)"
            ),
            (
                "A = 11.3694 rows per unit of score, t = ln(1 / (1 - confidence)) + 2 r"
                "ho = 2.99575, hi - lo = 100, m = 9"
            ),
            (
                "printed at l = 0.05 (the resolution w, or (hi - lo) / 10^6 without one"
                "): 811.823 rows beyond E; each halving of l adds 70.93 rows"
            ),
        ],
        "epsilon": 1.0,
        "epsilon_each": 0.95,
        "ledger": None,
        "levels": [
            "1/10",
            "1/5",
            "3/10",
            "2/5",
            "1/2",
            "3/5",
            "7/10",
            "4/5",
            "9/10",
        ],
        "method": (
            "joint exponential mechanism (Gillenwater, Joseph, Kulesza 2021) on [0,"
            " 100]: all 9 values in one draw"
        ),
        "notes": [
            (
                "privacy unit: 'u' (epsilon protects all the rows of one unit); each un"
                "it keeps at most max_rows = 3 rows, chosen by the salted keyed rule (d"
                "ocs/contribution_bounding.md, 'Rows per unit'); n in the accuracy line"
                "s counts the kept rows"
            ),
            (
                "noisy grain histogram [-86, 13, 32, 2110, 160, 67] (rows on none of th"
                "e grids 0.001, 0.01, 0.1, 1, 10, then on the first 1, 2, ... of them; "
                "discrete Laplace of scale 60, released), noisy row count N = 2296 (its"
                " sum); recording grid 0.1 (resolution 0.05) (docs/quantiles.md, 'The r"
                "ecording grid of a float column'), (0.95 / 3) N >= 700: the joint mech"
                "anism (docs/quantiles.md, 'Choosing the method')"
            ),
        ],
        "parameters": {
            "bounds": [
                0.0,
                100.0,
            ],
            "column": "v",
            "epsilon": 1.0,
            "grain_histogram": {
                "grids": [
                    0.001,
                    0.01,
                    0.1,
                    1.0,
                    10.0,
                ],
                "noisy_counts": [
                    -86,
                    13,
                    32,
                    2110,
                    160,
                    67,
                ],
                "recording_grid": 0.1,
            },
            "max_rows": 3,
            "method": "joint",
            "n_candidates": None,
            "noisy_rows": 2296,
            "privacy_unit": "u",
            "q": [
                0.1,
                0.2,
                0.3,
                0.4,
                0.5,
                0.6,
                0.7,
                0.8,
                0.9,
            ],
            "resolution": 0.05,
        },
        "q": [
            0.1,
            0.2,
            0.3,
            0.4,
            0.5,
            0.6,
            0.7,
            0.8,
            0.9,
        ],
        "resolution": 0.05,
        "rounding_loss": 2.86102294921875e-05,
    },
    "joint_named": {
        "accuracy": [
            (
                "accuracy: with probability at least 95%, the 10 gaps that the values c"
                "ut in [0, 100] hold row counts within 857 rows in total of their targe"
                "ts (q_j - q_(j-1)) n, beyond the least total E that values lying in ga"
                "ps at least 0.05 wide between the rows could attain (E = 0 when every "
                "target rank falls in such a gap; n rows after clamping, each row moved"
                " by less than w = 0.05 and each value then rounded to a multiple of 0."
                "1; joint exponential mechanism, Gillenwater, Joseph, Kulesza 2021; the"
                " derivation: --json, docs/quantiles.md)"
            ),
        ],
        "budget_split": "one mechanism for all levels: the whole epsilon, no split",
        "derivation": [
            (
                "with probability at least 95%, the 10 gaps that the values cut (bounds"
                " included) hold row counts within E + 12.01 * (9 ln((hi - lo) / l) + 2"
                ".996) rows of their targets (q_j - q_(j-1)) n in total (n rows after c"
                "lamping, each moved by less than the resolution w, values before their"
                " rounding to a multiple of 10^floor(log10(2w)), which moves each by at"
                " most half of it and a float rounding; l any length, E = the least tot"
                "al attained by values lying in intervals at least l long between conse"
                "cutive distinct rows or bounds; joint exponential mechanism, Gillenwat"
                "er, Joseph, Kulesza 2021, docs/quantiles.md)"
            ),
            (
                "A = 12.0011 rows per unit of score, t = ln(1 / (1 - confidence)) + 2 r"
                "ho = 2.99575, hi - lo = 100, m = 9"
            ),
            (
                "printed at l = 0.05 (the resolution w, or (hi - lo) / 10^6 without one"
                "): 856.929 rows beyond E; each halving of l adds 74.87 rows"
            ),
        ],
        "epsilon": 0.3,
        "epsilon_each": 0.3,
        "ledger": None,
        "levels": [
            "1/10",
            "1/5",
            "3/10",
            "2/5",
            "1/2",
            "3/5",
            "7/10",
            "4/5",
            "9/10",
        ],
        "method": (
            "joint exponential mechanism (Gillenwater, Joseph, Kulesza 2021) on [0,"
            " 100]: all 9 values in one draw"
        ),
        "notes": [],
        "parameters": {
            "bounds": [
                0.0,
                100.0,
            ],
            "column": "v",
            "epsilon": 0.3,
            "method": "joint",
            "n_candidates": None,
            "q": [
                0.1,
                0.2,
                0.3,
                0.4,
                0.5,
                0.6,
                0.7,
                0.8,
                0.9,
            ],
            "resolution": 0.05,
        },
        "q": [
            0.1,
            0.2,
            0.3,
            0.4,
            0.5,
            0.6,
            0.7,
            0.8,
            0.9,
        ],
        "resolution": 0.05,
        "rounding_loss": 2.86102294921875e-05,
    },
    "joint_resolution": {
        "accuracy": [
            (
                "accuracy: with probability at least 95%, the 5 gaps that the values cu"
                "t in [-10, 110] hold row counts within 44.31 rows in total of their ta"
                "rgets (q_j - q_(j-1)) n, beyond the least total E that values lying in"
                " gaps at least 0.25 wide between the rows could attain (E = 0 when eve"
                "ry target rank falls in such a gap; n rows after clamping, each row mo"
                "ved by less than w = 0.25 and each value then rounded to a multiple of"
                " 0.1; joint exponential mechanism, Gillenwater, Joseph, Kulesza 2021; "
                "the derivation: --json, docs/quantiles.md)"
            ),
        ],
        "budget_split": "one mechanism for all levels: the whole epsilon, no split",
        "derivation": [
            (
                "with probability at least 95%, the 5 gaps that the values cut (bounds "
                "included) hold row counts within E + 1.601 * (4 ln((hi - lo) / l) + 2."
                "996) rows of their targets (q_j - q_(j-1)) n in total (n rows after cl"
                "amping, each moved by less than the resolution w, values before their "
                "rounding to a multiple of 10^floor(log10(2w)), which moves each by at "
                "most half of it and a float rounding; l any length, E = the least tota"
                "l attained by values lying in intervals at least l long between consec"
                "utive distinct rows or bounds; joint exponential mechanism, Gillenwate"
                "r, Joseph, Kulesza 2021, docs/quantiles.md)"
            ),
            (
                "A = 1.60001 rows per unit of score, t = ln(1 / (1 - confidence)) + 2 r"
                "ho = 2.99574, hi - lo = 120, m = 4"
            ),
            (
                "printed at l = 0.25 (the resolution w, or (hi - lo) / 10^6 without one"
                "): 44.3058 rows beyond E; each halving of l adds 4.437 rows"
            ),
        ],
        "epsilon": 2.0,
        "epsilon_each": 2.0,
        "ledger": None,
        "levels": [
            "1/5",
            "2/5",
            "3/5",
            "4/5",
        ],
        "method": (
            "joint exponential mechanism (Gillenwater, Joseph, Kulesza 2021) on [-1"
            "0, 110]: all 4 values in one draw"
        ),
        "notes": [],
        "parameters": {
            "bounds": [
                -10.0,
                110.0,
            ],
            "column": "v",
            "epsilon": 2.0,
            "method": "joint",
            "n_candidates": None,
            "q": [
                0.2,
                0.4,
                0.6,
                0.8,
            ],
            "resolution": 0.25,
        },
        "q": [
            0.2,
            0.4,
            0.6,
            0.8,
        ],
        "resolution": 0.25,
        "rounding_loss": 1.430511474609375e-05,
    },
    "tree_named": {
        "accuracy": [
            (
                "accuracy: with probability at least 95% for all values at once, the va"
                "lue for q has at most q n + 470.2 rows below it - 1.563 and at most (1"
                " - q) n + 470.2 above it + 1.563 (the leaf width; n rows after clampin"
                "g; every noisy count within 15 of its value; docs/quantiles.md, 'the t"
                "ree'; a loose bound)"
            ),
        ],
        "budget_split": "one mechanism for all levels: the whole epsilon, no split",
        "derivation": [],
        "epsilon": 1.0,
        "epsilon_each": 1.0,
        "ledger": None,
        "levels": [
            "1/10",
            "1/5",
            "3/10",
            "2/5",
            "1/2",
            "3/5",
            "7/10",
            "4/5",
            "9/10",
        ],
        "method": (
            "quantile tree (hierarchical histogram, 8-ary, 2 levels, 64 leaves, exa"
            "ct discrete Laplace noise of scale 2 / epsilon, consistent counts: Hay"
            " et al. 2010) on [0, 100]: all 9 values from one noisy tree"
        ),
        "notes": [],
        "parameters": {
            "bounds": [
                0.0,
                100.0,
            ],
            "column": "v",
            "epsilon": 1.0,
            "method": "tree",
            "n_candidates": None,
            "q": [
                0.1,
                0.2,
                0.3,
                0.4,
                0.5,
                0.6,
                0.7,
                0.8,
                0.9,
            ],
            "resolution": None,
        },
        "q": [
            0.1,
            0.2,
            0.3,
            0.4,
            0.5,
            0.6,
            0.7,
            0.8,
            0.9,
        ],
        "resolution": None,
        "rounding_loss": None,
    },
}
