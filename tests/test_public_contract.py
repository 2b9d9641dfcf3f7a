"""The contract of every public callable: at most 12 parameters, at most 3 positional (the rest
keyword-only), a precise return type (no ``Any``).

It covers every function in ``__all__`` of the package and of its subpackages; classes and
type aliases are not callables of this contract (the session's methods have their own test in
``test_session_front_door.py``).
"""

from __future__ import annotations

import importlib
import inspect
import re
import typing
from collections.abc import Callable

import pytest

MODULES = (
    "dpselect",
    "dpselect.accounting",
    "dpselect.core",
    "dpselect.data",
    "dpselect.mechanisms",
    "dpselect.planning",
    "dpselect.recipes",
    "dpselect.sampling",
    "dpselect.session",
)

#: Named exceptions to the contract (none: every exported callable keeps it).
EXCEPTIONS: set[tuple[str, str]] = set()

MAX_PARAMETERS = 12
MAX_POSITIONAL = 3


def _public_callables() -> list[tuple[str, str]]:
    found = []
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if not callable(obj) or inspect.isclass(obj) or typing.get_origin(obj) is not None:
                continue  # a class or a type alias such as Callable[[float], float]
            found.append((module_name, name))
    return found


PUBLIC = _public_callables()


def _broken_rules(fn: Callable[..., object]) -> list[str]:
    signature = inspect.signature(fn)
    params = list(signature.parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    annotation = signature.return_annotation
    text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
    broken = []
    if len(params) > MAX_PARAMETERS:
        broken.append(f"{len(params)} parameters (at most {MAX_PARAMETERS})")
    if len(positional) > MAX_POSITIONAL:
        broken.append(f"{len(positional)} positional parameters (at most {MAX_POSITIONAL})")
    if annotation is inspect.Signature.empty:
        broken.append("no return annotation")
    elif re.search(r"\bAny\b", text):
        broken.append(f"return type {text} (no Any)")
    return broken


def test_the_modules_export_callables() -> None:
    assert len(PUBLIC) > 100
    assert {module for module, _ in PUBLIC} >= {
        "dpselect",
        "dpselect.accounting",
        "dpselect.core",
        "dpselect.mechanisms",
        "dpselect.recipes",
        "dpselect.sampling",
    }
    assert EXCEPTIONS.issubset(PUBLIC)  # an exception names an exported callable


@pytest.mark.parametrize(
    ("module", "name"),
    [pair for pair in PUBLIC if pair not in EXCEPTIONS],
    ids=[f"{module}.{name}" for module, name in PUBLIC if (module, name) not in EXCEPTIONS],
)
def test_every_public_callable_keeps_the_contract(module: str, name: str) -> None:
    fn = getattr(importlib.import_module(module), name)
    assert _broken_rules(fn) == [], f"{module}.{name}"


def test_the_check_sees_each_broken_rule() -> None:
    def wide(a: int, b: int, c: int, d: int = 0) -> int:
        return a + b + c + d

    def unannotated(a: int):
        return a

    def loose(a: int) -> typing.Any:
        return a

    def many(*, a=0, b=0, c=0, d=0, e=0, f=0, g=0, h=0, i=0, j=0, k=0, m=0, n=0) -> int:
        return 0

    def keyword_only(a: int, b: int, c: int, *, d: int = 0) -> dict[str, int]:
        return {"a": a + b + c + d}

    assert _broken_rules(wide) == ["4 positional parameters (at most 3)"]
    assert _broken_rules(unannotated) == ["no return annotation"]
    assert _broken_rules(loose) == ["return type typing.Any (no Any)"]
    assert _broken_rules(many) == ["13 parameters (at most 12)"]
    assert _broken_rules(keyword_only) == []
