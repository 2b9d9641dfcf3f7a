"""The main job from Python: the most visited sites, without revealing any visitor.

Run: ``python examples/top_sites.py`` (the data is made by ``examples/make_visits.py``).

One user makes many visits, so the privacy unit is the user: each user counts toward at most
3 sites (chosen by a hash salted per query), and a site's score is the number of its users
that kept it. Adding or removing a whole user then moves at most 3 scores, each by 1, which is
what the mechanism's privacy proof needs. The candidates are a public list of sites
(``sites.txt``), never taken from the data.
"""

from __future__ import annotations

from pathlib import Path

from dpselect import Contributions, Session

HERE = Path(__file__).resolve().parent
DATA = HERE / "visits.parquet"
SITES = HERE / "sites.txt"


def main() -> None:
    bounds = Contributions(values_per_unit=3)
    with Session(DATA, privacy_unit="user_id", contributions=bounds) as session:
        print("Private top-5 sites (epsilon = 1):")
        print(session.top_k("site", 5, epsilon=1.0, candidates=SITES))
        print()
        print("Private top-5 sites with noisy user counts (epsilon = 1, half for the counts):")
        print(session.top_k("site", 5, epsilon=1.0, candidates=SITES, counts=True))
        print()
        print("Private most visited site (epsilon = 0.5):")
        print(session.most_common("site", epsilon=0.5, candidates=SITES))


if __name__ == "__main__":
    main()
