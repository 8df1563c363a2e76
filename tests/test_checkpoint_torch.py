"""fnn.load of PyTorch's torch.save files (fastnn.checkpoint_torch): what PyTorch saved
comes back as NumPy arrays and plain values, and nothing in the file can run code or
change fastnn's objects."""

from __future__ import annotations

import io
import pickle
import zipfile

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn, optim


def _archive(path, pickled: bytes, extra=()) -> None:
    """A zip laid out as torch.save's: <name>/data.pkl, <name>/byteorder, storages."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("ckpt/data.pkl", pickled)
        z.writestr("ckpt/byteorder", "little")
        for name, data in extra:
            z.writestr(name, data)


def test_tensors_and_plain_values_come_back_as_pytorch_saved_them(tmp_path):
    torch = pytest.importorskip("torch")
    w = torch.randn(4, 5, generator=torch.Generator().manual_seed(0))
    state = {"w": w, "t": w.t(), "row": w[1, 1:], "p": torch.nn.Parameter(torch.ones(2)),
             "i": torch.arange(6).reshape(2, 3), "b": torch.tensor([True, False]),
             "h": torch.tensor([1.5, -2.25], dtype=torch.float16),
             "bf": torch.tensor([1.0, 3.140625, -1e30], dtype=torch.bfloat16),
             "size": torch.Size([2, 3]), "dtype": torch.float16, "dev": torch.device("cpu"),
             "nested": [1, 2.5, "s", None, (True, b"ab")], "set": {1, 2}, 7: "int key"}
    torch.save(state, tmp_path / "s.pt")
    got = fnn.load(tmp_path / "s.pt", map_location="cpu")
    for key in ("w", "t", "row", "i", "b", "h"):
        assert got[key].dtype == state[key].numpy().dtype
        np.testing.assert_array_equal(got[key], state[key].numpy())
    np.testing.assert_array_equal(got["p"], np.ones(2, np.float32))
    np.testing.assert_array_equal(got["bf"].astype(np.float32), state["bf"].float().numpy())
    from fastnn.api import dtypes
    assert got["bf"].dtype == (dtypes.numpy_bfloat16() or np.float32)
    assert got["size"] == (2, 3) and got["dtype"] is fnn.float16 and got["dev"] == "cpu"
    assert got["nested"] == [1, 2.5, "s", None, (True, b"ab")] and got["set"] == {1, 2}
    assert got[7] == "int key"
    # t and w shared a storage when saved: they share memory again, as torch.load gives
    # them; an array of another storage does not
    again = torch.load(tmp_path / "s.pt", weights_only=True)
    again["t"][0, 1] = 99.0
    got["t"][0, 1] = 99.0
    assert got["w"][1, 0] == again["w"][1, 0] == 99.0 and got["row"][0] == again["row"][0]
    assert got["i"].flags.writeable and not np.shares_memory(got["w"], got["i"])


def _net(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(6, 8), lib.nn.BatchNorm1d(8), lib.nn.ReLU(),
                             lib.nn.Linear(8, 3))


def test_a_pytorch_training_run_resumes_in_fastnn(tmp_path):
    # the model and Adam's state written by PyTorch after 3 steps; 3 more steps in
    # fastnn from there follow PyTorch's own 3 more steps
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    batches = [(rng.standard_normal((16, 6)).astype(np.float32), rng.integers(0, 3, 16))
               for _ in range(6)]
    model = _net(torch)
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=0.1)

    def steps(lib, model, opt, part):
        losses = []
        for x, y in part:
            opt.zero_grad()
            loss = lib.nn.functional.cross_entropy(model(lib.tensor(x)), lib.tensor(y))
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses

    steps(torch, model, opt, batches[:3])
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "iter": 3},
               tmp_path / "ckpt.pt")
    expected = steps(torch, model, opt, batches[3:])
    ckpt = fnn.load(str(tmp_path / "ckpt.pt"))
    ours = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 3))
    ours.load_state_dict(ckpt["model"])
    ours_opt = optim.Adam(ours.parameters(), lr=0.01, weight_decay=0.1)
    ours_opt.load_state_dict(ckpt["optimizer"])
    assert ckpt["iter"] == 3
    np.testing.assert_allclose(steps(fnn, ours, ours_opt, batches[3:]), expected, rtol=1e-5)
    with open(tmp_path / "ckpt.pt", "rb") as f:  # an open file, as torch.load takes one
        np.testing.assert_array_equal(fnn.load(io.BytesIO(f.read()))["model"]["0.bias"],
                                      ckpt["model"]["0.bias"])


def test_a_pickled_module_is_refused_by_its_class_name(tmp_path):
    torch = pytest.importorskip("torch")
    torch.save(torch.nn.Linear(2, 2), tmp_path / "whole.pt")
    with pytest.raises(ValueError, match=r"pickled torch\.nn\.modules\.linear\.Linear.*"
                                         r"state_dict\(\) instead"):
        fnn.load(tmp_path / "whole.pt")


def test_names_a_script_allows_load_as_with_pytorchs_safe_globals(tmp_path):
    """A checkpoint holding a NumPy scalar (a best accuracy) and the run's argparse
    Namespace loads after torch.serialization.add_safe_globals, as PyTorch's weights_only
    load does; fastnn had no torch.serialization and refused the names."""
    import argparse

    torch = pytest.importorskip("torch")
    numpy_names = [np._core.multiarray.scalar, np.dtype, np.dtypes.Float64DType]
    state = {"w": torch.ones(2), "best": np.float64(0.5),
             "args": argparse.Namespace(lr=0.1, name="run")}
    torch.save(state, tmp_path / "run.pt")
    with pytest.raises(ValueError, match=r"add_safe_globals\(\[numpy\._core\.multiarray"):
        fnn.load(tmp_path / "run.pt")
    for lib in (torch, fnn):
        with lib.serialization.safe_globals(numpy_names + [argparse.Namespace]):
            loaded = lib.load(tmp_path / "run.pt", weights_only=True)
        assert loaded["best"] == 0.5 and type(loaded["best"]) is np.float64
        assert vars(loaded["args"]) == {"lr": 0.1, "name": "run"}
        assert argparse.Namespace not in lib.serialization.get_safe_globals()
    with pytest.raises(ValueError, match="holds a pickled numpy"):
        fnn.load(tmp_path / "run.pt")  # the with block's names are gone again
    fnn.serialization.add_safe_globals(numpy_names + [argparse.Namespace])
    try:
        assert fnn.load(tmp_path / "run.pt")["args"].lr == 0.1
        assert set(fnn.serialization.get_safe_globals()) == set(numpy_names +
                                                                [argparse.Namespace])
    finally:
        fnn.serialization.clear_safe_globals()
    assert fnn.serialization.save is fnn.save and fnn.serialization.load is fnn.load


class _Runs:
    def __reduce__(self):
        import os
        return os.system, ("touch ran-from-a-checkpoint",)


def test_a_pickle_that_names_a_function_runs_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _archive(tmp_path / "evil.pt", pickle.dumps({"x": _Runs()}, protocol=2))
    with pytest.raises(ValueError, match=r"pickled (posix|os|nt)\.system, which fastnn does "
                                         r"not rebuild"):
        fnn.load("evil.pt")
    assert not (tmp_path / "ran-from-a-checkpoint").exists()


def test_a_pickle_cannot_change_fastnns_objects(tmp_path):
    # GLOBAL torch float32, then BUILD with a slot state {"name": "evil"}: Python's own
    # unpickler would set fastnn.float32.name
    pickled = (b"\x80\x02ctorch\nfloat32\nN}X\x04\x00\x00\x00nameX\x04\x00\x00\x00evils"
               b"\x86b.")
    _archive(tmp_path / "build.pt", pickled)
    with pytest.raises(ValueError, match="sets attributes on a DType"):
        fnn.load(tmp_path / "build.pt")
    assert fnn.float32.name == "float32"


def test_damaged_archives_are_named(tmp_path):
    header = (b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storage"
              b"ctorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x04tQK\x00"
              b"K\x04\x85K\x01\x85\x89ctorch._utils\n_rebuild_tensor_v2\n)tR.")
    _archive(tmp_path / "short.pt", header, [("ckpt/data/0", b"\x00" * 12)])
    with pytest.raises(ValueError, match="corrupt torch.save file: its storage '0' holds 12 "
                                         "bytes, not 4 FloatStorage elements"):
        fnn.load(tmp_path / "short.pt")
    _archive(tmp_path / "ok.pt", header, [("ckpt/data/0", np.arange(4, dtype="<f4").tobytes())])
    np.testing.assert_array_equal(fnn.load(tmp_path / "ok.pt"), np.arange(4, dtype=np.float32))
    raw = bytearray((tmp_path / "ok.pt").read_bytes())
    at = raw.index(np.arange(4, dtype="<f4").tobytes())
    raw[at + 5] ^= 0x40  # one flipped bit in the stored tensor
    (tmp_path / "flipped.pt").write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"bytes of 'ckpt/data/0' are truncated or corrupt"):
        fnn.load(tmp_path / "flipped.pt")
    _archive(tmp_path / "past.pt", header.replace(b"K\x04\x85", b"K\x05\x85"),
             [("ckpt/data/0", np.arange(4, dtype="<f4").tobytes())])
    with pytest.raises(ValueError, match=r"corrupt torch.save file: a tensor of size \(5,\), "
                                         r"stride \(1,\) at offset 0 reaches past its storage"):
        fnn.load(tmp_path / "past.pt")
    with zipfile.ZipFile(tmp_path / "script.pt", "w") as z:
        z.writestr("m/constants.pkl", b"")
        z.writestr("m/code/__torch__.py", b"")
    with pytest.raises(ValueError, match=r"TorchScript archive \(torch.jit.save\)"):
        fnn.load(tmp_path / "script.pt")
