"""The newer optimizer steps' calls, shared by the CUDA host tests: per hook, which of its
state lists must be positive (a second moment) or may be None, and the arguments after
the learning rates and weight decays. The NumPy backend is the reference."""

OPTIM_CASES = [
    # (hook, state kinds: "+" positive, "n" any, "-" None, the trailing arguments)
    ("amsgrad_step", "n++", (0.9, 0.99, 1e-8, 3, False)),
    ("amsgrad_step", "n++", (0.9, 0.99, 1e-8, 1, True)),
    ("rmsprop_momentum_step", "+nn", (0.9, 1e-6, 0.8, True)),
    ("rmsprop_momentum_step", "+-n", (0.9, 1e-6, 0.8, False)),
    ("rmsprop_momentum_step", "+n-", (0.9, 1e-6, 0.0, True)),
    ("adagrad_step", "+", (1e-10,)),
    ("radam_step", "n+", (0.9, 0.999, 1e-8, 2, False)),  # rho_t <= 5: no adaptive term
    ("radam_step", "n+", (0.9, 0.999, 1e-8, 9, True)),
    ("nadam_step", "n+", (0.9, 0.999, 1e-8, 3, 0.45, 0.46, 0.085, False)),
    ("nadam_step", "n+", (0.9, 0.999, 1e-8, 3, 0.45, 0.46, 0.085, True)),
    ("adadelta_step", "++", (0.9, 1e-6)),
    ("adamax_step", "n+", (0.9, 0.99, 1e-8, 3)),
    ("adamax_step", "n+", (0.2, 0.9, 1e-6, 1)),  # lerp from the gradient's side
    ("asgd_step", "n", (1e-2, 1.0)),  # the average copies the parameter
    ("asgd_step", "n", (1e-2, 0.25)),
]

# rprop_step(params, grads, prevs, step_sizes, *RPROP_ARGS): no lrs or weight decays
RPROP_ARGS = (0.5, 1.2, 0.02, 1.0)


def case_id(case) -> str:
    return f"{case[0]}-{case[1]}-{'-'.join(str(a) for a in case[2][-2:])}"


def states(kinds, make, positive):
    """One state list per kind: ``make(j)`` arrays, ``positive(j)`` ones, or Nones."""
    out = []
    for j, kind in enumerate(kinds):
        out.append(None if kind == "-" else positive(j) if kind == "+" else make(j))
    return out
