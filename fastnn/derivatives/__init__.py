"""Derivatives beyond one backward pass, under PyTorch's names and paths.

The tape (:mod:`fastnn.autograd`) sits below the tensor ops, but these tools make
tensors (basis vectors, perturbed inputs, stacked rows), so they live here, one
layer up, and :func:`install` (run by ``import fastnn``) puts them where PyTorch
has them: ``fastnn.autograd.gradcheck``, ``gradgradcheck`` and ``GradcheckError``,
and ``fastnn.autograd.functional.jacobian``, ``hessian``, ``vjp``, ``jvp``,
``hvp``, ``vhp``. The autograd package itself never imports this one.
"""

from fastnn.derivatives.functional import hessian, hvp, jacobian, jvp, vhp, vjp
from fastnn.derivatives.gradcheck import GradcheckError, gradcheck, gradgradcheck

FUNCTIONAL = {"jacobian": jacobian, "hessian": hessian, "vjp": vjp, "jvp": jvp, "hvp": hvp,
              "vhp": vhp}
CHECKS = {"gradcheck": gradcheck, "gradgradcheck": gradgradcheck,
          "GradcheckError": GradcheckError}


def install() -> None:
    """Bind the names above into fastnn.autograd and fastnn.autograd.functional."""
    import fastnn.autograd
    import fastnn.autograd.functional

    for name, fn in FUNCTIONAL.items():
        setattr(fastnn.autograd.functional, name, fn)
    for name, fn in CHECKS.items():
        setattr(fastnn.autograd, name, fn)


__all__ = ["GradcheckError", "gradcheck", "gradgradcheck", "hessian", "hvp", "install",
           "jacobian", "jvp", "vhp", "vjp"]
