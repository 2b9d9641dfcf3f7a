"""Generate the example dataset: 200,000 synthetic page visits (fixed seed, reproducible).

Run: ``python examples/make_visits.py``. Writes, next to this script,

- ``visits.parquet``: columns ``user_id`` (BIGINT), ``site`` (VARCHAR), ``timestamp``
  (TIMESTAMP, January 2025), sorted by time. 50 sites with a Zipf-like popularity; about
  20,000 users with very unequal activity, each visiting a few favourite sites (1 to 6, drawn
  by popularity) again and again, so one user is many rows: the reason for
  ``privacy_unit="user_id"``.
- ``sites.txt``: the public candidate list, one site per line: the 50 sites plus two that
  nobody visits (they score 0). A real list would come from a public source (a site
  directory), never from the private data.

Only NumPy and DuckDB are used (DuckDB writes the Parquet file).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np

HERE = Path(__file__).resolve().parent
SEED = 2025
N_VISITS = 200_000
N_USERS = 20_000
MAX_FAVOURITES = 6
TOPICS = [
    "news", "mail", "search", "video", "maps", "weather", "shop", "music", "social", "wiki",
    "sports", "recipes", "travel", "bank", "jobs", "games", "photos", "forum", "books", "movies",
    "health", "science", "cars", "homes", "fashion", "tech", "finance", "learn", "podcasts",
    "kids", "pets", "garden", "art", "history", "code", "design", "chess", "radio", "tickets",
    "translate", "dating", "fitness", "diy", "comics", "poetry", "space", "birds", "trains",
    "coffee", "tea",
]  # fmt: skip
SITES = [f"{topic}.example" for topic in TOPICS]
ABSENT = ["archive.example", "lottery.example"]  # public candidates nobody visits


def visits(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """The visits as NumPy columns (user_id, site, timestamp), sorted by time."""
    popularity = 1.0 / np.arange(1, len(SITES) + 1) ** 1.1
    popularity /= popularity.sum()
    # Each user's favourite sites: 1 to MAX_FAVOURITES distinct sites, drawn by popularity.
    n_favourites = rng.integers(1, MAX_FAVOURITES + 1, size=N_USERS)
    favourites = np.stack(
        [rng.choice(len(SITES), size=MAX_FAVOURITES, replace=False, p=popularity) for _ in
         range(N_USERS)]
    )  # fmt: skip
    # Very unequal activity (log-normal): a few users make hundreds of visits.
    activity = rng.lognormal(mean=0.0, sigma=1.2, size=N_USERS)
    user = rng.choice(N_USERS, size=N_VISITS, p=activity / activity.sum())
    slot = (rng.random(N_VISITS) * n_favourites[user]).astype(np.int64)
    site = np.asarray(SITES, dtype=object)[favourites[user, slot]]
    start = np.datetime64("2025-01-01T00:00:00", "s")
    seconds = rng.integers(0, 31 * 24 * 3600, size=N_VISITS)
    order = np.argsort(seconds, kind="stable")
    return {
        "user_id": (user[order] + 100_000).astype(np.int64),
        "site": site[order],
        "timestamp": start + seconds[order],
    }


def main() -> None:
    columns = visits(np.random.default_rng(SEED))
    out = HERE / "visits.parquet"
    con = duckdb.connect(":memory:")
    con.register("visits_columns", columns)
    con.execute(
        "COPY (SELECT user_id, site, CAST(timestamp AS TIMESTAMP) AS timestamp "
        f"FROM visits_columns) TO '{out}' (FORMAT parquet, COMPRESSION zstd)"
    )
    (HERE / "sites.txt").write_text("\n".join([*SITES, *ABSENT]) + "\n", encoding="utf-8")
    n_users = len(np.unique(columns["user_id"]))
    print(f"wrote {out} ({N_VISITS:,} visits, {n_users:,} users) and {HERE / 'sites.txt'}")


if __name__ == "__main__":
    main()
