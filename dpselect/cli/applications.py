"""CLI subcommands of the application recipes (quantile, price, preview): see issue 7."""

from __future__ import annotations

import click

__all__ = ["register"]


def register(cli: click.Group) -> None:
    """Add the application subcommands to the ``dpselect`` group."""
