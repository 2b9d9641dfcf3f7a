"""dpselect: differentially private selection with exact sampling and honest accounting.

Layers (docs/architecture.md), each importing only those below it:

- recipes: :func:`top_k`, :func:`most_common` (the main job), :func:`quantile`,
  :func:`best_price`, :func:`select_hypothesis`, :func:`select`, :func:`preview`, and the
  ``dpselect`` command;
- ``dpselect.data``: data files and frames to score vectors (DuckDB);
- ``dpselect.mechanisms`` (constructors with privacy maps) and ``dpselect.accounting``
  (composition, conversions, the budget ledger);
- ``dpselect.core`` (domains, metrics, measures, measurements) and ``dpselect.sampling``
  (randomness and exact samplers).

The core vocabulary, the mechanism constructors and the recipes are re-exported here. They
are loaded on first use (PEP 562), so ``import dpselect`` and the ``dpselect`` command start
fast: ``dpselect.top_k``, ``from dpselect import make_laplace`` and ``from dpselect import *``
work as if everything were imported eagerly.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:  # the eager imports, for type checkers and readers
    from . import accounting, core, data, mechanisms, recipes, sampling
    from .accounting import Ledger
    from .api import TopKResult, most_common, top_k
    from .core import *  # noqa: F403
    from .core import __all__ as _core_all
    from .mechanisms import *  # noqa: F403
    from .mechanisms import __all__ as _mechanisms_all
    from .recipes import *  # noqa: F403
    from .recipes import __all__ as _recipes_all
    from .recipes.preview import TopKPreview, preview_top_k
    from .recipes.unknown_domain import KeysResult, partition_selection

    __all__ = [
        *_core_all,
        *_mechanisms_all,
        *_recipes_all,
        "KeysResult",
        "Ledger",
        "TopKPreview",
        "TopKResult",
        "accounting",
        "core",
        "data",
        "mechanisms",
        "most_common",
        "partition_selection",
        "preview_top_k",
        "recipes",
        "sampling",
        "top_k",
    ]

_SUBPACKAGES = ("accounting", "core", "data", "mechanisms", "recipes", "sampling")
_NAMED = {
    "Ledger": "accounting",
    "TopKResult": "api",
    "most_common": "api",
    "top_k": "api",
    "KeysResult": "recipes.unknown_domain",
    "partition_selection": "recipes.unknown_domain",
    "TopKPreview": "recipes.preview",
    "preview_top_k": "recipes.preview",
}
#: Packages whose whole ``__all__`` is re-exported, later ones winning (as the star imports did).
_STARRED = ("recipes", "mechanisms", "core")


def _module(name: str) -> Any:
    return importlib.import_module(f"{__name__}.{name}")


def _public_names() -> list[str]:
    names: list[str] = []
    for pkg in reversed(_STARRED):
        names.extend(_module(pkg).__all__)
    names.extend(["Ledger", "TopKResult", *_SUBPACKAGES, "most_common", "top_k"])
    names.extend(["KeysResult", "TopKPreview", "partition_selection", "preview_top_k"])
    return names


def __getattr__(name: str) -> Any:
    if name == "__all__":
        value: Any = _public_names()
    elif name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    elif name in _SUBPACKAGES:
        value = _module(name)
    elif name in _NAMED:
        value = getattr(_module(_NAMED[name]), name)
    else:
        for pkg in _STARRED:
            module = _module(pkg)
            if name in module.__all__:
                value = getattr(module, name)
                break
        else:  # a submodule such as ``dpselect.api``, as after the eager imports
            if importlib.util.find_spec(f"{__name__}.{name}") is None:
                raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
            value = _module(name)
    globals()[name] = value  # later look-ups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_public_names()))
