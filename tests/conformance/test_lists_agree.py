"""One primitive, one name, in three places: hook spec, backward rule, conformance case."""

from fastnn.api import hookspec
from fastnn.autograd.rules import RULES
from fastnn.conformance.cases import CASES

# backward rules of core-level ops that are not hooks: moving a tensor between devices,
# and F.linear (a tape node of its own, computed with matmul and transpose)
CORE_ONLY_RULES = {"transfer", "linear"}


def test_every_hook_has_exactly_one_case():
    hooks = hookspec.PRIMITIVES + hookspec.FUSED
    assert len(set(hooks)) == len(hooks)
    assert sorted(CASES) == sorted(hooks)


def test_differentiable_cases_are_exactly_the_hooks_with_backward_rules():
    differentiable = {name for name, case in CASES.items() if case.differentiable}
    hooks = set(hookspec.PRIMITIVES + hookspec.FUSED)
    assert differentiable == set(RULES) & hooks
    # a rule for something that is not a hook must be a deliberate, listed exception
    assert set(RULES) - hooks == CORE_ONLY_RULES


def test_differentiable_cases_declare_an_analytic_gradient():
    for name, case in CASES.items():
        if case.differentiable:
            assert case.grad_ref is not None, name
            assert not case.custom, name


def test_every_run_style_case_has_samples_edges_and_a_random_generator():
    for name, case in CASES.items():
        if case.custom:
            continue
        assert case.samples is not None and case.ref is not None, name
        assert case.edges is not None, name
        assert case.random is not None, name
