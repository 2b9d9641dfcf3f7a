"""The front door: :class:`dpselect.Session` and :class:`dpselect.Contributions`.

A session's query is the recipe's release for a fixed seed (same values, same parameters);
the data is opened once; the unit column and the ledger's binding are checked at opening;
every contribution bound is validated in one place and refused, with the reason, before any
charge where a query does not use it.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpselect as dp
from dpselect.accounting import Ledger
from dpselect.core.errors import DataError, LedgerError, ParameterError
from dpselect.planning.contributions import Contributions
from dpselect.planning.partition_selection_request import partition_selection_request
from dpselect.planning.price_request import PriceRequest, price_request
from dpselect.planning.quantile_request import QuantileRequest, quantile_request
from dpselect.planning.top_k_request import top_k_request
from dpselect.recipes.pricing import best_price as recipe_best_price
from dpselect.recipes.quantiles import quantile as recipe_quantile
from dpselect.recipes.top_k import top_k as recipe_top_k
from dpselect.recipes.unknown_domain import partition_selection as recipe_partition_selection
from dpselect.sampling import InsecureSeededSource


def _visits(n: int = 3000) -> pd.DataFrame:
    rng = np.random.default_rng(4)
    return pd.DataFrame(
        {
            "user": rng.integers(0, 400, n),
            "site": rng.choice(list("abcdefgh"), n, p=[0.3, 0.2, 0.15, 0.1, 0.1, 0.05, 0.05, 0.05]),
            "country": rng.choice(["fr", "de", "it"], n),
            "minutes": rng.gamma(2.0, 10.0, n).round(1),
        }
    )


def _same(a: Any, b: Any) -> None:
    left, right = a.to_dict(), b.to_dict()
    assert left == right


CASES: list[tuple[str, dict[str, Any], dict[str, Any], dp.Contributions]] = [
    (
        "top_k",
        {"column": "site", "k": 3, "epsilon": 1.0, "candidates": list("abcdefgh")},
        {},
        dp.Contributions(values_per_unit=3, rows_per_value=2),
    ),
    (
        "top_k",
        {"column": "site", "k": 2, "epsilon": 1.0, "delta": 1e-6},
        {},
        dp.Contributions(values_per_unit=2),
    ),
    (
        "top_k",
        {"column": "site", "k": 2, "epsilon": 1.0, "candidates": list("abcdefgh")},
        {},
        dp.Contributions(values_per_unit="auto", auto_share=0.3),
    ),
    (
        "top_k",
        {"column": "site", "k": 2, "epsilon": 2.0, "candidates": list("abcdefgh"),
         "by": "country", "groups": ["fr", "de", "it"]},
        {},
        dp.Contributions(values_per_unit=2, groups_per_unit=2),
    ),
    (
        "partition_selection",
        {"column": "site", "epsilon": 1.0, "delta": 1e-6},
        {},
        dp.Contributions(values_per_unit=2),
    ),
]  # fmt: skip


@pytest.mark.parametrize(("query", "args", "loose", "bounds"), CASES)
def test_session_query_is_the_recipe_release(
    query: str, args: dict[str, Any], loose: dict[str, Any], bounds: dp.Contributions
) -> None:
    """Same seed: the recipe with loose bounds (a top-k: with its request), the recipe with
    ``contributions=`` and the session's query release the same result (a session that dropped
    its bounds or its unit would release another: the m = 1 case below differs)."""
    data = _visits()
    recipe = {"top_k": recipe_top_k, "partition_selection": recipe_partition_selection}[query]
    positional = [args.pop("column")] + [args.pop(key) for key in ("k", "q") if key in args]
    if query in ("top_k", "partition_selection"):
        build = top_k_request if query == "top_k" else partition_selection_request
        fixed = [args.pop(key) for key in ("epsilon", "delta") if key in args]
        if query == "top_k" and len(fixed) > 1:
            args["delta"] = fixed.pop()
        request = build(*positional, *fixed, privacy_unit="user", contributions=bounds,
                        **args)  # fmt: skip
        args.update(zip(("epsilon", "delta"), fixed, strict=False))
        by_loose = by_value = recipe(data, request, source=InsecureSeededSource(9))
    else:
        by_loose = recipe(data, *positional, privacy_unit="user",
                          source=InsecureSeededSource(9), **args, **loose)  # fmt: skip
        by_value = recipe(data, *positional, privacy_unit="user",
                          source=InsecureSeededSource(9), contributions=bounds, **args)  # fmt: skip
    with dp.Session(data, privacy_unit="user", contributions=bounds,
                    source=InsecureSeededSource(9)) as session:  # fmt: skip
        by_session = getattr(session, query)(*positional, **args)
    _same(by_loose, by_value)
    _same(by_loose, by_session)
    with dp.Session(data, privacy_unit="user", source=InsecureSeededSource(9)) as session:
        unbounded = getattr(session, query)(*positional, **args)
    assert unbounded.to_dict() != by_session.to_dict()  # the bounds reach the release


QUANTILE_CASES: list[tuple[dict[str, Any], dp.Contributions]] = [
    ({"column": "minutes", "q": [0.25, 0.5, 0.75], "epsilon": 1.0, "bounds": (0.0, 200.0)},
     dp.Contributions(values_per_unit=4)),
    ({"column": "minutes", "q": 0.5, "epsilon": 1.0, "bounds": (0.0, 200.0)},
     dp.Contributions(values_per_unit="auto", auto_share=0.2)),
]  # fmt: skip


@pytest.mark.parametrize(("args", "bounds"), QUANTILE_CASES)
def test_session_quantile_is_the_recipe_release(
    args: dict[str, Any], bounds: dp.Contributions
) -> None:
    """Same seed: the recipe run on a request with the bounds and the session's query release
    the same result; a session without the bounds releases another (they reach the release)."""
    data = _visits()
    request = quantile_request(args["column"], args["q"], args["epsilon"], bounds=args["bounds"],
                               privacy_unit="user", contributions=bounds)  # fmt: skip
    by_request = recipe_quantile(data, request, source=InsecureSeededSource(9))
    query = {key: args[key] for key in ("epsilon", "bounds")}
    with dp.Session(data, privacy_unit="user", contributions=bounds,
                    source=InsecureSeededSource(9)) as session:  # fmt: skip
        by_session = session.quantile(args["column"], args["q"], **query)
    _same(by_request, by_session)
    with dp.Session(data, privacy_unit="user", source=InsecureSeededSource(9)) as session:
        unbounded = session.quantile(args["column"], args["q"], **query)
    assert unbounded.to_dict() != by_session.to_dict()


def test_session_quantile_takes_confidence_and_progress() -> None:
    """What the recipe takes beyond the request reaches it through the session: the
    confidence of the accuracy lines and the scan's progress."""
    data = _visits()
    seen: list[float] = []
    request = quantile_request("minutes", 0.5, 1.0, bounds=(0.0, 200.0), confidence=0.8)
    by_request = recipe_quantile(data, request, source=InsecureSeededSource(4))
    with dp.Session(data, source=InsecureSeededSource(4), progress=seen.append) as session:
        by_session = session.quantile("minutes", 0.5, epsilon=1.0, bounds=(0.0, 200.0),
                                      confidence=0.8)  # fmt: skip
        grouped = session.quantile("minutes", 0.5, epsilon=1.0, bounds=(0.0, 200.0),
                                   by="country", groups=["fr", "de", "it"])  # fmt: skip
    _same(by_request, by_session)
    assert "with probability at least 80%" in by_session.accuracy[0]
    assert len(grouped.releases) == 3


