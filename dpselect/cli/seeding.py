"""The ``--insecure-seed`` option's meaning, shared by every subcommand."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from ..sampling.source import RandomSource

__all__ = ["source_from_seed"]


def source_from_seed(seed: int | None) -> RandomSource | None:
    """``None`` (the CSPRNG) without a seed; with one, a seeded source and a NOT-private warning."""
    if seed is None:
        return None
    click.echo("warning: --insecure-seed makes the result reproducible and NOT private", err=True)
    from ..sampling.source import InsecureSeededSource  # NumPy: only when used

    return InsecureSeededSource(seed)
