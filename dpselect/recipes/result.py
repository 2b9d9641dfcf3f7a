"""One base class for the recipes' results: ``to_dict()``, ``to_frame()``, text and HTML.

Every recipe returns a frozen dataclass derived from :class:`Result`. A subclass states what it
holds and writes two hooks: ``_text()`` (the readable report ``str(result)`` prints) and, where
the JSON form is not the dataclass' fields as they are, ``_dict()``. ``_rows()`` gives the rows
of :meth:`Result.to_frame` (one row of the whole result unless a subclass lists its items).
"""

from __future__ import annotations

import html
from dataclasses import asdict, is_dataclass
from typing import Any

from ..core.jsonvalues import json_dict
from ..planning.contributions import contributions_line

__all__ = ["Result"]


class Result:
    """The base of every recipe's result (a frozen dataclass): one interface to read it.

    Methods
    -------
    to_dict()
        A JSON-ready dictionary (what ``--json`` prints on the command line).
    to_frame()
        A pandas ``DataFrame``: one row per released item where the result lists items
        (candidates, quantiles, keys, preview rows), else one row.
    str(result)
        The readable report: the released values, the privacy cost and the accuracy.

    In a notebook the result shows as an HTML table of :meth:`to_frame` under its report.
    """

    __slots__ = ()

    def _dict(self) -> dict[str, Any]:
        """The result as a dictionary before JSON conversion (the dataclass' fields)."""
        assert is_dataclass(self)
        return asdict(self)

    def _text(self) -> str:
        """The readable report (subclasses write it)."""
        return repr(self)

    def _rows(self) -> list[dict[str, Any]]:
        """The rows of :meth:`to_frame` (one row of the whole result by default)."""
        return [self.to_dict()]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dictionary of the result.

        Returns
        -------
        dict
            Plain ``str``/``int``/``float``/``bool``/``None``, lists and dictionaries only.
        """
        return json_dict(self._dict())

    def to_frame(self) -> Any:
        """The result as a pandas ``DataFrame`` (pandas is imported on first use).

        Returns
        -------
        pandas.DataFrame
            One row per released item, or one row for the whole result.
        """
        try:
            import pandas as pd
        except ImportError:  # optional: the base install reads frames without it
            from ..core.errors import DPSelectError

            raise DPSelectError(
                "to_frame needs pandas: pip install 'dpselect[pandas]' (or pandas)"
            ) from None
        return pd.DataFrame(self._rows())

    def rules_line(self) -> str:
        """The row rules that applied to the input, as one line (``""`` when none are
        recorded): which rows count for nothing, never how many (:mod:`dpselect.data.row_rules`)."""
        rules = getattr(self, "parameters", {}).get("row_rules") or []
        return "rows read: " + "; ".join(rules) if rules else ""

    def contributions_line(self) -> str:
        """Whom the release protects and the contribution bounds it was made at, as one line
        (``""`` without a privacy unit, or for a result that states its bounds itself): the
        :class:`~dpselect.Contributions` the recorded parameters stand for."""
        parameters = getattr(self, "parameters", {}) or {}
        bounds = contributions_line(parameters)
        if not bounds:
            return ""
        unit = parameters["privacy_unit"]
        return f"privacy unit: {unit!r} (epsilon protects all the rows of one unit); {bounds}"

    def __str__(self) -> str:
        lines = [line for line in (self.contributions_line(), self.rules_line()) if line]
        return "\n".join([self._text(), *lines])

    def _repr_html_(self) -> str:
        """The notebook view: the report, then the items as a table when pandas is present."""
        report = f"<pre>{html.escape(self._text())}</pre>"
        try:
            table: str = self.to_frame().to_html(index=False, escape=True)
        except ImportError:  # pandas is optional: the report alone
            return report
        return report + table
