"""fastnn.checkpoint_format: checksums that catch every flipped byte, a header checked against
the file before anything is read, no copy of the file in memory, and files other safetensors
readers still read (and older fastnn files without checksums still load)."""

from __future__ import annotations

import json
import os
import tracemalloc

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import checkpoint, checkpoint_format, nn, optim

st = pytest.importorskip("safetensors.numpy")


def _real_checkpoint(path):
    """A trained model's and optimizer's state, as `fastnn train` would save it."""
    fnn.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.LayerNorm(6), nn.Activation("relu"),
                          nn.Linear(6, 3))
    opt = optim.AdamW(model.parameters(), lr=0.01)
    x, y = fnn.randn((8, 4), seed=1), fnn.tensor(np.arange(8) % 3)
    for _ in range(2):
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()
    fnn.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3}, path)
    return path.read_bytes()


def _header(data: bytes):
    n = int.from_bytes(data[:8], "little")
    return json.loads(data[8:8 + n]), 8 + n


def _same(a, b):
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    return type(a) is type(b) and a == b


# -- checksums ------------------------------------------------------------------------------

def test_a_flipped_byte_in_a_weight_names_the_tensor(tmp_path):
    path = tmp_path / "w.safetensors"
    fnn.save({"model": {"w": np.full(4, 900.0, np.float32), "b": np.zeros(2, np.float32)}},
             path)
    data = bytearray(path.read_bytes())
    header, body = _header(data)
    begin, _ = header["model/w"]["data_offsets"]
    data[body + begin] ^= 0x01  # 900.0 -> 900.00006: plausible, silently loaded before
    path.write_bytes(data)
    with pytest.raises(ValueError, match=r"tensor 'model/w' fails its checksum") as info:
        fnn.load(path)
    assert str(path) in str(info.value)


MASKS = (0x01, 0x80, 0xFF)


@pytest.mark.parametrize("every_mask", [False, pytest.param(True, marks=pytest.mark.slow)])
def test_every_flipped_byte_of_a_real_checkpoint_is_a_clear_error(tmp_path, every_mask):
    """One byte XOR 0x01, 0x80 or 0xFF at every position (header and data): every load must
    raise ValueError naming the file, never return changed values or crash otherwise. The
    README's run flips each position with one of the masks in turn, the slow run with all
    three."""
    good = _real_checkpoint(tmp_path / "good.safetensors")
    header, body = _header(good)
    bad = tmp_path / "bad.safetensors"
    outcomes = {}
    for position in range(len(good)):
        for mask in MASKS if every_mask else MASKS[position % 3: position % 3 + 1]:
            data = bytearray(good)
            data[position] ^= mask
            bad.write_bytes(data)
            try:
                fnn.load(bad)
                outcome = "loaded"
            except ValueError as exc:
                outcome = "clear" if str(bad) in str(exc) else f"unnamed: {exc}"
            region = "header" if position < body else "data"
            outcomes.setdefault((region, outcome), []).append(position)
    assert set(outcomes) == {("header", "clear"), ("data", "clear")}, {
        k: v[:5] for k, v in outcomes.items()}
    assert len(outcomes["data", "clear"]) == (3 if every_mask else 1) * (len(good) - body)


def test_a_changed_number_in_the_metadata_fails_the_header_checksum(tmp_path):
    path = tmp_path / "m.safetensors"
    data = _real_checkpoint(path)
    assert b'\\"epoch\\": {\\"v\\": 3}' in data
    path.write_bytes(data.replace(b'\\"epoch\\": {\\"v\\": 3}', b'\\"epoch\\": {\\"v\\": 7}'))
    with pytest.raises(ValueError, match=r"the header fails its checksum"):
        fnn.load(path)


def test_a_removed_checksum_entry_is_corruption_not_an_old_file(tmp_path):
    path = tmp_path / "m.safetensors"
    data = _real_checkpoint(path)
    path.write_bytes(data.replace(b'"fastnn.crc32"', b'"fastnn.crc33"'))
    with pytest.raises(ValueError, match=r"header fails its checksum"):
        fnn.load(path)


# -- other readers, older files -------------------------------------------------------------

