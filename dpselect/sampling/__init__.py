"""Randomness and exact samplers (the lowest layer beside ``dpselect.core``).

``noisy_argmax`` / ``noisy_top_k`` rank ideal real-valued noisy keys exactly (certified float
path, arb refinement; see docs/exactness.md); the discrete Laplace and Gaussian samplers are
exact for rational parameters (docs/discrete_sampling.md). Every sampler takes ``source=``:
``None`` means the default private source, :class:`ChaCha20Source` (a ChaCha20 generator keyed
from the operating system, docs/randomness.md; ``source_by_name("os")`` is the OS CSPRNG
itself); :class:`InsecureSeededSource` is for tests and reproducible demos only and is not
private.
"""

from typing import TYPE_CHECKING

from .discrete import sample_bernoulli_exp, sample_discrete_gaussian, sample_discrete_laplace
from .noise import EXPONENTIAL, FAMILIES, GUMBEL, LAPLACE, NoiseFamily, get_family
from .noisy_max import noisy_argmax, noisy_top_k
from .run_counts import (
    sample_bernoulli,
    sample_geometric,
    sample_poisson,
    sample_truncated_negative_binomial,
)
from .source import (
    InsecureSeededSource,
    RandomSource,
    ScriptedSource,
    SystemRandomSource,
    default_source,
    resolve_source,
    source_by_name,
)
from .uniform import LazyUniform

if TYPE_CHECKING:
    from .drbg import ChaCha20Source

__all__ = [
    "EXPONENTIAL",
    "FAMILIES",
    "GUMBEL",
    "LAPLACE",
    "ChaCha20Source",
    "InsecureSeededSource",
    "LazyUniform",
    "NoiseFamily",
    "RandomSource",
    "ScriptedSource",
    "SystemRandomSource",
    "default_source",
    "get_family",
    "noisy_argmax",
    "noisy_top_k",
    "resolve_source",
    "sample_bernoulli",
    "sample_bernoulli_exp",
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
    "sample_geometric",
    "sample_poisson",
    "sample_truncated_negative_binomial",
    "source_by_name",
]


def __getattr__(name: str) -> object:
    # ChaCha20Source imports ``cryptography``: loaded on first use (PEP 562).
    if name == "ChaCha20Source":
        from .drbg import ChaCha20Source

        return ChaCha20Source
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
