"""At least 80% of the public functions and methods document their parameters (numpydoc).

Public: a name in its module's ``__all__`` (or, without one, a name without a leading
underscore defined there), in a module whose path has no private part; for a public class,
its methods without a leading underscore. Counted: those with at least one parameter besides
``self``/``cls``; documented: the docstring has a ``Parameters`` section.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable, Iterator
from typing import Any

import dpselect

#: The share of public callables with a ``Parameters`` section that the suite holds.
MINIMUM_SHARE = 0.80


def public_callables() -> Iterator[tuple[str, Callable[..., Any]]]:
    for info in pkgutil.walk_packages(dpselect.__path__, "dpselect."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional extra (PySpark) that is not installed
            continue
        names = getattr(module, "__all__", None)
        if names is None:
            names = [n for n in vars(module) if not n.startswith("_")]
        for name in names:
            obj = getattr(module, name, None)
            if getattr(obj, "__module__", None) != module.__name__:
                continue
            if inspect.isfunction(obj):
                yield f"{module.__name__}.{name}", obj
            elif inspect.isclass(obj):
                for attr, fn in vars(obj).items():
                    if inspect.isfunction(fn) and not attr.startswith("_"):
                        yield f"{module.__name__}.{name}.{attr}", fn


def _has_parameters(fn: Callable[..., Any]) -> bool:
    params = [p for p in inspect.signature(fn).parameters if p not in ("self", "cls")]
    return bool(params)


def test_most_public_callables_document_their_parameters() -> None:
    counted = [(name, fn) for name, fn in public_callables() if _has_parameters(fn)]
    missing = [name for name, fn in counted
               if "Parameters\n----------" not in (inspect.getdoc(fn) or "")]  # fmt: skip
    share = 1 - len(missing) / len(counted)
    assert len(counted) > 300  # the walk found the package
    assert share >= MINIMUM_SHARE, (f"{share:.0%} of {len(counted)} documented; first missing: "
                                    f"{missing[:20]}")  # fmt: skip
