"""uint8, int8 and int16 as PyTorch 2.13 has them: the promotion table, op results and
dtypes against PyTorch (skipped where it is not installed) on every test device, the
conversions and refusals, and a uint8 image pipeline end to end."""

import io
import itertools
import warnings

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn.api.dtypes import integer_names

torch = pytest.importorskip("torch")
TF = torch.nn.functional

SMALL = ["uint8", "int8", "int16"]
ALL = fnn.api.dtypes.names()
SHAPES = [((2,), (2,)), ((2,), ()), ((), (2,)), ((), ())]


def _full_range(rng, shape, dtype):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


@pytest.mark.parametrize("a, b", list(itertools.product(ALL, repeat=2)))
def test_promote_types_is_pytorchs(a, b):
    want = str(torch.promote_types(getattr(torch, a), getattr(torch, b))).split(".")[1]
    assert fnn.promote_types(a, b).name == want


@pytest.mark.parametrize("a, b", list(itertools.product(
    [d for d in ALL if d != "bfloat16"], repeat=2)))
def test_tensor_and_zero_d_operands_promote_as_pytorch(a, b):
    """Dims beat 0-d tensors within a category (a 0-d int16 beside a uint8 vector stays
    uint8), and a Python scalar moves only the category."""
    for sa, sb in SHAPES:
        want = (torch.ones(sa, dtype=getattr(torch, a)) + torch.ones(sb, dtype=getattr(torch, b)))
        x, y = fnn.ones(sa, dtype=a), fnn.ones(sb, dtype=b)
        assert (x + y).dtype.name == str(want.dtype).split(".")[1], (a, sa, b, sb)
        assert fnn.result_type(x, y).name == str(want.dtype).split(".")[1], (a, sa, b, sb)
    for scalar in (1, 1.5, True):
        want = torch.ones(2, dtype=getattr(torch, a)) + scalar
        assert (fnn.ones(2, dtype=a) + scalar).dtype.name == str(want.dtype).split(".")[1]


UNARY = {
    "neg": lambda m, x: -x, "abs": lambda m, x: abs(x), "invert": lambda m, x: ~x,
    "sum": lambda m, x: x.sum(), "sum dim": lambda m, x: x.sum(1), "prod": lambda m, x: x.prod(1),
    "cumsum": lambda m, x: x.cumsum(0), "max": lambda m, x: x.max(),
    "min dim": lambda m, x: x.min(1)[0], "argmax": lambda m, x: x.argmax(1),
    "argmin": lambda m, x: x.argmin(0), "sort": lambda m, x: x.sort(1)[0],
    "topk": lambda m, x: x.topk(2)[0], "any": lambda m, x: x.any(), "all": lambda m, x: x.all(1),
    "float": lambda m, x: x.float(), "long": lambda m, x: x.long(), "byte": lambda m, x: x.byte(),
    "char": lambda m, x: x.char(), "short": lambda m, x: x.short(), "bool": lambda m, x: x.bool(),
    "div 255": lambda m, x: x / 255, "floordiv 7": lambda m, x: x // 7, "mod 7": lambda m, x: x % 7,
    "mul 3": lambda m, x: x * 3, "add 5": lambda m, x: x + 5, "rsub": lambda m, x: 100 - x,
    "gt": lambda m, x: x > 10, "pow 2": lambda m, x: x ** 2, "mul float": lambda m, x: x * 2.5,
    "where": lambda m, x: m.where(x > 0, x, x * 2), "clamp": lambda m, x: x.clamp(0, 100),
    "masked_fill": lambda m, x: x.masked_fill(x > 50, 7), "and 3": lambda m, x: x & 3,
    "or 8": lambda m, x: x | 8, "shl 2": lambda m, x: x << 2, "shr 2": lambda m, x: x >> 2,
    "gather": lambda m, x: x.gather(1, m.tensor([[0, 1], [2, 3], [1, 1]], device=x.device)),
    "mask index": lambda m, x: x[x > 0], "sign": lambda m, x: x.sign(),
    "cat": lambda m, x: m.cat([x, x], 1), "flip": lambda m, x: x.flip(0),
    "float to": lambda m, x: (x.float() * 1.7).to(x.dtype), "cummax": lambda m, x: x.cummax(1)[0],
}
BINARY = {
    "add": lambda m, a, b: a + b, "sub": lambda m, a, b: a - b, "mul": lambda m, a, b: a * b,
    "div": lambda m, a, b: a / b, "floordiv": lambda m, a, b: a // (b | 1),
    "mod": lambda m, a, b: a % (b | 1), "lt": lambda m, a, b: a < b,
    "maximum": lambda m, a, b: m.maximum(a, b), "xor": lambda m, a, b: a ^ b,
    "where": lambda m, a, b: m.where(a > b, a, b), "matmul": lambda m, a, b: a @ b.t(),
    "shl": lambda m, a, b: a << (b & 7), "shr": lambda m, a, b: a >> (b & 7),
}


