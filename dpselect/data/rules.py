"""The keyed bounding rule of the data layer: which values, rows and groups each unit keeps.

Each engine (:mod:`dpselect.data.engines`) spells these rules in its own language (DuckDB
SQL, Spark columns), and the Python functions here are their reference:

- **the keyed bounding order** (:func:`bounding_key`, :func:`unit_seed`,
  :func:`value_code`, :func:`keep_smallest`; docs/contribution_bounding.md): which values a
  person keeps, bit-identical in every engine for the same salt; the hashed texts in SQL
  (:func:`hashed_text_sql`, :func:`md5_bits_sql`) of the canonical text
  (:mod:`dpselect.data.values`);
- **rows kept per unit** (:func:`row_key`, :func:`kept_rows`; docs/contribution_bounding.md,
  "Rows per unit"): which rows of a numeric column a unit keeps for quantiles and pricing;
- **groups kept per unit** (:func:`kept_groups`, :func:`kept_found_groups`;
  docs/contribution_bounding.md, "Groups per unit");
- the public checks of the rule's parameters (:func:`check_rows_per_value`,
  :func:`check_bounded_candidates`).

The other engine-neutral rules: :mod:`dpselect.data.values` (a number, NaN, matching, the
canonical text), :mod:`dpselect.data.text_casts` (declared types for text),
:mod:`dpselect.data.grids` (the quantile grid). Nothing here reads data or imports an engine.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..core.errors import ParameterError
from .values import canonical_text

__all__ = [
    "BOUNDING_SEPARATOR",
    "FMIX32_STEPS",
    "M32",
    "MAX_BOUNDED_CANDIDATES",
    "bounding_key",
    "check_bounded_candidates",
    "check_rows_per_value",
    "fmix32",
    "hashed_text_sql",
    "keep_smallest",
    "keep_smallest_counted",
    "kept_found_groups",
    "kept_groups",
    "kept_rows",
    "md5_bits_sql",
    "row_key",
    "salt_text",
    "unit_seed",
    "value_code",
]

# ----------------------------------------------------------------------------------------
# The bounding rule: which values a user keeps (docs/contribution_bounding.md).
#
# Every engine computes it with the same bytes and the same integer arithmetic:
#   seed(u)  = the first 8 bytes, little-endian, of md5(salt_text \x1f "u" \x1f text(u))
#   a, b     = seed(u) mod 2^32, seed(u) div 2^32
#   code(x)  = the candidate's 0-based position (candidate path), or the first 4 bytes,
#              little-endian, of md5(salt_text \x1f "v" \x1f text(x)) (unknown-domain path)
#   key(u,x) = fmix32(fmix32(code(x) xor a) xor b)
# A user keeps the max_contributions distinct values with the smallest (key, tie-break),
# the tie-break being the position (never needed: key is a bijection of a position) or the
# value itself on the unknown-domain path. md5 is computed once per user and once per
# distinct value, never per row; the per-pair work is 32-bit integer arithmetic in which no
# intermediate exceeds 2^63 (so it is exact in signed 64-bit SQL integers, DuckDB and Spark).
# ----------------------------------------------------------------------------------------

#: Field separator of the hashed texts (ASCII unit separator, ``chr(31)``).
BOUNDING_SEPARATOR = "\x1f"
_M32 = 0xFFFFFFFF
#: The 32-bit mask of the bounding key's arithmetic (public: the SQL builders use it).
M32 = _M32
_SALT_MASK = (1 << 64) - 1
#: murmur3's 32-bit finaliser (Appleby, MurmurHash3 ``fmix32``): shifts and odd multipliers.
_FMIX32 = (("xs", 16), ("mul", 0x85EBCA6B), ("xs", 13), ("mul", 0xC2B2AE35), ("xs", 16))
#: murmur3's fmix32 steps (public: the SQL builders spell them out).
FMIX32_STEPS = _FMIX32


def salt_text(salt: int) -> str:
    """The salt as hashed: the decimal digits of ``salt mod 2^64``.

    Parameters
    ----------
    salt : int
        The per-query salt of a bounding rule, drawn from the randomness source
        independently of the data (any int; negative ones wrap modulo ``2^64``).

    Returns
    -------
    str
        The decimal text the md5 inputs start with (the SQL plans pass it as ``$salt``).
    """
    return str(int(salt) & _SALT_MASK)


def fmix32(x: int) -> int:
    """murmur3's ``fmix32`` of ``x`` (0 <= x < 2^32): a bijection of 32-bit words.

    Parameters
    ----------
    x : int
        A 32-bit word.

    Returns
    -------
    int
        Its image, also a 32-bit word.
    """
    for op, k in _FMIX32:
        x = x ^ (x >> k) if op == "xs" else (x * k) & _M32
    return x


def unit_seed(salt: int, unit_text: str) -> int:
    """The user's 64-bit seed: little-endian first 8 bytes of md5(salt, "u", unit text).

    Parameters
    ----------
    salt : int
        The per-query salt (:func:`salt_text`).
    unit_text : str
        The privacy unit's canonical text (:func:`canonical_text` of its value).

    Returns
    -------
    int
        The seed, ``0 <= seed < 2^64``: its low half ``a`` and high half ``b`` key the unit's
        :func:`bounding_key`.
    """
    text = BOUNDING_SEPARATOR.join((salt_text(salt), "u", unit_text))
    return int.from_bytes(hashlib.md5(text.encode("utf-8")).digest()[:8], "little")


def value_code(salt: int, value_text: str, tag: str = "v") -> int:
    """A value's 32-bit code on the unknown-domain path (md5 of salt, ``tag``, value text);
    a group found in the data is coded with the tag ``g`` (:func:`kept_found_groups`).

    Parameters
    ----------
    salt : int
        The per-query salt (for a group, the group rule's salt).
    value_text : str
        The value's canonical text (:func:`canonical_text`).
    tag : str, default ``"v"``
        ``"v"`` for a ranked value, ``"g"`` for a group found in the data.

    Returns
    -------
    int
        The code: the first 4 bytes of the md5, little-endian, ``0 <= code < 2^32``.
    """
    text = BOUNDING_SEPARATOR.join((salt_text(salt), tag, value_text))
    return int.from_bytes(hashlib.md5(text.encode("utf-8")).digest()[:4], "little")


def bounding_key(salt: int, unit_text: str, code: int) -> int:
    """The 32-bit key of the pair (user, value code): smaller keys are kept first.

    A two-round Even-Mansour construction over ``fmix32`` keyed by the user's seed; for a
    fixed user it is a bijection of the code, so distinct candidate positions never tie.

    Parameters
    ----------
    salt : int
        The per-query salt.
    unit_text : str
        The privacy unit's canonical text (:func:`unit_seed`).
    code : int
        The value's 32-bit code: a candidate's 0-based position, or :func:`value_code` of a
        value (or group) found in the data.

    Returns
    -------
    int
        The 32-bit key; each unit keeps the values of smallest key.
    """
    seed = unit_seed(salt, unit_text)
    return fmix32(fmix32(code ^ (seed & _M32)) ^ (seed >> 32))


def md5_bits_sql(text_sql: str, first_bytes: int, dialect: str = "duckdb") -> str:
    """The first ``first_bytes`` (4 or 8) bytes of md5(text), little-endian, as SQL.

    DuckDB: ``md5_number`` is the digest read as a little-endian 128-bit integer, so its low
    64 (or 32) bits are the first 8 (or 4) bytes, as UBIGINT (``md5_number_upper`` is the same
    number, but a macro through BIT and VARCHAR text, about 6x slower).

    Parameters
    ----------
    text_sql : str
        A text SQL expression, usually :func:`hashed_text_sql`.
    first_bytes : int
        4 (a value code, :func:`value_code`) or 8 (a unit seed, :func:`unit_seed`).
    dialect : {"duckdb", "spark"}, default ``"duckdb"``
        The SQL spelling (anything but ``"spark"`` is DuckDB).

    Returns
    -------
    str
        A SQL expression of the number: ``UBIGINT`` in DuckDB, ``DECIMAL(20, 0)`` in Spark.
    """
    if dialect == "spark":
        h = f"md5({text_sql})"
        hexdigits = ", ".join(f"substr({h}, {2 * k + 1}, 2)" for k in reversed(range(first_bytes)))
        return f"CAST(conv(concat({hexdigits}), 16, 10) AS DECIMAL(20, 0))"
    mask = (1 << (8 * first_bytes)) - 1
    return f"CAST(md5_number({text_sql}) & {mask} AS UBIGINT)"


def hashed_text_sql(tag: str, text_sql: str, salt_sql: str = "$salt") -> str:
    """SQL of the hashed text ``salt \\x1f tag \\x1f text`` (the salt as a text parameter).

    Parameters
    ----------
    tag : str
        ``"u"`` (a unit's seed), ``"v"`` (a value's code) or ``"g"`` (a group's code); put
        into the SQL as a literal.
    text_sql : str
        A text SQL expression: the canonical text (:func:`.values.canonical_text_sql`).
    salt_sql : str, default ``"$salt"``
        SQL of the salt's text (:func:`salt_text`), by default the query parameter ``$salt``
        (a grouped release's group rule uses ``$group_salt``).

    Returns
    -------
    str
        A text SQL expression (``concat_ws`` with the separator ``chr(31)``).
    """
    return f"concat_ws(chr(31), {salt_sql}, '{tag}', {text_sql})"


def _fmix32_numpy(x: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    """:func:`fmix32` of every word of ``x`` (uint32 arithmetic wraps mod 2^32), in place."""
    for op, k in _FMIX32:
        if op == "xs":
            x ^= x >> np.uint32(k)
        else:
            x *= np.uint32(k)
    return x


def keep_smallest(
    seeds: npt.NDArray[np.uint64],
    lengths: npt.NDArray[np.int64],
    codes: npt.NDArray[np.uint32],
    ties: npt.NDArray[np.uint32],
    m: int,
) -> npt.NDArray[np.int64]:
    """The tie-breaks each user keeps, by the rule of :func:`bounding_key` (NumPy).

    Users come as consecutive runs: user ``j`` has the seed ``seeds[j]`` (:func:`unit_seed`)
    and the next ``lengths[j] >= 1`` entries of ``codes`` and ``ties`` (duplicates allowed).
    Each user keeps the ``m`` distinct entries with the smallest ``(key, tie)``; the result
    lists the kept ties (in no particular order). ``p = key * 2^32 + tie`` orders as
    ``(key, tie)``; for ``m`` up to 8 the ``m`` smallest distinct ``p`` of each run are found
    by ``m`` rounds of a segmented minimum (each round removes every copy of the last
    minimum), beyond that by one sort.

    Parameters
    ----------
    seeds : numpy.ndarray of uint64
        Each user's seed (:func:`unit_seed`), one per run.
    lengths : numpy.ndarray of int64
        The length of each user's run, each ``>= 1``.
    codes : numpy.ndarray of uint32
        Each entry's code (a candidate position or a value's :func:`value_code`).
    ties : numpy.ndarray of uint32
        Each entry's tie-break, below ``2^32 - 1`` (a candidate position or a value's rank);
        equal ties are the same value.
    m : int
        ``max_contributions``: the most distinct entries each user keeps.

    Returns
    -------
    numpy.ndarray of int64
        The kept ties, every user's together (``bincount`` gives each value's score).
    """
    return _keep(seeds, lengths, codes, ties, m, 1)[0]


def keep_smallest_counted(
    seeds: npt.NDArray[np.uint64],
    lengths: npt.NDArray[np.int64],
    codes: npt.NDArray[np.uint32],
    ties: npt.NDArray[np.uint32],
    m: int,
    max_rows_per_value: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """:func:`keep_smallest` with each kept entry's row count, capped.

    The kept ties are those of :func:`keep_smallest` (the same ``m`` values per user: the
    choice reads distinct entries only), and beside each one ``min(copies, r)``: how many of
    the user's entries carry that tie (the user's rows with that value), at most
    ``r = max_rows_per_value`` (docs/contribution_bounding.md, "Rows per value"). A
    user's weights depend on that user's entries only, so one user moves each score by at
    most ``r``, at most ``m`` scores.

    Parameters
    ----------
    seeds, lengths, codes, ties, m
        As in :func:`keep_smallest`.
    max_rows_per_value : int
        ``r >= 1``: the cap on one user's rows counted for one kept value.

    Returns
    -------
    tuple of numpy.ndarray of int64
        The kept ties and their capped counts, entry by entry.
    """
    return _keep(seeds, lengths, codes, ties, m, max_rows_per_value)


def _keep(
    seeds: npt.NDArray[np.uint64],
    lengths: npt.NDArray[np.int64],
    codes: npt.NDArray[np.uint32],
    ties: npt.NDArray[np.uint32],
    m: int,
    r: int,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The kept ties and (``r > 1``) their copies capped at ``r`` (``r = 1``: all ones)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if len(lengths) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    seeds = np.asarray(seeds, dtype=np.uint64)
    x = np.asarray(codes, dtype=np.uint32) ^ np.repeat((seeds & _M32).astype(np.uint32), lengths)
    _fmix32_numpy(x)
    x ^= np.repeat((seeds >> np.uint64(32)).astype(np.uint32), lengths)
    _fmix32_numpy(x)
    p = (x.astype(np.uint64) << np.uint64(32)) | np.asarray(ties, dtype=np.uint64)
    del x
    starts = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    copies: npt.NDArray[np.int64] | None = None
    if m <= 8:
        gone = np.uint64(np.iinfo(np.uint64).max)  # above every p (ties < 2^32 - 1)
        rounds, counted = [], []
        for round_ in range(m):
            best = np.minimum.reduceat(p, starts)
            live = best != gone
            rounds.append(best[live])
            if round_ + 1 < m or r > 1:
                copy = p == np.repeat(best, lengths)
                if r > 1:  # every copy of the minimum is one row of that (user, value)
                    counted.append(np.add.reduceat(copy.astype(np.int64), starts)[live])
                if round_ + 1 < m:
                    p[copy] = gone
        found = np.concatenate(rounds)
        if r > 1:
            copies = np.concatenate(counted)
    else:
        user = np.repeat(np.arange(len(lengths)), lengths)
        order = np.lexsort((p, user))
        p, user = p[order], user[order]
        first = np.ones(len(p), dtype=bool)
        first[1:] = (p[1:] != p[:-1]) | (user[1:] != user[:-1])  # distinct within a user
        at = np.flatnonzero(first)
        runs = np.diff(np.append(at, len(p)))  # copies of each distinct (user, p)
        p, user = p[first], user[first]
        begin = np.searchsorted(user, user, side="left")
        chosen = np.arange(len(p)) - begin < m
        found = p[chosen]
        copies = runs[chosen].astype(np.int64)
    kept: npt.NDArray[np.int64] = (found & np.uint64(_M32)).astype(np.int64)
    if r > 1 and copies is not None:
        return kept, np.minimum(copies, r).astype(np.int64)
    return kept, np.ones(len(kept), dtype=np.int64)


def check_rows_per_value(max_rows_per_value: Any, privacy_unit: str | None) -> int:
    """``max_rows_per_value`` as an int ``>= 1``; other than 1 only with a privacy unit.

    Public facts only (the parameter and whether a unit is given), so the recipes raise it
    before any charge; the engines check again.

    Parameters
    ----------
    max_rows_per_value : int
        The most rows one unit counts for each value it keeps.
    privacy_unit : str or None
        The privacy unit column; ``None`` when rows are the units.

    Returns
    -------
    int
        ``max_rows_per_value`` as an int.

    Raises
    ------
    ParameterError
        Not an integer ``>= 1``, or ``!= 1`` without a privacy unit (each row is then its
        own unit and counts once).
    """
    if isinstance(max_rows_per_value, bool) or not isinstance(
        max_rows_per_value, (int, np.integer)
    ):
        raise ParameterError(
            f"max_rows_per_value must be an integer >= 1, got {max_rows_per_value!r}"
        )
    r = int(max_rows_per_value)
    if r < 1:
        raise ParameterError(f"max_rows_per_value must be an integer >= 1, got {r}")
    if r != 1 and privacy_unit is None:
        raise ParameterError(
            "max_rows_per_value applies only with a privacy_unit column (without one each "
            "row is its own unit and counts once)"
        )
    return r


# ----------------------------------------------------------------------------------------
# Rows per unit: the rows of a numeric column each unit keeps (quantiles, pricing).
# ----------------------------------------------------------------------------------------


def row_key(salt: int, unit_text: str, value: float) -> int:
    """The 32-bit key of a row of unit ``unit_text`` holding the number ``value``.

    ``bounding_key(salt, unit_text, value_code(salt, canonical_text(value)))``: the key of
    the unknown-domain path with the row's value (a float64, ``-0.0`` read as ``0.0``) as the
    value. Rows of one unit with equal values have equal keys.

    Parameters
    ----------
    salt : int
        The per-query salt of the row rule.
    unit_text : str
        The unit's canonical text.
    value : float
        The row's number (not NaN).

    Returns
    -------
    int
        The 32-bit key; each unit keeps its rows of smallest ``(key, value)``.
    """
    x = float(value) + 0.0  # -0.0 is 0.0, as the engines normalise it
    return bounding_key(salt, unit_text, value_code(salt, canonical_text(x)))


def kept_rows(
    salt: int, rows: Sequence[tuple[str, float]], max_rows: int
) -> dict[str, list[float]]:
    """The Python reference of the rule "each unit keeps at most ``max_rows`` rows".

    ``rows`` are ``(unit text, value)`` pairs (the unit's canonical text, the row's number;
    rows without a unit or a number are not given). Within a unit the rows are ordered by
    ``(row_key, value)`` and the first ``max_rows`` are kept. Rows with equal values are
    interchangeable, so the kept multiset is determined, and it depends only on that unit's
    rows and the salt (docs/contribution_bounding.md, "Rows per unit").

    Parameters
    ----------
    salt : int
        The per-query salt.
    rows : sequence of (str, float)
        The rows as (canonical unit text, value); NaN values are not rows.
    max_rows : int
        How many rows each unit keeps (at least 1).

    Returns
    -------
    dict of str to list of float
        Each unit's kept values, in the rule's order.
    """
    by_unit: dict[str, list[tuple[int, float]]] = {}
    for unit, value in rows:
        x = float(value) + 0.0
        by_unit.setdefault(unit, []).append((row_key(salt, unit, x), x))
    return {u: [x for _, x in sorted(items)[: int(max_rows)]] for u, items in by_unit.items()}


#: Candidate positions are 32-bit codes of the rule (docs/contribution_bounding.md), packed
#: below the key: at most this many candidates with a privacy unit (both engines).
MAX_BOUNDED_CANDIDATES = (1 << 32) - 1


def check_bounded_candidates(count: int) -> None:
    """Public: with a privacy unit a candidate's code is its position, a 32-bit word
    (docs/contribution_bounding.md, rule 4): at most :data:`MAX_BOUNDED_CANDIDATES`.

    Parameters
    ----------
    count : int
        The number of candidates (or listed groups), checked only when a privacy unit is
        given (the caller's choice).

    Raises
    ------
    ParameterError
        More than :data:`MAX_BOUNDED_CANDIDATES`.
    """
    if count > MAX_BOUNDED_CANDIDATES:
        raise ParameterError(
            f"candidates: at most {MAX_BOUNDED_CANDIDATES} (2^32 - 1) candidates with a "
            f"privacy_unit (the bounding rule codes a candidate by its 32-bit position), "
            f"got {count}"
        )


# ----------------------------------------------------------------------------------------
# Groups per unit: the groups of a grouped release each unit keeps.
# ----------------------------------------------------------------------------------------


def kept_groups(
    group_salt: int, unit_text: str, positions: Sequence[int], max_groups: int
) -> list[int]:
    """The Python reference of the rule "each unit keeps at most ``max_groups`` groups".

    ``positions`` are the positions, in the public group list, of the groups the unit's rows
    fall in (after rows matching no candidate, no group or holding NULL are dropped;
    repeats allowed). The unit keeps the ``max_groups`` distinct positions with the smallest
    :func:`bounding_key` ``(group_salt, unit_text, position)``: a bijection of the position
    for a fixed unit, so there are no ties. The choice depends only on that unit's rows and
    the salt; a unit then touches at most ``max_groups`` groups, the fact the grouped
    release's composition rests on (docs/contribution_bounding.md, "Groups per unit").

    Parameters
    ----------
    group_salt : int
        The per-query salt of the group rule (drawn apart from the value rule's salt).
    unit_text : str
        The unit's canonical text (as :func:`unit_seed` hashes it).
    positions : sequence of int
        The unit's group positions (each below ``2^32``).
    max_groups : int
        How many groups the unit keeps (at least 1).

    Returns
    -------
    list of int
        The kept positions, smallest key first.
    """
    seed = unit_seed(group_salt, unit_text)
    a, b = seed & _M32, seed >> 32

    def key(g: int) -> int:
        return fmix32(fmix32(int(g) ^ a) ^ b)

    return sorted(set(int(g) for g in positions), key=key)[: int(max_groups)]


def kept_found_groups(
    group_salt: int, unit_text: str, groups: Sequence[Any], max_groups: int
) -> list[Any]:
    """The Python reference of the rule "each unit keeps at most ``max_groups`` groups" when
    the groups are found in the data (:mod:`dpselect.data.discovered_groups`).

    ``groups`` are the ``by`` values of the unit's rows (repeats allowed, no NULL). Each is
    coded by :func:`value_code` ``(group_salt, canonical_text(group), "g")``; the unit keeps
    the ``max_groups`` distinct groups with the smallest (:func:`bounding_key` ``(group_salt,
    unit_text, code)``, group), the group itself (its order among values) breaking the ties of
    two codes that collide. The choice reads only the unit's rows and the salt, as
    :func:`kept_groups` does.

    Parameters
    ----------
    group_salt : int
        The per-query salt of the group rule.
    unit_text : str
        The unit's canonical text.
    groups : sequence
        The ``by`` values of the unit's rows (comparable with each other).
    max_groups : int
        How many groups the unit keeps (at least 1).

    Returns
    -------
    list
        The kept groups, smallest key first.
    """

    def key(group: Any) -> tuple[int, Any]:
        code = value_code(group_salt, canonical_text(group), "g")
        return bounding_key(group_salt, unit_text, code), group

    return sorted(set(groups), key=key)[: int(max_groups)]
