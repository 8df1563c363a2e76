"""One primitive, one name, in three places: hook spec, backward rule, conformance case."""

from fastnn.api import hookspec
from fastnn.autograd.rules import RULES
from fastnn.conformance.cases import CASES

# backward rules of core-level ops that are not hooks: moving a tensor between devices,
# the identity that module backward hooks ride on (fastnn/nn/hooks.py), "as_strided", recorded on a
# view written through (fastnn/ops/storage.py), and "conv_transpose2d" (the conv2d_grad_input
# hook run forward, fastnn/ops/conv_transpose.py), and the nodes of custom autograd
# Functions (fastnn/autograd/function.py, rules_custom.py)
CORE_ONLY_RULES = {"transfer", "call_hook", "as_strided", "conv_transpose2d",
                   "lstm_sequence", "gru_sequence", "custom_function",
                   "custom_function_output", "once_differentiable",
                   "select",  # x[1]: the slice hook, then reshape (one view, one node)
                   "clone",  # x * 1 whose node keeps nothing of x (PyTorch's CloneBackward)
                   "evenly",  # median(): an element whose gradient ties share, as PyTorch's
                   "overwrite"}  # zero_/fill_/copy_ on a non-leaf: its history gets zeros


# the cases of hooks; the others check ops composed of primitives (Case.composite)
HOOK_CASES = {name: case for name, case in CASES.items() if not case.composite}


def test_every_hook_has_exactly_one_case():
    hooks = hookspec.HOOKS
    assert len(set(hooks)) == len(hooks)
    missing, stray = sorted(set(hooks) - set(HOOK_CASES)), sorted(set(HOOK_CASES) - set(hooks))
    assert not missing, f"hooks without a conformance case (conformance/cases_*.py): {missing}"
    assert not stray, f"conformance cases of no hook (fastnn/api/hookspec.py): {stray}"


def test_every_op_has_a_composite():
    from fastnn.api import composite

    missing = [name for name in hookspec.OPS if not callable(getattr(composite, name, None))]
    assert not missing, f"ops without a composite in fastnn/api/composite.py: {missing}"


def test_every_hook_spec_is_marked():
    # the lists are read off the marks: a spec function without one is a mistake
    import inspect

    from fastnn.api import hookspec_layers, hookspec_ops, hookspec_optim

    unmarked = [name for module in (hookspec, hookspec_ops, hookspec_layers, hookspec_optim)
                for name, fn in inspect.getmembers(module, inspect.isfunction)
                if fn.__module__ == module.__name__ and name not in hookspec.HOOKS
                and name not in ("backend_probe", "_by_role")]
    assert not unmarked, f"hook specs with neither @primitive nor @op: {unmarked}"


def test_differentiable_cases_are_exactly_the_hooks_with_backward_rules():
    differentiable = {name for name, case in HOOK_CASES.items() if case.differentiable}
    hooks = set(hookspec.HOOKS)
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


def test_composite_cases_name_no_hook():
    composite = {name for name, case in CASES.items() if case.composite}
    assert composite, "no composite op cases registered"
    assert not composite & set(hookspec.HOOKS), "a composite case is named after a hook"
