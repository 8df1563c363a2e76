"""Autocast's op table (fastnn/ops/autocasting.py): each listed op's output dtype and
values against torch.autocast("cpu", dtype=torch.float16), the CUDA list's policies run
through the same wrappers (the cpu backend standing in for a GPU device type), and that
unlisted ops are left as they are."""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn.ops import autocasting
from fastnn.ops.table import FUNCTIONAL, METHODS, TOP

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(0)
A, B, C = (RNG.standard_normal((4, 4)).astype(np.float32) for _ in range(3))
V = RNG.standard_normal(4).astype(np.float32)
B3 = RNG.standard_normal((2, 4, 4)).astype(np.float32)
IMG = RNG.standard_normal((1, 2, 5, 5)).astype(np.float32)
KER = RNG.standard_normal((3, 2, 3, 3)).astype(np.float32)
SEQ = RNG.standard_normal((1, 2, 6)).astype(np.float32)
KER1 = RNG.standard_normal((3, 2, 3)).astype(np.float32)
KERT = RNG.standard_normal((2, 3, 3, 3)).astype(np.float32)
VOL = RNG.standard_normal((1, 2, 4, 4, 4)).astype(np.float32)
KER3 = RNG.standard_normal((3, 2, 2, 2, 2)).astype(np.float32)
LABELS = np.array([0, 1, 2, 3])
GRID = RNG.uniform(-1.2, 1.2, size=(1, 3, 4, 2)).astype(np.float32)
P = 1 / (1 + np.exp(-A))

# (label, call(lib, functional, t)): t(array, half=False) makes the library's tensor
CASES = [
    ("matmul", lambda m, f, t: m.matmul(t(A), t(B))),
    ("@", lambda m, f, t: t(A) @ t(B)),
    ("mm", lambda m, f, t: m.mm(t(A), t(B))),
    ("bmm", lambda m, f, t: m.bmm(t(B3), t(B3))),
    ("addmm", lambda m, f, t: m.addmm(t(C), t(A), t(B))),
    ("baddbmm", lambda m, f, t: m.baddbmm(t(B3), t(B3), t(B3))),
    ("einsum", lambda m, f, t: m.einsum("ij,jk->ik", t(A), t(B))),
    ("tensordot", lambda m, f, t: m.tensordot(t(A), t(B), 1)),
    ("mv (unlisted on cpu)", lambda m, f, t: m.mv(t(A), t(V))),
    ("dot (unlisted on cpu)", lambda m, f, t: m.dot(t(V), t(V))),
    ("linear", lambda m, f, t: f.linear(t(A), t(B), t(V))),
    ("conv1d", lambda m, f, t: f.conv1d(t(SEQ), t(KER1), t(V[:3]), padding=1)),
    ("conv2d", lambda m, f, t: f.conv2d(t(IMG), t(KER), t(V[:3]))),
    ("conv3d", lambda m, f, t: f.conv3d(t(VOL), t(KER3))),
    ("conv_transpose2d", lambda m, f, t: f.conv_transpose2d(t(IMG), t(KERT))),
    ("prelu", lambda m, f, t: f.prelu(t(A), t(V[:1]))),
    ("sdpa", lambda m, f, t: f.scaled_dot_product_attention(t(B3), t(B3), t(B3))),
    ("softmax fp16 (unlisted on cpu)", lambda m, f, t: f.softmax(t(A, True), -1)),
    ("sum fp16 (unlisted on cpu)", lambda m, f, t: t(A, True).sum()),
    ("cross_entropy", lambda m, f, t: f.cross_entropy(t(A, True), t(LABELS))),
    ("nll_loss", lambda m, f, t: f.nll_loss(t(A, True), t(LABELS))),
    ("mse_loss", lambda m, f, t: f.mse_loss(t(A, True), t(B, True))),
    ("l1_loss", lambda m, f, t: f.l1_loss(t(A, True), t(B, True))),
    ("smooth_l1_loss", lambda m, f, t: f.smooth_l1_loss(t(A, True), t(B, True))),
    ("huber_loss", lambda m, f, t: f.huber_loss(t(A, True), t(B, True))),
    ("kl_div", lambda m, f, t: f.kl_div(t(A, True), t(P, True), reduction="batchmean")),
    ("bce", lambda m, f, t: f.binary_cross_entropy(t(P, True), t(P.T.copy(), True))),
    ("bce_with_logits", lambda m, f, t: f.binary_cross_entropy_with_logits(
        t(A, True), t(P, True))),
    ("cdist", lambda m, f, t: m.cdist(t(A, True), t(B, True))),
    ("prod", lambda m, f, t: t(A[:1] / 2 + 1, True).prod()),
    ("cat", lambda m, f, t: m.cat([t(A, True), t(B)])),
    ("stack", lambda m, f, t: m.stack([t(A, True), t(B)])),
    ("cat all fp16", lambda m, f, t: m.cat([t(A, True), t(B, True)])),
    ("layer_norm", lambda m, f, t: f.layer_norm(t(A, True), (4,), t(V), t(V))),
    ("group_norm", lambda m, f, t: f.group_norm(t(B3, True), 2, t(V), t(V))),
    ("batch_norm", lambda m, f, t: f.batch_norm(t(A, True), t(V), t(V * V), t(V), t(V),
                                                training=True)),
    ("add (builtin promotion)", lambda m, f, t: t(A, True) + t(B)),
    ("exp fp16 (unlisted on cpu)", lambda m, f, t: t(A, True).exp()),
    ("float64 left alone", lambda m, f, t: m.matmul(t(A).double(), t(B).double())),
    ("grid_sample", lambda m, f, t: f.grid_sample(t(IMG, True), t(GRID, True),
                                                  align_corners=False)),
]


