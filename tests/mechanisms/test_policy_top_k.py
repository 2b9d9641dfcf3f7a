"""Policy set union then the top k (dpselect/mechanisms/policy_top_k.py): its map and law."""

from __future__ import annotations

import pytest

from dpselect.sampling import InsecureSeededSource


def test_policy_top_k_map_is_the_sum_of_its_stages():
    """The map is the adaptive composition of the two stages, recomputed here independently
    in exact fractions from the stages' own calibrations, and within the target."""
    from fractions import Fraction

    from dpselect.mechanisms.policy_top_k import make_policy_top_k, policy_top_k_plan
    from dpselect.mechanisms.set_union import make_policy_set_union
    from dpselect.planning.top_k_plan import plan_top_k as _plan

    for k, eps, delta, c in [(10, 1.0, 1e-6, 5), (3, 0.5, 1e-8, 2), (20, 2.0, 1e-6, 10)]:
        plan = policy_top_k_plan(k, eps, delta, c)
        m = make_policy_top_k(plan, top_k=_plan)
        e1, d1 = make_policy_set_union(plan.set_union).map(1)
        assert Fraction(e1) <= Fraction(eps) / 2 and Fraction(d1) <= Fraction(delta) / 2
        got = m.map(1)
        assert Fraction(got[0]) >= Fraction(e1) + Fraction(plan.epsilon_top_k)
        assert Fraction(got[1]) >= Fraction(d1) + Fraction(plan.delta_top_k)
        assert got[0] <= eps * (1 + 1e-15) and got[1] <= delta * (1 + 1e-15)
        for n in (1, k, 5 * k):  # every top-k stage fits its share, whatever |S| is
            top = _plan(n, min(k, n), plan.epsilon_top_k, plan.delta_top_k, "auto", False, c,
                        None)  # fmt: skip
            assert top.epsilon <= plan.epsilon_top_k and top.delta <= plan.delta_top_k
        assert m.map(0) == (0.0, 0.0)
        with pytest.raises(Exception, match="one person"):
            m.map(2)


def test_policy_top_k_returns_released_values_by_count():
    from dpselect.mechanisms.policy_top_k import make_policy_top_k, policy_top_k_plan
    from dpselect.planning.top_k_plan import plan_top_k

    plan = policy_top_k_plan(3, 2.0, 1e-6, 2)
    persons = [["a", "b"]] * 300 + [["c"]] * 200 + [["d", "a"]] * 100 + [["e"]] * 2
    values, counts = make_policy_top_k(
        plan, top_k=plan_top_k, counts=True, source=InsecureSeededSource(4)
    )(persons)
    assert values == ["a", "b", "c"]
    assert counts is not None and all(
        abs(x - y) < 40 for x, y in zip(counts, [400, 300, 200], strict=True)
    )
    assert make_policy_top_k(plan, top_k=plan_top_k, source=InsecureSeededSource(4))([]) == (
        [],
        None,
    )
