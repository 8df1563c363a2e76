"""``fastnn train`` refuses bad checkpoint paths with one clear line, before training."""

from importlib.util import find_spec

import pytest

from fastnn.cli import main

pytestmark = pytest.mark.skipif(
    find_spec("sklearn") is None or find_spec("safetensors") is None,
    reason="digits and checkpoints need scikit-learn and safetensors: pip install -e '.[examples]'")


def test_resume_from_a_corrupt_checkpoint_says_so(tmp_path, capsys):
    path = tmp_path / "broken.safetensors"
    path.write_bytes(b"this is not a safetensors file at all")
    with pytest.raises(SystemExit) as info:
        main(["train", "--resume", "--checkpoint", str(path), "--epochs", "1"])
    message = str(info.value)
    assert message.startswith("fastnn train: --resume:") and str(path) in message
    assert "training" not in capsys.readouterr().out


@pytest.mark.parametrize("option", ["--checkpoint", "--plot"])
def test_missing_output_directory_is_refused_before_training(tmp_path, capsys, option):
    path = tmp_path / "no_such_dir" / "out.file"
    with pytest.raises(SystemExit) as info:
        main(["train", option, str(path), "--epochs", "1"])
    assert "does not exist" in str(info.value) and str(path.parent) in str(info.value)
    assert "epoch" not in capsys.readouterr().out