def test_session_opens_the_data_once(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import dpselect.data.tables as tables

    path = tmp_path / "visits.csv"
    _visits(500).to_csv(path, index=False)
    calls: list[Any] = []
    real = tables._open_file

    def counted(*a: Any, **k: Any) -> Any:
        calls.append(a[0])
        return real(*a, **k)

    monkeypatch.setattr(tables, "_open_file", counted)
    with dp.Session(str(path), privacy_unit="user",
                    contributions=dp.Contributions(values_per_unit=2)) as session:  # fmt: skip
        session.top_k("site", 2, epsilon=1.0, candidates=list("abcdefgh"))
        session.most_common("site", epsilon=1.0, candidates=list("abcdefgh"))
        session.quantile("minutes", 0.5, epsilon=1.0, bounds=(0.0, 200.0),
                         contributions=dp.Contributions(values_per_unit=3))  # fmt: skip
        session.partition_selection("site", epsilon=1.0, delta=1e-6)
    assert len(calls) == 1


def test_session_checks_unit_and_ledger_at_opening(tmp_path: Any) -> None:
    data = _visits(200)
    with pytest.raises(DataError, match="person"):
        dp.Session(data, privacy_unit="person")
    book = Ledger.create(tmp_path / "l.db", 5.0, privacy_unit="user")
    with pytest.raises(LedgerError, match="bound to"):
        dp.Session(data, privacy_unit="site", ledger=book)
    with pytest.raises(LedgerError, match="bound to"):
        dp.Session(data, ledger=book)  # rows: another unit
    assert book.spent() == (0.0, 0.0)
    with dp.Session(data, privacy_unit="user", ledger=book) as session:
        session.top_k("site", 1, epsilon=0.5, candidates=list("abcdefgh"))
        assert "spent epsilon 0.5" in repr(session)
    assert book.spent()[0] == pytest.approx(0.5)
    assert len(book.entries()) == 1


def test_session_opened_from_a_ledger_path_closes_it(tmp_path: Any) -> None:
    path = tmp_path / "l.db"
    Ledger.create(path, 5.0).close()
    with dp.Session(_visits(200), ledger=str(path)) as session:
        session.most_common("site", epsilon=0.25, candidates=list("abcdefgh"))
    assert Ledger.open(path).spent()[0] == pytest.approx(0.25)


def test_session_prints_what_it_holds() -> None:
    with dp.Session(_visits(50), privacy_unit="user",
                    contributions=dp.Contributions(values_per_unit="auto")) as session:  # fmt: skip
        text = repr(session)
    assert "privacy unit: 'user'" in text
    assert "values chosen privately (auto, 0.25 of epsilon)" in text
    assert "ledger: none" in text
    assert session.contributions == dp.Contributions(values_per_unit="auto")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"values_per_unit": 0}, r"values_per_unit=\.\.\.\) must be at least 1"),
        ({"values_per_unit": 2.5}, r"values_per_unit=\.\.\.\) must be an int >= 1 or 'auto'"),
        ({"values_per_unit": True}, "values_per_unit"),
        ({"values_per_unit": "all"}, "values_per_unit"),
        ({"rows_per_value": "auto"}, r"rows_per_value=\.\.\.\) must be an int >= 1"),
        ({"groups_per_unit": 0}, "groups_per_unit"),
        ({"auto_share": 1.0}, r"auto_share=\.\.\.\) must be in \(0, 1\)"),
        ({"auto_share": "half"}, "auto_share"),
    ],
)
def test_contributions_validated_when_made(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        dp.Contributions(**fields)


def test_contributions_are_frozen_and_typed() -> None:
    value = dp.Contributions(values_per_unit=np.int64(3))
    assert value.values_per_unit == 3 and type(value.values_per_unit) is int
    with pytest.raises(AttributeError):
        value.values_per_unit = 4  # type: ignore[misc]
    assert value.to_dict() == {"values_per_unit": 3, "rows_per_value": 1,
                               "groups_per_unit": 1, "auto_share": None}  # fmt: skip


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda d, c, b: dp.top_k(d, "site", 1, epsilon=1.0, candidates=list("ab"), contributions=c,
                                  ledger=b),
         "other than 1 needs privacy_unit="),
        (lambda d, c, b: dp.quantile(d, "minutes", 0.5, epsilon=1.0, bounds=(0, 100),
                                  privacy_unit="user",
                                  contributions=dp.Contributions(rows_per_value=2), ledger=b),
         "does not apply to a quantile"),
        (lambda d, c, b: dp.top_k(d, "site", 1, epsilon=1.0, candidates=list("ab"),
                                  privacy_unit="user",
                               contributions=dp.Contributions(groups_per_unit=2), ledger=b),
         "only to a grouped release"),
        (lambda d, c, b: dp.top_k(d, "site", 1, epsilon=1.0, candidates=list("ab"),
                                  privacy_unit="user",
                               contributions=dp.Contributions(auto_share=0.5), ledger=b),
         "only where a choice is automatic"),
        (lambda d, c, b: dp.partition_selection(d, "site", epsilon=1.0, delta=1e-6,
                                                privacy_unit="user",
                                             contributions=dp.Contributions(
                                                 values_per_unit="auto"), ledger=b),
         "not planned for partition_selection"),
        (lambda d, c, b: dp.top_k(d, "site", 1, epsilon=1.0, candidates=list("ab"),
                                  privacy_unit="user",
                               contributions={"values_per_unit": 2}, ledger=b),
         "must be a dpselect.Contributions"),
    ],
)  # fmt: skip
def test_bounds_a_query_does_not_use_are_refused_before_any_charge(
    tmp_path: Any, call: Any, message: str
) -> None:
    book = Ledger.create(tmp_path / "l.db", 5.0)
    data = _visits(100)
    with pytest.raises(ParameterError, match=message):
        call(data, dp.Contributions(values_per_unit=2), book)
    assert book.spent() == (0.0, 0.0)


