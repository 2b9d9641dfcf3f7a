"""The ``--insecure-seed`` option's meaning, shared by every subcommand."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from ..sampling.source import RandomSource

__all__ = ["source_from_seed"]


def source_from_seed(seed: int | None) -> RandomSource | None:
    """``None`` (the CSPRNG) without a seed; with one, a seeded source and a NOT-private warning.

    Parameters
    ----------
    seed : int or None
        The ``--insecure-seed`` value; ``None`` when the option was not given.

    Returns
    -------
    RandomSource or None
        ``None`` (the recipes then draw from the operating system's CSPRNG), or an
        :class:`~dpselect.sampling.source.InsecureSeededSource` seeded with ``seed``; the
        warning is printed to standard error.
    """
    if seed is None:
        return None
    click.echo("warning: --insecure-seed makes the result reproducible and NOT private", err=True)
    from ..sampling.source import InsecureSeededSource  # NumPy: only when used

    return InsecureSeededSource(seed)