def _run(lib, functional, call):
    def make(array, half=False):
        out = lib.tensor(array)
        return out.half() if half else out

    with lib.autocast("cpu", dtype=lib.float16):
        return call(lib, functional, make)


@pytest.mark.parametrize("label, call", CASES, ids=[c[0] for c in CASES])
def test_cpu_dtype_and_values_as_torch(label, call):
    expected = _run(torch, TF, call)
    got = _run(fnn, F, call)
    assert got.dtype.name == str(expected.dtype).split(".")[-1], label
    want = expected.detach().double().numpy()
    tolerance = 2e-2 * max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got.numpy().astype(np.float64), want, atol=tolerance, rtol=2e-2)


# (not nn.LSTM: PyTorch's oneDNN LSTM raises under cpu autocast on some CPUs)
@pytest.mark.parametrize("layer", ["GRU", "RNN", "LSTMCell", "GRUCell", "RNNCell"])
def test_recurrent_layers_dtypes_as_torch_on_cpu(layer):
    dtypes = []
    for lib in (fnn, torch):
        module = getattr(lib.nn, layer)(4, 3)
        x = lib.tensor(B3[0] if "Cell" in layer else B3)
        with lib.autocast("cpu", dtype=lib.float16):
            out = module(x)
        out = out[0] if isinstance(out, tuple) else out
        dtypes.append(str(out.dtype).split(".")[-1])
    assert dtypes[0] == dtypes[1]


def test_every_table_name_is_a_wrapped_public_op():
    ops = {**FUNCTIONAL, **TOP, **METHODS}
    missing = [name for name in autocasting.POLICY
               if name not in ops and name not in autocasting.LAYER_ONLY]
    assert not missing, f"the autocast table names ops fastnn lacks: {missing}"
    bare = [name for name in autocasting.POLICY
            if name in ops and not hasattr(ops[name], "autocast_policy")]
    assert not bare, f"listed but not wrapped: {bare}"
    # the operators go through it too (functional's takes PyTorch's input= on top of it)
    assert fnn.Tensor.__matmul__ is METHODS["matmul"] is FUNCTIONAL["matmul"].__wrapped__
    assert hasattr(fnn.Tensor.__matmul__, "autocast_policy")


@pytest.fixture
def cuda_list(monkeypatch):
    """The CUDA list's policies, with cpu tensors standing in for a GPU device type."""
    monkeypatch.setattr(autocasting, "_kind", lambda device_type: "cuda")
    with fnn.autocast("cpu", dtype=fnn.float16):
        yield


def _t(array, half=False):
    out = fnn.tensor(array)
    return out.half() if half else out


