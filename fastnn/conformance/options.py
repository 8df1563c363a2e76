"""The conformance suite's light pytest entry point (registered under ``pytest11``).

It only adds the suite's options, so that ``pytest --pyargs fastnn.conformance
--backend NAME`` works from any directory; the suite's plugin itself
(:mod:`fastnn.conformance.plugin`, which imports NumPy and the cases) is
loaded only when ``--backend`` is given.
"""

from __future__ import annotations

PLUGIN = "fastnn.conformance.plugin"
DEFAULT_EXAMPLES = 10


def add_options(parser) -> None:
    """The suite's command-line options."""
    group = parser.getgroup("fastnn conformance")
    group.addoption("--backend", default=None, help="name of the fastnn backend to check")
    group.addoption("--conformance-examples", type=int, default=DEFAULT_EXAMPLES,
                    help=f"hypothesis examples per randomised test (default {DEFAULT_EXAMPLES})")
    group.addoption("--conformance-report", default=None, help="write the JSON report to PATH")
    group.addoption("--conformance-xfail", default=None,
                    help="an extra xfail file (same format as conformance_xfail.txt)")
    group.addoption("--conformance-certificate", default=None,
                    help="where to write the certificate of a whole-suite run (default: the "
                         "user's cache, see fastnn.api.certificates; '-' for none)")
    group.addoption("--conformance-captured", action="store_true", default=False,
                    help="also run every case through fnn.compile (record, replay) and "
                         "compare with eager, bit for bit (test_captured; slow)")
    group.addoption("--conformance-against", default=None,
                    help="comma-separated backends to cross-check with (default: every other "
                         "available backend; 'none' for no cross-backend checks)")


def pytest_addoption(parser):
    try:
        add_options(parser)
    except ValueError:  # already added by the plugin itself (`-p fastnn.conformance.plugin`)
        pass


def pytest_configure(config):
    if config.getoption("--backend") and not config.pluginmanager.has_plugin(PLUGIN):
        try:
            config.pluginmanager.import_plugin(PLUGIN)
        except ImportError as exc:
            missing = getattr(exc.__cause__ or exc, "name", None) or ""
            if missing.split(".")[0] != "hypothesis":
                raise
            import pytest

            raise pytest.UsageError(
                "the fastnn conformance suite needs hypothesis, not installed here; install "
                "with: pip install -e '.[conformance]' in a checkout of the fastnn repository "
                "(or: pip install \"hypothesis>=6\")") from None
