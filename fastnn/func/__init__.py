"""PyTorch's ``torch.func``: composable function transforms on fastnn's tape.

- :func:`functional_call`: run a module with other tensors as its parameters and buffers;
  :func:`stack_module_state` stacks several modules' for ensembling with vmap.
- :func:`grad`, :func:`grad_and_value`, :func:`vjp`, :func:`jvp`, :func:`linearize`:
  derivatives of a function (reverse mode; ``jvp`` by the double-vjp trick).
- :func:`jacrev`, :func:`jacfwd`, :func:`hessian`: Jacobians and Hessians, one backward
  pass per output element.
- :func:`vmap`: map a function over a dimension of its inputs; a loop over that dimension,
  not batching rules (see :mod:`fastnn.func.batching`).
- :func:`replace_all_batch_norm_modules_`: batch norm layers without running statistics.

They compose (``grad(grad(f))``, ``jacrev(grad(f))``, ``vmap(grad(f))``,
``vmap(jacrev(f))``) and take PyTorch's arguments. What differs: fastnn has one tape
instead of PyTorch's transform levels, so a transform's results stay differentiable
exactly when the function's output depends on a tensor that requires grad other than the
transform's own inputs (the caller's inputs that require grad, a captured parameter, an
enclosing transform's inputs); see :mod:`fastnn.func.tracing`.
"""

from fastnn.func.batch_norm import replace_all_batch_norm_modules_
from fastnn.func.batching import vmap
from fastnn.func.jacobians import hessian, jacfwd, jacrev
from fastnn.func.reparametrize import functional_call, stack_module_state
from fastnn.func.reverse import grad, grad_and_value, jvp, linearize, vjp

__all__ = ["functional_call", "stack_module_state", "grad", "grad_and_value", "vjp", "jvp",
           "linearize", "jacrev", "jacfwd", "hessian", "vmap", "replace_all_batch_norm_modules_"]