CUDA_CASES = [  # (label, call, expected dtype)
    ("mv", lambda: fnn.mv(_t(A), _t(V)), "float16"),
    ("dot promotes", lambda: fnn.dot(_t(V, True), _t(V)), "float32"),
    ("dot all fp16", lambda: fnn.dot(_t(V, True), _t(V, True)), "float16"),
    ("tensordot promotes", lambda: fnn.tensordot(_t(A), _t(B), 1), "float32"),
    ("softmax", lambda: F.softmax(_t(A, True), -1), "float32"),
    ("softmax dtype=", lambda: F.softmax(_t(A, True), -1, dtype=fnn.float16), "float16"),
    ("log_softmax", lambda: F.log_softmax(_t(A, True), -1), "float32"),
    ("sum", lambda: _t(A, True).sum(), "float32"),
    ("cumsum", lambda: _t(A, True).cumsum(0), "float32"),
    ("exp", lambda: _t(A, True).exp(), "float32"),
    ("log", lambda: _t(P, True).log(), "float32"),
    ("pow", lambda: _t(A, True) ** 2, "float32"),
    ("layer_norm", lambda: F.layer_norm(_t(A, True), (4,)), "float32"),
    ("LayerNorm", lambda: fnn.nn.LayerNorm(4)(_t(A, True)), "float32"),
    ("LayerNorm no affine", lambda: fnn.nn.LayerNorm(4, elementwise_affine=False)(
        _t(A, True)), "float32"),
    ("mse_loss", lambda: F.mse_loss(_t(A, True), _t(B, True)), "float32"),
    ("addcmul", lambda: fnn.addcmul(_t(A, True), _t(B, True), _t(C)), "float32"),
    ("batch_norm follows input", lambda: F.batch_norm(_t(A, True), _t(V), _t(V * V),
                                                      _t(V), _t(V)), "float16"),
    ("mean unlisted", lambda: _t(A, True).mean(), "float16"),
    ("sigmoid unlisted", lambda: _t(A, True).sigmoid(), "float16"),
    ("gelu unlisted", lambda: F.gelu(_t(A, True)), "float16"),
    ("LSTM (cuDNN's)", lambda: fnn.nn.LSTM(4, 3)(_t(B3))[0], "float16"),
    ("GRUCell", lambda: fnn.nn.GRUCell(4, 3)(_t(A), _t(A[:, :3].copy())), "float16"),
    ("var native", lambda: _t(A, True).var(), "float16"),
    ("elu native", lambda: F.elu(_t(A, True)), "float16"),
    ("arccos (acos's alias)", lambda: _t(P, True).arccos(), "float32"),
    ("grid_sample promotes", lambda: F.grid_sample(_t(IMG, True), _t(GRID),
                                                   align_corners=False), "float32"),
    ("grid_sample all fp16", lambda: F.grid_sample(_t(IMG, True), _t(GRID, True),
                                                   align_corners=False), "float16"),
]


@pytest.mark.parametrize("label, call, dtype", CUDA_CASES, ids=[c[0] for c in CUDA_CASES])
def test_cuda_list_policies(cuda_list, label, call, dtype):
    out = call()
    assert out.dtype.name == dtype, label


def test_cuda_list_float32_op_runs_its_inner_ops_below_autocast(cuda_list):
    # cross_entropy is float32: its inner log_softmax/sum must not cast again, and its
    # value is the float32 one of the float16-rounded logits
    logits = _t(A, True)
    out = F.cross_entropy(logits, _t(LABELS))
    x = A.astype(np.float16).astype(np.float64)
    log_p = x - np.log(np.exp(x).sum(1, keepdims=True))
    assert out.dtype == fnn.float32
    np.testing.assert_allclose(out.item(), -log_p[np.arange(4), LABELS].mean(), rtol=1e-5)


def _unary_ops():
    ops = []
    for name, fn in sorted(FUNCTIONAL.items()):
        if name not in autocasting.POLICY and name in METHODS:
            ops.append((name, fn))
    return ops


def test_unlisted_ops_keep_their_dtype_in_a_cuda_list_region(monkeypatch):
    """Every unlisted one-tensor op gives inside a region what it gives outside: no inner
    call of a listed op may leak a cast into an op PyTorch runs as it is."""
    inputs = (fnn.tensor(P).half(), fnn.tensor(P))
    outside = {}
    for name, fn in _unary_ops():
        for i, x in enumerate(inputs):
            try:
                out = fn(x)
            except Exception:  # noqa: BLE001  (ops that need more arguments are skipped)
                continue
            if isinstance(out, fnn.Tensor):
                outside[name, i] = out.dtype
    monkeypatch.setattr(autocasting, "_kind", lambda device_type: "cuda")
    leaks = set()
    with fnn.autocast("cpu", dtype=fnn.float16):
        for name, fn in _unary_ops():
            for i, x in enumerate(inputs):
                if (name, i) in outside and fn(x).dtype is not outside[name, i]:
                    leaks.add(name)
    assert len(outside) > 100
    # cov and corrcoef are matmuls inside, in PyTorch too: float16 out on both lists
    assert sorted(leaks) == ["corrcoef", "cov"], f"unlisted ops changed dtype: {leaks}"
