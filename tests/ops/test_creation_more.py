"""fastnn.ops.creation_more: torch.range (end included, the default float dtype) and
torch.frombuffer (sharing a buffer's memory), against PyTorch's."""

import array
import warnings

import pytest

import fastnn as fnn

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("args, dtype", [
    ((1, 4), None), ((0, 1, 0.25), None), ((5, 1, -2), None), ((0, 0.9, 0.3), None),
    ((1, 3), "int32"), ((1.5, 3), None), ((1, 1), None), ((0, 10, 3), "float64")])
def test_range_includes_its_end_as_torch(args, dtype):
    kwargs = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = torch.range(*args, **kwargs)
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        ours = fnn.range(*args, **({} if dtype is None else {"dtype": getattr(fnn, dtype)}))
    assert ours.tolist() == pytest.approx(theirs.tolist())
    assert ours.dtype.name == str(theirs.dtype).rpartition(".")[2]


def test_range_refuses_a_step_against_the_bounds():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="inconsistent with step sign"):
            fnn.range(5, 1)
        with pytest.raises(RuntimeError, match="step must be nonzero"):
            fnn.range(0, 1, 0)


def test_frombuffer_shares_the_buffers_memory():
    for module in (torch, fnn):
        values = array.array("f", [1, 2, 3, 4])
        t = module.frombuffer(values, dtype=module.float32, count=2, offset=4)
        t[0] = 9
        assert t.tolist() == [9.0, 3.0] and list(values) == [1.0, 9.0, 3.0, 4.0]
        raw = bytearray(b"\x01\x02\x03\x04")
        u = module.frombuffer(raw, dtype=module.uint8)
        raw[0] = 7
        assert u.tolist() == [7, 2, 3, 4] and str(u.dtype).endswith("uint8")
        assert module.frombuffer(b"\x01\x00\x02\x00", dtype=module.int16).tolist() == [1, 2]


@pytest.mark.parametrize("kwargs, message", [
    (dict(buffer=b""), "must not be 0"),
    (dict(buffer=b"\x01\x02\x03", dtype="int16"), "multiple of element size"),
    (dict(buffer=b"\x01\x02", count=3), "must not be greater"),
    (dict(buffer=b"\x01\x02", offset=2), "offset"),
])
def test_frombuffer_refuses_what_torch_refuses(kwargs, message):
    for module in (torch, fnn):
        given = dict(kwargs, dtype=getattr(module, kwargs.get("dtype", "uint8")))
        with pytest.raises(ValueError, match=message):
            module.frombuffer(**given)


def test_flush_denormal_and_is_storage_answer_as_torch_can():
    assert fnn.set_flush_denormal(False) is False  # (no such mode: PyTorch's answer then)
    assert fnn.is_storage(fnn.zeros(2)) is torch.is_storage(torch.zeros(2)) is False


@pytest.mark.parametrize("size, stride", [
    ((2, 3), (3, 1)), ((2, 3), (1, 2)), ((2, 3, 4), (1, 8, 2)), ((2, 3, 4), (12, 1, 3)),
    ((2, 1, 3), (3, 3, 1)), ((0, 3), (3, 1)), ((), ())])
def test_empty_strided_has_the_strides_asked_for(size, stride):
    theirs, ours = torch.empty_strided(size, stride), fnn.empty_strided(size, stride)
    assert ours.shape == tuple(theirs.shape) and ours.stride() == theirs.stride()
    assert ours.is_contiguous() == theirs.is_contiguous()
    made = fnn.zeros(1, dtype=fnn.float64).new_empty_strided(size, stride)
    assert made.dtype == fnn.float64 and made.stride() == theirs.stride()


def test_empty_strided_refuses_a_layout_with_gaps_or_overlaps():
    with pytest.raises(NotImplementedError, match="as_strided"):
        fnn.empty_strided((2, 3), (1, 1))
    leaf = fnn.empty_strided((2, 3), (1, 2), requires_grad=True)
    assert leaf.requires_grad and leaf.is_leaf
