"""A stage of a release: one mechanism, its share of the budget, its scale, its memory.

A release runs in one or more stages (a private choice of a contribution bound, a private
selection of groups, then the mechanism in each group). The planners of this package return
every stage of a release before anything is charged; :func:`check_stages` proves, before the
charge, that the stages together cost no more than the release is charged, by simple adaptive
composition (seed 002, "Theorem (Simple adaptive composition)"): a stage that one unit
reaches ``times`` times (one per group it is in) counts ``times`` over. It also refuses a plan
whose stage would hold more memory at once, from public sizes, than the machine has
(:func:`machine_memory`): a public fact, refused before anything is charged.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..core.errors import ParameterError
from ..core.jsonvalues import json_dict

__all__ = ["Stage", "check_stages", "machine_memory", "memory_text", "stages_lines"]


@dataclass(frozen=True)
class Stage:
    """One stage of a release, decided from public facts before the charge.

    Attributes
    ----------
    name : str
        What the stage does ("choose values_per_unit", "select groups", "top-k").
    mechanism : str
        The mechanism it runs ("permute_and_flip", "generalized exponential", ...).
    epsilon, delta : float
        Its guarantee for one privacy unit added or removed, as calibrated (rounded outward:
        the stage's own privacy map).
    times : int
        How many runs of this stage one unit can reach (each group a unit is in runs it once);
        its cost counts ``times`` over.
    scale : float or None
        The noise scale it is calibrated to, where it has one.
    threshold : float or None
        The threshold a count must pass, where it has one.
    memory : int or None
        The bytes it holds at once, from public sizes (the candidates, the levels, the grid),
        where the engine does not stream it.
    """

    name: str
    mechanism: str
    epsilon: float
    delta: float = 0.0
    times: int = 1
    scale: float | None = None
    threshold: float | None = None
    memory: int | None = None

    def __post_init__(self) -> None:
        if not self.epsilon >= 0 or not self.delta >= 0 or int(self.times) < 1:
            raise ValueError(f"a stage's cost must be non-negative and run at least once: {self}")

    def to_dict(self) -> dict[str, Any]:
        """The stage as strict JSON values.

        Returns
        -------
        dict
            Every attribute.
        """
        return json_dict({
            "name": self.name, "mechanism": self.mechanism, "epsilon": self.epsilon,
            "delta": self.delta, "times": self.times, "scale": self.scale,
            "threshold": self.threshold, "memory": self.memory,
        })  # fmt: skip

    def line(self) -> str:
        """The stage in one line, as :meth:`~dpselect.planning.plan.Plan.explain` prints it.

        Returns
        -------
        str
            The name, the mechanism and every number it has.
        """
        parts = [f"epsilon = {self.epsilon:.6g}"]
        if self.delta:
            parts.append(f"delta = {self.delta:.6g}")
        if self.times > 1:
            parts[-1] += f" in each of up to {self.times} runs per unit"
        if self.scale is not None:
            parts.append(f"scale = {self.scale:.6g}")
        if self.threshold is not None:
            parts.append(f"threshold = {self.threshold:.6g}")
        if self.memory is not None:
            parts.append(f"memory = {memory_text(self.memory)}")
        return f"{self.name}: {self.mechanism}, " + ", ".join(parts)


def memory_text(n: int) -> str:
    """``n`` bytes as people read them (``"80 kB"``, ``"1.5 GB"``).

    Parameters
    ----------
    n : int
        A number of bytes.

    Returns
    -------
    str
        Three significant digits and a decimal unit.
    """
    value = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000:
            return f"{value:.3g} {unit}"
        value /= 1000
    return f"{value:.3g} TB"


def machine_memory() -> int | None:
    """The machine's physical memory in bytes (a public fact), or ``None`` where the system
    does not say.

    Returns
    -------
    int or None
        ``SC_PHYS_PAGES * SC_PAGE_SIZE``.
    """
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return int(pages) * int(size) if pages > 0 and size > 0 else None


def check_stages(
    stages: Iterable[Stage], epsilon: float, delta: float, *, memory: int | None = None
) -> None:
    """Before the charge: the stages together cost at most ``(epsilon, delta)``, exactly, and
    none holds more memory at once than the machine has.

    Parameters
    ----------
    stages : iterable of Stage
        The release's stages (each counted ``times`` over).
    epsilon, delta : float
        What the release is charged.
    memory : int, optional
        The bytes a stage may hold (default :func:`machine_memory`; no check where unknown).

    Raises
    ------
    ValueError
        When the stages cost more than the charge (a planner's error, never the data's: the
        charge would understate the loss, so nothing is charged).
    ParameterError
        When a stage would hold more memory than ``memory``, from public sizes (the candidates,
        the groups, the levels): nothing is charged.
    """
    staged = list(stages)
    if not staged:
        return
    limit = machine_memory() if memory is None else memory
    for stage in staged:
        if limit is not None and stage.memory is not None and stage.memory > limit:
            raise ParameterError(
                f"the stage {stage.name!r} ({stage.mechanism}) would hold "
                f"{memory_text(stage.memory)} at once, from the public sizes of the query (the "
                f"candidates, groups or levels), more than the {memory_text(limit)} of memory "
                "here: fewer candidates, groups or levels; nothing was charged"
            )
    total_e = sum((Fraction(s.epsilon) * s.times for s in staged), Fraction(0))
    total_d = sum((Fraction(s.delta) * s.times for s in staged), Fraction(0))
    if total_e > Fraction(epsilon) or total_d > Fraction(delta):
        raise ValueError(
            f"a plan's stages cost epsilon {float(total_e)!r}, delta {float(total_d)!r}, more "
            f"than its charge ({epsilon!r}, {delta!r}): nothing was charged"
        )


def stages_lines(stages: Iterable[Stage]) -> list[str]:
    """The stages as numbered lines for :meth:`~dpselect.planning.plan.Plan.explain`.

    Parameters
    ----------
    stages : iterable of Stage
        The release's stages, in the order they run.

    Returns
    -------
    list of str
        ``"  stages:"`` and one indented line per stage (empty without stages).
    """
    staged = list(stages)
    if not staged:
        return []
    return ["  stages:"] + [f"    {i}. {s.line()}" for i, s in enumerate(staged, 1)]
