"""One result base class: every recipe result has to_dict, to_frame, str and an HTML view."""

from __future__ import annotations

import dataclasses
from html import escape

import pytest

import dpselect as dp
from dpselect.recipes import BoundsChoice, ContributionChoice, PreviewResult
from dpselect.recipes.result import Result
from dpselect.recipes.top_k import TopKResult
from dpselect.sampling import InsecureSeededSource

RESULTS = (
    "TopKResult", "KeysResult", "QuantileResult", "PriceResult", "HypothesisResult",
    "SelectionResult", "TuneResult", "PreviewResult", "TopKPreview",
)  # fmt: skip


@pytest.mark.parametrize("name", RESULTS)
def test_every_result_derives_from_the_base(name):
    cls = getattr(dp, name)
    assert issubclass(cls, Result) and dataclasses.is_dataclass(cls)
    assert "to_dict" not in vars(cls) and "__str__" not in vars(cls)


def test_choices_derive_from_the_base():
    assert issubclass(BoundsChoice, Result) and issubclass(ContributionChoice, Result)


def test_top_k_frame_and_html():
    pd = pytest.importorskip("pandas")
    with dp.Session(pd.Series([1, 1, 2, 3]), source=InsecureSeededSource(0)) as session:
        r = session.top_k("value", 2, epsilon=1.0, candidates=[1, 2, 3], counts=True)
    assert isinstance(r, TopKResult)
    frame = r.to_frame()
    assert list(frame.columns) == ["rank", "candidate", "noisy_count", "below_noise"]
    assert frame["candidate"].tolist() == r.to_dict()["candidates"]
    html = r._repr_html_()
    assert html.startswith("<pre>") and "<table" in html and escape(str(r).splitlines()[0]) in html


def test_preview_frame_has_one_row_per_epsilon():
    pytest.importorskip("pandas")
    p = dp.preview([10, 8, 1], epsilon=[0.5, 1.0])
    assert isinstance(p, PreviewResult)
    assert len(p.to_frame()) == 2


def test_to_frame_without_pandas_names_the_extra(monkeypatch):
    import sys

    import dpselect as dp
    from dpselect.core.errors import DPSelectError
    from dpselect.sampling import InsecureSeededSource

    result = dp.select(["a", "b"], lambda d, c: d.count(c), list("aab"), epsilon=1.0, sensitivity=1,
                       source=InsecureSeededSource(1))  # fmt: skip
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    with pytest.raises(DPSelectError, match=r"dpselect\[pandas\]"):
        result.to_frame()
