"""Guard: the suite's fixtures come from its plugin, which must be loaded with -p."""

import pytest

PLUGIN = "fastnn.conformance.plugin"


def pytest_configure(config):
    if not config.pluginmanager.has_plugin(PLUGIN):
        raise pytest.UsageError(
            f"the fastnn conformance suite needs --backend NAME: run "
            f"`pytest --pyargs fastnn.conformance --backend NAME` "
            f"(or with `-p {PLUGIN}` where plugin autoloading is off) "
            f"or `fastnn conformance --backend NAME`")
