"""opencl's scatter_add sums a repeated index in one fixed order (NumPy's add.at's), so
its floating-point result is the same on every call: an embedding's gradient, and with it
a compiled nanoGPT step, equals its eager run bit for bit (issue 23: atomic adds raced, and
``fnn.compile``'s first-replay check refused the step now and then)."""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn, optim

DEV = "opencl"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scatter_add_repeated_index_is_add_at_bit_for_bit(ocl, dtype):
    """An embedding's backward: 1024 rows of 64 onto 64 rows, each repeated ~16 times
    (the atomic adds gave a few distinct results in 30 calls; the order shows in the last
    bits); and along the middle axis of a 3-d base, mixed magnitudes."""
    rng = np.random.default_rng(0)
    index = np.broadcast_to(rng.integers(0, 64, (1024, 1)), (1024, 64))
    src = (rng.standard_normal((1024, 64)) * 1e-3).astype(dtype)
    want = np.zeros((64, 64), dtype)
    for k in range(64):  # add.at down each column, in index order
        np.add.at(want[:, k], index[:, k], src[:, k])
    x = fnn.zeros((64, 64), dtype=dtype, device=DEV)
    i, s = fnn.tensor(index.copy(), device=DEV), fnn.tensor(src, device=DEV)
    for _ in range(40):
        assert np.array_equal(fnn.scatter_add(x, 0, i, s).numpy(), want)

    base = rng.standard_normal((2, 3, 5)).astype(dtype)
    index = rng.integers(0, 3, (2, 400, 5))
    src = (rng.standard_normal((2, 400, 5)) * 10.0 ** rng.integers(-4, 4, (2, 400, 5)))
    src = src.astype(dtype)
    want = base.copy()
    for o in range(2):
        for k in range(5):
            np.add.at(want[o, :, k], index[o, :, k], src[o, :, k])
    got = fnn.scatter_add(fnn.tensor(base, device=DEV), 1, fnn.tensor(index, device=DEV),
                          fnn.tensor(src, device=DEV))
    assert np.array_equal(got.numpy(), want)


def test_scatter_add_integers_and_out_of_place(ocl):
    base = np.arange(6, dtype=np.int64)
    index = np.array([0, 5, 0, 0, 2])
    src = np.array([1, 2, 3, 4, 5], dtype=np.int64)
    x = fnn.tensor(base, device=DEV)
    got = fnn.scatter_add(x, 0, fnn.tensor(index, device=DEV), fnn.tensor(src, device=DEV))
    want = base.copy()
    np.add.at(want, index, src)
    assert np.array_equal(got.numpy(), want)
    assert np.array_equal(x.numpy(), base)  # the base is left as it was


class _TinyGPT(nn.Module):
    """bench_models' nanoGPT, smaller: token and position embeddings, one attention block
    on a q, k, v split, a head; the tokens repeat, so the embedding's gradient sums."""

    def __init__(self, vocab=8, d=16, heads=2, seq=12):
        super().__init__()
        self.heads = heads
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.ln1, self.lnf = nn.LayerNorm(d), nn.LayerNorm(d)
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        b, t = idx.shape
        d = self.wte.weight.shape[1]
        x = self.wte(idx) + self.wpe.weight[:t]
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for z in self.c_attn(self.ln1(x)).split(d, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(y.transpose(1, 2).contiguous().view(b, t, d))
        return self.head(self.lnf(x)).view(b * t, -1)


def _train(compiled, steps=6):
    fnn.manual_seed(0)
    model = _TinyGPT().to(DEV)
    opt = optim.SGD(list(model.parameters()), lr=0.1)
    tokens = np.random.default_rng(1).integers(0, 8, (16, 13))
    x = fnn.tensor(tokens[:, :-1], device=DEV)
    y = fnn.tensor(tokens[:, 1:].reshape(-1), device=DEV)

    def step(a, b):
        opt.zero_grad()
        loss = F.cross_entropy(model(a), b)
        loss.backward()
        opt.step()
        return loss.detach()

    fn = fnn.compile(step) if compiled else step
    losses = [fn(x, y).numpy() for _ in range(steps)]
    return fn, losses, {n: p.numpy() for n, p in model.named_parameters()}


def test_compiled_tiny_gpt_step_equals_eager(ocl):
    fn, losses, weights = _train(compiled=True)
    _, eager_losses, eager_weights = _train(compiled=False)
    assert fn.stats["replayed"] >= 4  # recorded once, then replayed (the check passed)
    assert all(np.array_equal(a, b) for a, b in zip(losses, eager_losses))
    for name, w in eager_weights.items():
        assert np.array_equal(weights[name], w), name
