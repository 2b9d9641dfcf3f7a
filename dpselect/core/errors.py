"""The error hierarchy of dpselect.

Every error names the argument at fault and the rule it broke. Errors are raised only from
public facts (parameters, domains, metrics, schema); a mechanism never raises on the private
data it is given (seed 001, postcondition 1: data-independent runtime errors).
"""

from __future__ import annotations

__all__ = [
    "BudgetExceeded",
    "CalibrationError",
    "ChainError",
    "DPSelectError",
    "DataError",
    "DomainError",
    "LedgerError",
    "MeasureError",
    "MetricError",
    "ParameterError",
    "PrivacyBudgetExceeded",
    "PrivacyMapError",
    "given",
]

#: The longest repr an error message quotes in full.
_SHORT = 60


def given(value: object) -> str:
    """``value`` as an error message quotes it: short. A column object (a pandas, polars or
    Spark column, a NumPy array) is named by its type and name, never printed (its rows are
    the private data, and a message is one line); any other repr is cut at 60 characters.

    Parameters
    ----------
    value : object
        The argument at fault.

    Returns
    -------
    str
        Its ``repr`` when at most 60 characters; else the first 57 characters, ``...`` and
        its type name; or, for an object with ``__len__`` and ``dtype`` (or a Spark column),
        a label naming its type and name.
    """
    kind = type(value)
    name = getattr(value, "name", None)
    if hasattr(value, "__len__") and hasattr(value, "dtype"):
        label = f"a {kind.__module__.split('.')[0]} {kind.__name__}"
        return label + (f" named {name!r}: pass the name, {name!r}" if isinstance(name, str)
                        else " (pass a column's name)")  # fmt: skip
    if kind.__name__ == "Column" and "spark" in kind.__module__:
        return "a Spark Column (pass a column's name)"
    text = repr(value)
    return text if len(text) <= _SHORT else f"{text[: _SHORT - 3]}... (a {kind.__name__})"


class DPSelectError(Exception):
    """Base class of every error raised by dpselect."""


class ParameterError(DPSelectError, ValueError):
    """A public parameter (scale, epsilon, k, optimize, ...) breaks its rule."""


class DomainError(DPSelectError, ValueError):
    """A domain is malformed, or a value or domain does not fit the one required."""


class MetricError(DPSelectError, ValueError):
    """A metric does not fit the domain or the mechanism it is used with."""


class MeasureError(DPSelectError, ValueError):
    """A privacy measure does not fit, or a distance is not of the measure's form."""


class ChainError(DPSelectError, ValueError):
    """Two pieces cannot be chained: their domains or metrics do not match."""


class PrivacyMapError(DPSelectError, ValueError):
    """A privacy or stability map cannot be evaluated at the given input distance."""


class CalibrationError(DPSelectError, ValueError):
    """No parameter in the searched range meets the privacy target."""


class DataError(DPSelectError, ValueError):
    """A data source cannot be used: missing file, unreadable format, missing column.

    Raised only from public facts (paths, formats, schema), never from the private rows.
    """


class BudgetExceeded(DPSelectError):
    """A charge would take the spent privacy budget above its limit; nothing was charged."""


PrivacyBudgetExceeded = BudgetExceeded


class LedgerError(DPSelectError):
    """The privacy ledger is missing, foreign, corrupted or could not record a charge."""