DTYPES = [np.float64, np.float32, np.float16, np.int64, np.uint64, np.int32, np.uint32,
          np.int16, np.uint16, np.int8, np.uint8, np.bool_]


def _arrays():
    rng = np.random.default_rng(0)
    out = {f"a{i}": (rng.standard_normal((3, 2)) * 50).astype(t) for i, t in enumerate(DTYPES)}
    out["zero_d"], out["empty"] = np.array(2.5), np.zeros((0, 4), np.float32)
    out["big_endian"] = np.arange(5, dtype=">i4")
    return out


def test_safetensors_load_file_reads_what_save_writes(tmp_path):
    path = tmp_path / "x.safetensors"
    arrays = _arrays()
    fnn.save({"m": arrays}, path)
    theirs = st.load_file(str(path))
    assert set(theirs) == {f"m/{k}" for k in arrays}
    for key, value in arrays.items():
        np.testing.assert_array_equal(theirs[f"m/{key}"], value)
        assert theirs[f"m/{key}"].dtype == value.dtype.newbyteorder("=")
    from safetensors import safe_open

    with safe_open(str(path), framework="np") as f:
        meta = f.metadata()
    assert set(json.loads(meta[checkpoint_format.CRC_KEY])) == set(theirs)


def test_files_written_by_safetensors_load_the_same(tmp_path):
    path = tmp_path / "theirs.safetensors"
    st.save_file(_arrays(), str(path))
    ours, theirs = fnn.load(path), st.load_file(str(path))
    assert ours.keys() == theirs.keys()
    for key in theirs:
        assert ours[key].dtype == theirs[key].dtype and ours[key].shape == theirs[key].shape
        np.testing.assert_array_equal(ours[key], theirs[key])


def test_a_checkpoint_of_the_earlier_fastnn_without_checksums_loads(tmp_path):
    # the earlier fnn.save: safetensors' own writer, the tree in "fastnn", no checksums
    tree = {"d": {"model": {"d": {"w": {"t": "model/w"}}}, "step": {"v": 7}}}
    path = tmp_path / "old.safetensors"
    st.save_file({"model/w": np.arange(6.0).reshape(2, 3)}, str(path), metadata={
        "fastnn": json.dumps({"format": checkpoint.FORMAT, "version": 1, "tree": tree})})
    out = fnn.load(path)
    assert out["step"] == 7
    np.testing.assert_array_equal(out["model"]["w"], np.arange(6.0).reshape(2, 3))


def test_round_trip_of_every_dtype(tmp_path):
    arrays = _arrays()
    fnn.save({"m": arrays, "n": 1}, tmp_path / "r")
    out = fnn.load(tmp_path / "r")
    assert _same(out, {"m": {k: v.astype(v.dtype.newbyteorder("=")) for k, v in arrays.items()},
                       "n": 1})


# -- the header first, no MemoryError, no RecursionError ------------------------------------

def _quickly_value_error(path, match):
    """A clear ValueError, found without reading or building what the file claims: the
    memory allocated on the way stays small (a bound on work that load on a busy machine
    cannot break, as a time limit could)."""
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=match) as info:
            fnn.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 2**20, f"load allocated {peak / 2**20:.0f} MiB before refusing"
    return str(info.value)


def test_a_huge_header_length_is_refused_before_reading(tmp_path):
    path = tmp_path / "huge.safetensors"
    path.write_bytes((1 << 62).to_bytes(8, "little") + b"{}" + b" " * 6)
    _quickly_value_error(path, r"header length says 4611686018427387904 bytes")


def test_a_pytorch_pickle_checkpoint_is_named_as_one(tmp_path):
    # a file torch.save wrote before PyTorch 1.6 (a bare pickle): say what the file is, not
    # just "corrupt"; a damaged zip archive (the newer format) is named as one
    path = tmp_path / "pickle.pt"
    path.write_bytes(b"\x80\x02\x8a\nl\xfc\x9cF" + b"\x00" * 60)
    _quickly_value_error(path, r"pickle.pt is not .*PyTorch torch.save file .*before PyTorch 1.6")
    path = tmp_path / "zip.pt"
    path.write_bytes(b"PK\x03\x04\x00\x00\x08\x08" + b"\x00" * 60)
    _quickly_value_error(path, r"zip.pt is a damaged zip archive")


