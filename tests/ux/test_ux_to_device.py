"""``x.to(name)`` errors: an installed backend's own reason, no dtype guess."""

import pytest

import fastnn as fnn
from tests.fake_backends import forget, install_backend

NO_DRIVER = """
    from fastnn.api.hookspec import hookimpl

    @hookimpl
    def backend_probe():
        return {"available": False, "reason": "no driver; pip install nodrv[gpu]"}
"""


@pytest.fixture(autouse=True)
def _fresh_registry():
    forget()
    yield
    forget()


def test_to_an_unusable_installed_backend_gives_only_its_reason(tmp_path):
    install_backend(tmp_path, "uxnodrv-backend", "uxnodrv", "uxnodrv_mod", NO_DRIVER)
    with pytest.raises(fnn.BackendError) as info:
        fnn.ones((2,)).to("uxnodrv")
    message = str(info.value)
    assert "installed but unusable" in message and "no driver" in message
    assert "neither a device nor" not in message  # "uxnodrv" is a device, just not usable here


def test_to_a_missing_device_index_says_which_devices_exist():
    with pytest.raises(fnn.BackendError) as info:
        fnn.ones((2,)).to("cpu:7")
    assert "cpu:7 does not exist" in str(info.value)
    assert "neither a device nor" not in str(info.value)


def test_to_an_unknown_name_may_be_a_misspelt_dtype():
    with pytest.raises(fnn.BackendError, match="neither a device nor a fastnn dtype.*float32"):
        fnn.ones((2,)).to("flaot32")


def test_an_int_device_is_an_accelerator_index():
    """PyTorch's x.to(0), model.to(rank), torch.device(1): that index of the accelerator;
    without one, an error saying so (PyTorch raises too)."""
    from fastnn.api.device import current_accelerator

    accel = current_accelerator()
    if accel is None:
        with pytest.raises(RuntimeError, match="none is available"):
            fnn.zeros(2).to(0)
        return
    assert fnn.zeros(2).to(0).device == f"{accel.type}:0"
    assert fnn.nn.Linear(2, 2).to(0).weight.device == f"{accel.type}:0"
    assert str(fnn.device(1)) == f"{accel.type}:1"
    with pytest.raises(ValueError, match=">= 0"):
        fnn.zeros(2).to(-1)
