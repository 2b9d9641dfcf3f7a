"""``dpselect.mechanisms`` exports every public mechanism constructor.

Every module of the package is walked (``pkgutil``); each public module-level function whose
name starts with ``make_`` and that the module defines itself (not one it imports) must be in
``dpselect.mechanisms.__all__`` and be the very object the package exposes under that name.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import dpselect.mechanisms


def _constructors() -> dict[str, object]:
    """name -> function for every ``make_*`` defined at the top level of a mechanisms module."""
    found: dict[str, object] = {}
    for info in pkgutil.iter_modules(dpselect.mechanisms.__path__):
        module = importlib.import_module(f"{dpselect.mechanisms.__name__}.{info.name}")
        for name, fn in vars(module).items():
            if (
                name.startswith("make_")
                and inspect.isfunction(fn)
                and fn.__module__ == module.__name__
            ):
                assert name not in found, f"{name} is defined in two modules"
                found[name] = fn
    return found


def test_the_walk_finds_the_constructors():
    """The walk sees modules outside ``__init__``'s imports (so it can fail)."""
    found = _constructors()
    for name in ("make_laplace", "make_policy_top_k", "make_joint_quantiles", "make_random_run"):
        assert name in found


def test_every_public_constructor_is_exported():
    package = dpselect.mechanisms
    found = _constructors()
    missing = sorted(set(found) - set(package.__all__))
    assert not missing, f"not in dpselect.mechanisms.__all__: {missing}"
    for name, fn in found.items():
        assert getattr(package, name, None) is fn, name


def test_all_is_sorted_and_resolves():
    names = dpselect.mechanisms.__all__
    assert names == sorted(names)
    assert len(names) == len(set(names))
    for name in names:
        assert hasattr(dpselect.mechanisms, name), name