def _compare(run, device, *arrays):
    try:
        want = run(torch, *[torch.from_numpy(a.copy()) for a in arrays])
    except RuntimeError:  # bool - x, a mixed-dtype matmul: fastnn gives NumPy's answer
        return
    got = run(fnn, *[fnn.tensor(a, device=device) for a in arrays])
    assert got.dtype.name == str(want.dtype).split(".")[1]
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", SMALL)
def test_unary_as_pytorch(device, dtype, name):
    _compare(UNARY[name], device, _full_range(np.random.default_rng(0), (3, 4), dtype))


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", SMALL)
def test_binary_with_every_integer_as_pytorch(device, dtype, name):
    rng = np.random.default_rng(1)
    x = _full_range(rng, (3, 4), dtype)
    for other in integer_names() + ["bool"]:
        y = rng.random((3, 4)) < 0.5 if other == "bool" else _full_range(rng, (3, 4), other)
        if name in ("floordiv", "mod", "shl", "shr") and other == "bool":
            continue  # (| and & of a bool tensor stay bool: no nonzero divisor)
        _compare(BINARY[name], device, x, y)
        _compare(BINARY[name], device, y, x)


def test_the_names_and_facts_of_the_small_integers():
    x = fnn.tensor([250, 3], dtype=fnn.uint8)
    assert repr(x) == "tensor([250,   3], dtype=uint8)"
    assert x.numpy().dtype == np.uint8 and x.tolist() == [250, 3] and type(x[0].item()) is int
    assert fnn.short is fnn.int16 and fnn.tensor([1.5]).byte().dtype is fnn.uint8
    assert (x.type(), fnn.tensor([1], dtype=fnn.int8).type()) == ("fastnn.ByteTensor",
                                                                  "fastnn.CharTensor")
    assert isinstance(fnn.ShortTensor([1, 2]), fnn.ShortTensor)
    assert not x.is_signed() and fnn.tensor([1], dtype=fnn.int8).is_signed()
    for name in SMALL:
        info, want = fnn.iinfo(getattr(fnn, name)), torch.iinfo(getattr(torch, name))
        assert (info.min, info.max, info.bits) == (want.min, want.max, want.bits)
    assert fnn.from_numpy(np.zeros((2, 2), np.int16)).dtype is fnn.int16


def test_what_pytorch_refuses_or_fastnn_refuses_with_a_reason():
    x = fnn.tensor([250, 3], dtype=fnn.uint8)
    with pytest.raises(TypeError, match="only floating-point tensors can require grad"):
        fnn.tensor([1, 2], dtype=fnn.uint8, requires_grad=True)
    with pytest.raises(TypeError, match="mean: defined on floating tensors, not uint8"):
        x.mean()
    with pytest.raises(OverflowError, match="300 does not fit in uint8"):
        fnn.tensor([300], dtype=fnn.uint8)  # PyTorch: RuntimeError, "without overflow"
    # NOTE: PyTorch wraps a Python int outside the dtype (uint8 + 300 is + 44); fastnn
    # raises, as it does for int32 (docs/backend_authors.md, section 7)
    with pytest.raises(OverflowError, match="add: the Python integer 300 does not fit"):
        x + 300
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type uint8"):
        x.clone().mul_(1.5)
    with pytest.raises(TypeError, match="conv2d: expected floating-point tensors, got uint8"):
        F.conv2d(fnn.zeros(1, 1, 3, 3, dtype=fnn.uint8), fnn.zeros(1, 1, 2, 2, dtype=fnn.uint8))