def test_a_private_group_choice_takes_the_auto_share() -> None:
    data = _visits()
    bounds = dp.Contributions(auto_share=0.4)
    request = top_k_request("site", 2, 2.0, delta=1e-6, candidates=list("abcdefgh"),
                            by="country", privacy_unit="user", contributions=bounds)  # fmt: skip
    by_request = recipe_top_k(data, request, source=InsecureSeededSource(3))
    with dp.Session(data, privacy_unit="user", contributions=bounds,
                    source=InsecureSeededSource(3)) as session:  # fmt: skip
        by_session = session.top_k("site", 2, epsilon=2.0, delta=1e-6,
                                   candidates=list("abcdefgh"), by="country")  # fmt: skip
    _same(by_request, by_session)
    with dp.Session(data, privacy_unit="user", source=InsecureSeededSource(3)) as session:
        default = session.top_k("site", 2, epsilon=2.0, delta=1e-6, candidates=list("abcdefgh"),
                                by="country")  # fmt: skip
    assert default.to_dict() != by_session.to_dict()  # the share reaches the release


def test_session_methods_keep_the_contract() -> None:
    """At most 12 parameters and 3 positional ones, the rest keyword-only, a precise return
    type (no ``Any``), for the session and each of its queries."""
    from dpselect import session as module

    for name in (
        "__init__",
        "top_k",
        "most_common",
        "partition_selection",
        "quantile",
        "best_price",
    ):
        fn = getattr(dp.Session, name)
        params = list(inspect.signature(fn).parameters.values())[1:]  # without self
        assert len(params) <= 12, name
        positional = [p for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
        assert len(positional) <= 3, name
        hints = typing.get_type_hints(fn, vars(module))
        assert hints["return"] is not Any, name


def test_every_unit_release_prints_its_contribution_bounds() -> None:
    data = _visits(400)
    cands = list("abcdefgh")
    with dp.Session(data, privacy_unit="user", source=InsecureSeededSource(2),
                    contributions=dp.Contributions(values_per_unit=3, rows_per_value=2,
                                                   groups_per_unit=2)) as session:  # fmt: skip
        top = session.top_k("site", 2, epsilon=1.0, candidates=cands, by="country",
                            groups=["fr", "de", "it"])  # fmt: skip
        keys = session.partition_selection(
            "site", epsilon=1.0, delta=1e-6, contributions=dp.Contributions(values_per_unit=2)
        )
    line = "contributions per unit: 3 values, 2 rows per value, 2 groups"
    assert f"privacy unit: 'user' (epsilon protects all the rows of one unit); {line}" in str(top)
    assert "contributions per unit: 2 values, 1 row per value, 1 group" in str(keys)
    plain = dp.top_k(data, "site", 2, epsilon=1.0, candidates=cands)  # each row its own unit
    assert "contributions per unit" not in str(plain)


def test_session_best_price_is_the_recipe_release() -> None:
    rng = np.random.default_rng(6)
    bids = pd.DataFrame({"buyer": rng.integers(0, 300, 1500), "bid": rng.uniform(0, 1, 1500)})
    loose = recipe_best_price(
        bids,
        price_request(
            1.0,
            n=300,
            column="bid",
            privacy_unit="buyer",
            contributions=Contributions(values_per_unit=3),
        ),
        source=InsecureSeededSource(5),
    )
    with dp.Session(bids, privacy_unit="buyer", source=InsecureSeededSource(5),
                    contributions=dp.Contributions(values_per_unit=3)) as session:  # fmt: skip
        typed = session.best_price("bid", epsilon=1.0, n=300)
        with pytest.raises(ParameterError, match="best_price takes"):
            session.best_price(
                "bid", epsilon=1.0, n=300, contributions=dp.Contributions(values_per_unit="auto")
            )
    _same(loose, typed)


def _public_callables() -> list[str]:
    return [
        name
        for name in dp.__all__
        if callable(getattr(dp, name)) and not inspect.isclass(getattr(dp, name))
    ]


@pytest.mark.parametrize("name", _public_callables())
def test_every_public_callable_keeps_the_contract(name: str) -> None:
    """Issue 42's contract for every top-level callable (the shorthands included): at most 12
    parameters, at most 3 positional (the rest keyword-only), a precise return type."""
    signature = inspect.signature(getattr(dp, name))
    params = list(signature.parameters.values())
    assert len(params) <= 12, name
    if name != "explain":  # explain(query, *args, **kwargs) takes the query's own arguments
        assert not [p for p in params if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)], name
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    assert len(positional) <= 3, name
    annotation = str(signature.return_annotation)
    assert annotation not in ("Any", str(inspect.Signature.empty)), name
    assert "Any" not in annotation.replace("|", " ").split(), name


