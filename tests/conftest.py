"""Test-suite settings shared by every test module.

Hypothesis' per-example deadline (200 ms by default) measures wall-clock time, which on a
loaded 2-core CI machine fails tests whose logic passed ("DeadlineExceeded ... unreliable
results"). Speed is measured by the scripts under bench/, never by tests, so the deadline is
off for the whole suite; the number of examples is unchanged.
"""

from hypothesis import settings

settings.register_profile("dpselect", deadline=None)
settings.load_profile("dpselect")
