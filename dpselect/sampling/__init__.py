"""Randomness and exact samplers (the lowest layer beside ``dpselect.core``).

``noisy_argmax`` / ``noisy_top_k`` rank ideal real-valued noisy keys exactly (certified float
path, arb refinement; see docs/exactness.md); the discrete Laplace and Gaussian samplers are
exact for rational parameters (docs/discrete_sampling.md). Every sampler takes ``source=``:
``None`` means the operating system's CSPRNG; :class:`InsecureSeededSource` is for tests and
reproducible demos only and is not private.
"""

from .discrete import sample_bernoulli_exp, sample_discrete_gaussian, sample_discrete_laplace
from .noise import EXPONENTIAL, FAMILIES, GUMBEL, LAPLACE, NoiseFamily, get_family
from .noisy_max import noisy_argmax, noisy_top_k
from .source import (
    InsecureSeededSource,
    RandomSource,
    ScriptedSource,
    SystemRandomSource,
    default_source,
    resolve_source,
)
from .uniform import LazyUniform

__all__ = [
    "EXPONENTIAL",
    "FAMILIES",
    "GUMBEL",
    "LAPLACE",
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
    "sample_bernoulli_exp",
    "sample_discrete_gaussian",
    "sample_discrete_laplace",
]
