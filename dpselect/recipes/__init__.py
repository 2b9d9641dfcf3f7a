"""Application recipes of the exponential mechanism (seeds 002, 003): the recipes layer."""

__all__: list[str] = []
