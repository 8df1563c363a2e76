"""PyTorch's profiler (``torch.profiler``) for fastnn: where a step's time goes, hook call
by hook call.

::

    with fnn.profiler.profile(record_shapes=True) as prof:
        with fnn.profiler.record_function("train_step"):
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10))

Every backend hook call made in the block is an event (its hook name, its host wall time,
its arguments' shapes with ``record_shapes``, the user's frames with ``with_stack``), as
are ``record_function`` ranges, the backward pass (``backward``) and each backward rule
(``MatmulBackward0``...): the calls inside one are its children, so its self time is
what they leave. On a device backend that queues work (opencl, cuda) a call's time is
the time to launch it, unless the backend waits. The legacy ``torch.autograd.profiler``
names are ``fnn.autograd.profiler`` (:mod:`fastnn.profiler.legacy`). See
docs/profiling.md.
"""

from fastnn.profiler.events import EventList, FunctionEvent, FunctionEventAvg
from fastnn.profiler.profiler import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    supported_activities,
    tensorboard_trace_handler,
)


def kineto_available() -> bool:
    """False: fastnn's profiler is its own, not PyTorch's Kineto."""
    return False


__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "ProfilerAction",
           "ProfilerActivity", "kineto_available", "profile", "record_function", "schedule",
           "supported_activities", "tensorboard_trace_handler"]