def test_uint8_mask_index_warns_and_reads_as_bool(device):
    x = fnn.arange(4.0, device=device)
    mask = fnn.tensor([1, 0, 2, 0], dtype=fnn.uint8, device=device)
    with pytest.warns(UserWarning, match="indexing with dtype uint8 is deprecated"):
        assert x[mask].tolist() == [0.0, 2.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.arange(4.0)[torch.tensor([1, 0, 2, 0], dtype=torch.uint8)]
    assert want.tolist() == [0.0, 2.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for lib in (torch, fnn):  # a scalar refused (PyTorch's masked_fill_), values written
            y = lib.zeros(4)
            with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks"):
                y[lib.tensor([1, 0, 2, 0], dtype=lib.uint8)] = 1.0
            y[lib.tensor([1, 0, 2, 0], dtype=lib.uint8)] = lib.tensor([5.0, 6.0])
            assert y.tolist() == [5.0, 0.0, 6.0, 0.0]


def test_checkpoint_and_default_collate_keep_the_dtypes(device):
    state = {name: fnn.tensor(np.arange(6).astype(name).reshape(2, 3), device=device)
             for name in SMALL}
    buf = io.BytesIO()
    fnn.save(state, buf)
    buf.seek(0)
    back = fnn.load(buf)
    for name in SMALL:
        assert np.asarray(back[name]).dtype == np.dtype(name)
        np.testing.assert_array_equal(np.asarray(back[name]), np.arange(6).reshape(2, 3))
    samples = [(np.full((2, 2), i, np.uint8), i) for i in range(4)]
    images, labels = next(iter(fnn.utils.data.DataLoader(samples, batch_size=4)))
    assert images.dtype is fnn.uint8 and images.shape == (4, 2, 2)
    assert images.sum().item() == 2 * 2 * (0 + 1 + 2 + 3) and labels.dtype is fnn.int64


def _pipeline(lib, functional, image, weight, device=None):
    on = {} if device is None else {"device": device}
    x = lib.from_numpy(image)
    x = (x.to(device) if device else x).permute(0, 3, 1, 2).float() / 255
    w = lib.tensor(weight, requires_grad=True, **on)
    y = functional.conv2d(x, w, padding=1)
    keep = (x[:, :1] > 0.5).byte()  # a uint8 mask, as older code makes them
    loss = ((y * keep.float()) ** 2).mean()
    loss.backward()
    return loss.item(), (w.grad.cpu() if device else w.grad).numpy()


def test_uint8_image_pipeline_end_to_end(device):
    """from_numpy(uint8 HWC) -> float() / 255 -> conv2d -> loss -> backward, as PyTorch."""
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, (2, 8, 8, 3), dtype=np.uint8)
    weight = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    want_loss, want_grad = _pipeline(torch, TF, image, weight)
    got_loss, got_grad = _pipeline(fnn, F, image, weight, device)
    assert got_loss == pytest.approx(want_loss, rel=1e-5)
    np.testing.assert_allclose(got_grad, want_grad, rtol=1e-4, atol=1e-5)


def test_a_uint8_fill_after_a_bool_fill_keeps_its_value(device):
    """opencl: bool and uint8 are both uchar, and the fill kernel once came from the
    bool build's cache, which took 2 as True (1): uint8 << 2 gave x << 0."""
    assert fnn.full((2,), True, dtype=fnn.bool, device=device).min().item() is True
    assert fnn.full((), 2, dtype=fnn.uint8, device=device).item() == 2
    x = fnn.tensor([1, 3], dtype=fnn.uint8, device=device)
    assert (x << 2).tolist() == [4, 12]


def test_uint8_class_targets_where_pytorch_takes_them(device):
    """cross_entropy and nll_loss take Byte targets for (N, C) scores, as PyTorch's, and
    refuse them for (N, C, d1, ...) scores, as PyTorch's ("expected scalar type Long")."""
    rng = np.random.default_rng(2)
    scores = rng.standard_normal((5, 4)).astype(np.float32)
    target = rng.integers(0, 4, (5,)).astype(np.uint8)
    for ours, theirs in [(F.cross_entropy, TF.cross_entropy), (F.nll_loss, TF.nll_loss)]:
        got = ours(fnn.tensor(scores, device=device), fnn.tensor(target, device=device))
        want = theirs(torch.tensor(scores), torch.tensor(target))
        assert got.item() == pytest.approx(want.item(), rel=1e-6)
    with pytest.raises(TypeError, match="targets must be an int64 or int32 tensor"):
        F.cross_entropy(fnn.zeros(2, 4, 3, device=device),
                        fnn.zeros(2, 3, dtype=fnn.uint8, device=device))


def test_uint8_conditions_and_masks_where_pytorch_takes_them(device):
    """where() takes a uint8 condition with PyTorch's deprecation warning; masked_fill
    and masked_select refuse a uint8 mask, as PyTorch's."""
    for lib in (torch, fnn):
        on = {"device": device} if lib is fnn else {}
        x = lib.arange(3.0, **on)
        cond = lib.tensor([1, 0, 2], dtype=lib.uint8, **on)
        with warnings.catch_warnings(record=True) as caught:  # (PyTorch's warns once)
            warnings.simplefilter("always")
            assert lib.where(cond, x, -x).tolist() == [0.0, -1.0, 2.0]
        assert lib is torch or "uint8 condition" in str(caught[0].message)
        assert [t.tolist() for t in lib.where(cond)] == [[0, 2]]
        with pytest.raises((RuntimeError, TypeError), match="mask"):
            x.masked_fill(cond, 9.0)
        with pytest.raises(RuntimeError, match="mask"):
            lib.masked_select(x, cond)