def test_a_64_gib_sparse_file_and_dev_zero_are_clear_errors(tmp_path):
    path = tmp_path / "sparse.safetensors"
    with open(path, "wb") as f:
        f.truncate(64 << 30)  # sparse: no disk used, all zeros
    _quickly_value_error(path, r"sparse.safetensors .*68719476736 bytes.*not valid JSON")
    if os.path.exists("/dev/zero"):
        _quickly_value_error("/dev/zero", r"/dev/zero is not a regular file")


def test_a_file_cut_inside_a_tensor_says_how_much_is_missing(tmp_path):
    path = tmp_path / "cut.safetensors"
    fnn.save({"w": np.ones((100, 100), np.float32)}, path)
    data = path.read_bytes()
    path.write_bytes(data[:-1000])
    _quickly_value_error(path, r"the tensors need 40000 bytes of data, the file holds 39000")


def test_a_header_claiming_an_enormous_tensor_needs_the_bytes_in_the_file(tmp_path):
    header = json.dumps({"w": {"dtype": "F32", "shape": [1 << 40, 1 << 10],
                               "data_offsets": [0, 1 << 52]}}).encode()
    path = tmp_path / "claim.safetensors"
    path.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 16)
    _quickly_value_error(path, r"the tensors need 4503599627370496 bytes of data, "
                               r"the file holds 16")


@pytest.mark.parametrize("entry, match", [
    ({"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}, r"dtype 'F8_E4M3'"),
    ({"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}, r"non-negative integers"),
    ({"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}, r"needs 8 bytes, its offsets"),
    ({"dtype": "F32", "shape": [1]}, r"is not \{dtype, shape, data_offsets\}"),
    ([1, 2], r"is not \{dtype, shape, data_offsets\}"),
])
def test_malformed_header_entries(tmp_path, entry, match):
    header = json.dumps({"w": entry}).encode()
    path = tmp_path / "e.safetensors"
    path.write_bytes(len(header).to_bytes(8, "little") + header + b"\0" * 4)
    _quickly_value_error(path, match)


def test_deeply_nested_json_is_a_clear_error(tmp_path):
    deep = 200_000
    header = (b'{"a":' * deep) + b"1" + b"}" * deep
    path = tmp_path / "deep_header.safetensors"
    path.write_bytes(len(header).to_bytes(8, "little") + header)
    _quickly_value_error(path, r"nests too deeply")

    node = {"v": 1}
    for _ in range(checkpoint.MAX_DEPTH + 5):  # a tree json parses but load must not walk
        node = {"d": {"a": node}}
    trees = {"walked": json.dumps({"format": checkpoint.FORMAT, "version": 1, "tree": node}),
             "parsed": '{"format": "fastnn.checkpoint", "tree": ' + "[" * deep + "]" * deep + "}"}
    for name, tree in trees.items():
        path = tmp_path / f"deep_tree_{name}.safetensors"
        st.save_file({"w": np.zeros(1)}, str(path), metadata={"fastnn": tree})
        _quickly_value_error(path, r"corrupt fastnn metadata: it nests deeper than")


def test_saving_a_state_nested_too_deeply_or_containing_itself(tmp_path):
    state = {"v": 1}
    for _ in range(5000):
        state = {"a": state}
    with pytest.raises(ValueError, match=r"nests deeper than 100 levels"):
        fnn.save(state, tmp_path / "a")
    loop = {"w": np.zeros(2)}
    loop["self"] = loop
    with pytest.raises(ValueError, match=r"contain itself"):
        fnn.save(loop, tmp_path / "a")
    assert not os.listdir(tmp_path)


def test_loading_needs_the_file_size_once_not_twice(tmp_path):
    path = tmp_path / "big.safetensors"
    arrays = {f"w{i}": np.full((1000, 1000), float(i), np.float32) for i in range(5)}
    fnn.save({"model": arrays}, path)
    size = os.path.getsize(path)
    tracemalloc.start()
    try:
        out = fnn.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert out["model"]["w3"][999, 999] == 3.0
    assert size <= peak < 1.1 * size, (peak, size)  # the earlier load needed 2.0x
