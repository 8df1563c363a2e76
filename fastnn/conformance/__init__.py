"""fastnn's conformance suite: the checks every backend must pass, shipped with the core.

Run it against an installed backend::

    fastnn conformance --backend NAME [--report PATH]
    pytest -p fastnn.conformance.plugin --pyargs fastnn.conformance --backend NAME

One case per hook of :mod:`fastnn.api.hookspec` (see :mod:`fastnn.conformance.case`);
the harness derives forward, edge-case, gradient, randomised and cross-backend
checks from each. The run ends with a primitive x dtype table and, on request,
a JSON report. A backend's expected failures live in its xfail file
(:mod:`fastnn.conformance.xfail`).
"""