SHORTHANDS = [
    ("top_k", "dpselect.recipes.top_k", "top_k", ("d", "c", 3),
     {"epsilon": 1.0, "delta": 1e-6, "candidates": ["a", "b", "c"], "mechanism": "gumbel",
      "privacy_unit": "u", "by": "g", "groups": ["x"], "ledger": "l"}),
    ("most_common", "dpselect.recipes.top_k", "top_k", ("d", "c"),
     {"epsilon": 1.0, "delta": 1e-6, "candidates": ["a"], "mechanism": "gumbel",
      "privacy_unit": "u", "by": "g", "groups": ["x"], "ledger": "l"}),
    ("partition_selection", "dpselect.recipes.unknown_domain", "partition_selection",
     ("d", "c"), {"epsilon": 1.0, "delta": 1e-6, "mechanism": "laplace", "privacy_unit": "u",
                  "by": "g", "groups": ["x"], "ledger": "l"}),
]  # fmt: skip


@pytest.mark.parametrize(("name", "module", "recipe", "args", "kwargs"), SHORTHANDS)
def test_a_shorthand_forwards_every_argument_to_its_recipe(
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    module: str,
    recipe: str,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> None:
    """The shorthand is the recipe's release: every argument reaches the recipe unchanged
    (a shorthand that dropped one, or passed a default in its place, fails here)."""
    import importlib

    seen: dict[str, Any] = {}

    def record(*a: Any, **k: Any) -> str:
        names = ["data", "column", "k" if recipe == "top_k" else "q", "epsilon"]
        if recipe == "partition_selection":
            names = ["data", "column", "epsilon", "delta"]
        if recipe in ("top_k", "partition_selection"):  # the request the shorthand built
            request = a[1]
            seen.update(vars(request), data=a[0], contributions=request.max_contributions, **k)
            return "released"
        seen.update(zip(names, a, strict=False), **k)
        return "released"

    monkeypatch.setattr(importlib.import_module(module), recipe, record)
    bounds = dp.Contributions(values_per_unit=2)
    assert getattr(dp, name)(*args, contributions=bounds, **kwargs) == "released"
    expected = 2 if recipe in ("top_k", "partition_selection") else bounds
    assert seen["data"] == "d" and seen["column"] == "c" and seen["contributions"] == expected
    for key, value in kwargs.items():
        assert seen[key] == value, key
    if name == "most_common":
        assert seen["k"] == 1
    elif len(args) == 3:
        assert seen["k" if name == "top_k" else "q"] == args[2]


def test_best_price_maps_its_bound_to_the_recipe(monkeypatch: pytest.MonkeyPatch) -> None:
    import dpselect.recipes.pricing as pricing

    seen: dict[str, Any] = {}
    monkeypatch.setattr(pricing, "best_price", lambda v, r, **k: seen.update(k, v=v, r=r))
    dp.best_price("d", epsilon=2.0, prices=[1.0], price_step=None, max_price=3.0, n=10,
                  column="bid", confidence=0.9, privacy_unit="u", ledger="l",
                  contributions=dp.Contributions(values_per_unit=4))  # fmt: skip
    assert (seen["v"], seen["ledger"]) == ("d", "l")
    assert seen["r"] == PriceRequest(2.0, [1.0], None, 3.0, 10, "bid", 0.9, "u", 4)


def test_the_quantile_shorthand_forwards_every_argument_to_its_recipe(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``dp.quantile`` builds the request from every argument (the bounds mapped: a shorthand
    that dropped one, or passed a default in its place, fails here) and runs the recipe."""
    import dpselect.recipes.quantiles as quantiles

    seen: dict[str, Any] = {}
    monkeypatch.setattr(quantiles, "quantile", lambda d, r, **k: seen.update(k, d=d, r=r))
    dp.quantile("d", "c", 0.5, epsilon=1.0, bounds=(0, 1), candidates=[0.5], mechanism="tree",
                privacy_unit="u", by="g", groups=["x"], ledger="l",
                contributions=dp.Contributions(values_per_unit=2, groups_per_unit=3))  # fmt: skip
    assert (seen["d"], seen["ledger"]) == ("d", "l")
    assert seen["r"] == QuantileRequest(
        "c", 0.5, 1.0, bounds=(0, 1), candidates=[0.5], mechanism="tree", privacy_unit="u",
        rows=2, by="g", groups=["x"], max_groups=3,
    )  # fmt: skip


def test_what_a_session_adds_is_not_a_shorthand_argument() -> None:
    """A seeded source, a schema, progress or the loose bounds are a session's (or the
    recipe's) to take: the shorthand refuses them by name, as Python does."""
    for extra in ("source", "schema", "progress", "max_contributions", "counts"):
        with pytest.raises(TypeError, match=extra):
            dp.top_k(_visits(10), "site", 1, epsilon=1.0, **{extra: None})


def test_a_grouped_quantile_shorthand_with_private_groups_points_to_the_session() -> None:
    """The shorthand takes no delta: private groups are refused before any charge, naming
    where the delta goes."""
    with pytest.raises(ParameterError, match=r"Session\(data, ...\).quantile"):
        dp.quantile(_visits(50), "minutes", 0.5, epsilon=1.0, bounds=(0, 100), by="country")
    with dp.Session(_visits(300), source=InsecureSeededSource(1)) as session:
        grouped = session.quantile("minutes", 0.5, epsilon=1.0, bounds=(0, 100), by="country",
                                   delta=1e-6)  # fmt: skip
    assert grouped is not None


def test_the_session_progress_reaches_every_quantile(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import dpselect.recipes.quantiles as quantiles

    seen: list[Any] = []
    monkeypatch.setattr(quantiles, "quantile", lambda d, r, **k: seen.append(k["progress"]))

    def follow(percent: float) -> None:
        return None

    with dp.Session(_visits(50), progress=follow) as session:
        session.quantile("minutes", 0.5, epsilon=1.0, bounds=(0, 100))
        session.quantile("minutes", 0.5, epsilon=1.0, bounds=(0, 100), by="country",
                         groups=["fr"])  # fmt: skip
    assert seen == [follow, follow]


def test_the_session_progress_is_every_query_s_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """``Session(progress=...)`` reaches top_k, most_common and partition_selection unless the
    query gives its own reporter."""
    import dpselect.recipes.top_k as top_k_module
    import dpselect.recipes.unknown_domain as unknown_domain

    seen: list[Any] = []
    monkeypatch.setattr(top_k_module, "top_k", lambda d, r, **k: seen.append(k["progress"]))
    monkeypatch.setattr(
        unknown_domain, "partition_selection", lambda d, r, **k: seen.append(k["progress"])
    )

    def follow(percent: float) -> None:
        return None

    def own(percent: float) -> None:
        return None

    with dp.Session(_visits(50), progress=follow) as session:
        session.top_k("site", 2, epsilon=1.0, candidates=list("abc"))
        session.top_k("site", 2, epsilon=1.0, candidates=list("abc"), progress=own)
        session.most_common("site", epsilon=1.0, candidates=list("abc"))
        session.partition_selection("site", epsilon=1.0, delta=1e-6)
    assert seen == [follow, own, follow, follow]
    seen.clear()
    with dp.Session(_visits(50)) as session:
        session.top_k("site", 2, epsilon=1.0, candidates=list("abc"))
    assert seen == [None]
