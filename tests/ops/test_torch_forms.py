"""fastnn.ops.torch_forms: ``torch.NAME`` with ATen's arguments (torch.embedding(weight,
indices), torch.batch_norm's order, losses with an int reduction that PyTorch's binding
leaves unreduced by default), against PyTorch's values, dtypes and gradients."""

import warnings

import numpy as np
import pytest

import fastnn as fnn

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 3)).astype(np.float32)
B = RNG.standard_normal((4, 3)).astype(np.float32)
C = RNG.standard_normal((4, 3)).astype(np.float32)
V = RNG.standard_normal(4).astype(np.float32)
P = RNG.uniform(0.1, 0.9, (4, 3)).astype(np.float32)
SIGN = np.array([1, -1, 1, -1])
IMG = RNG.standard_normal((2, 3, 4, 5)).astype(np.float32)
SEQ = RNG.standard_normal((2, 3, 8)).astype(np.float32)
VOL = RNG.standard_normal((1, 2, 4, 4, 4)).astype(np.float32)
W3, B3 = RNG.standard_normal(3).astype(np.float32), RNG.standard_normal(3).astype(np.float32)
MEAN3, VAR3 = RNG.standard_normal(3).astype(np.float32), RNG.uniform(0.5, 2, 3).astype(
    np.float32)
TABLE = RNG.standard_normal((6, 3)).astype(np.float32)
IDX = np.array([[0, 2, 5], [2, 2, 1]])

CASES = {  # name -> (fn(module, *tensors), arrays)
    "kl_div": (lambda m, a, b: m.kl_div(a, b), (A, P)),
    "kl_div mean": (lambda m, a, b: m.kl_div(a, b, 1), (A, P)),
    "kl_div sum log_target": (lambda m, a, b: m.kl_div(a, b, 2, log_target=True), (A, B)),
    "bce_with_logits": (lambda m, a, b: m.binary_cross_entropy_with_logits(a, b), (A, P)),
    "bce_with_logits weights": (lambda m, a, b: m.binary_cross_entropy_with_logits(
        a, b, m.tensor(P[0]), m.tensor(W3), 1), (A, P)),
    "cosine_embedding_loss": (lambda m, a, b, y: m.cosine_embedding_loss(a, b, y, 0.1),
                              (A, B, SIGN)),
    "cosine_embedding_loss sum": (lambda m, a, b, y: m.cosine_embedding_loss(a, b, y, 0.1, 2),
                                  (A, B, SIGN)),
    "margin_ranking_loss": (lambda m, a, b, y: m.margin_ranking_loss(a, b, y, 0.5),
                            (V, V[::-1].copy(), SIGN)),
    "hinge_embedding_loss": (lambda m, a, y: m.hinge_embedding_loss(a, y, 1.0, 1),
                             (V, SIGN)),
    "hinge_embedding_loss none": (lambda m, a, y: m.hinge_embedding_loss(a, y), (V, SIGN)),
    "poisson_nll_loss": (lambda m, a, b: m.poisson_nll_loss(a, b, True, False, 1e-8, 1),
                         (A, P)),
    "poisson_nll_loss full": (lambda m, a, b: m.poisson_nll_loss(b, a * a, False, True, 1e-8, 0),
                              (A, P)),
    "triplet_margin_loss": (lambda m, a, b, c: m.triplet_margin_loss(a, b, c), (A, B, C)),
    "triplet_margin_loss swap": (lambda m, a, b, c: m.triplet_margin_loss(
        a, b, c, 0.5, 1.0, 1e-6, True, 2), (A, B, C)),
    "embedding": (lambda m, w, i: m.embedding(w, i), (TABLE, IDX)),
    "embedding padding": (lambda m, w, i: m.embedding(w, i, 2), (TABLE, IDX)),
    "layer_norm": (lambda m, x, w, b: m.layer_norm(x, [3], w, b, 1e-5, True), (A, W3, B3)),
    "group_norm": (lambda m, x, w, b: m.group_norm(x, 3, w, b, 1e-5, True), (IMG, W3, B3)),
    "batch_norm eval": (lambda m, x, w, b: m.batch_norm(x, w, b, m.tensor(MEAN3),
                                                         m.tensor(VAR3), False, 0.1, 1e-5, True),
                        (IMG, W3, B3)),
    "batch_norm train": (lambda m, x, w, b: m.batch_norm(x, w, b, None, None, True, 0.1, 1e-5,
                                                         True), (IMG, W3, B3)),
    "instance_norm": (lambda m, x, w, b: m.instance_norm(x, w, b, None, None, True, 0.1, 1e-5,
                                                         True), (IMG, W3, B3)),
    "adaptive_avg_pool1d": (lambda m, x: m.adaptive_avg_pool1d(x, 3), (SEQ,)),
    "adaptive_max_pool1d": (lambda m, x: m.adaptive_max_pool1d(x, 3), (SEQ,)),
    "max_pool3d": (lambda m, x: m.max_pool3d(x, 2), (VOL,)),
    "max_pool3d strided": (lambda m, x: m.max_pool3d(x, 3, 1, 1), (VOL,)),
    "max_pool1d_with_indices": (lambda m, x: m.max_pool1d_with_indices(x, 3, 2), (SEQ,)),
    "pdist": (lambda m, x: m.pdist(x), (A,)),
    "constant_pad_nd": (lambda m, x: m.constant_pad_nd(x, [1, 2, 0, 1], 3.5), (A,)),
    "constant_pad_nd crop": (lambda m, x: m.constant_pad_nd(x, [1, -1]), (A,)),
    "conv_tbc": (lambda m, x, w, b: m.conv_tbc(x, w, b, 1),
                 (SEQ.transpose(2, 0, 1).copy(), RNG.standard_normal((3, 3, 2)).astype(
                     np.float32), W3[:2].copy())),
    "chain_matmul": (lambda m, a, b, c: m.chain_matmul(a, b.T, c), (A, B, C)),
    "alpha_dropout eval": (lambda m, x: m.alpha_dropout(x, 0.3, False), (A,)),
    "feature_alpha_dropout eval": (lambda m, x: m.feature_alpha_dropout(x, 0.3, False), (A,)),
    "feature_dropout eval": (lambda m, x: m.feature_dropout(x, 0.3, False), (IMG,)),
}


def _tensors(module, arrays):
    return [module.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]


def _pieces(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


@pytest.mark.parametrize("name", sorted(CASES))
def test_top_level_form_matches_torch(name):
    fn, arrays = CASES[name]
    ours_in, theirs_in = _tensors(fnn, arrays), _tensors(torch, arrays)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # chain_matmul's deprecation, both sides
        ours, theirs = _pieces(fn(fnn, *ours_in)), _pieces(fn(torch, *theirs_in))
    assert len(ours) == len(theirs)
    for o, t in zip(ours, theirs):
        assert o.shape == tuple(t.shape), name
        assert o.dtype.name == str(t.dtype).rpartition(".")[2], name
        np.testing.assert_allclose(o.detach().numpy(), t.detach().numpy(), rtol=1e-4,
                                   atol=1e-5)
    weights = RNG.standard_normal(ours[0].shape).astype(np.float32)
    (ours[0] * fnn.tensor(weights)).sum().backward()
    (theirs[0] * torch.tensor(weights)).sum().backward()
    for o, t in zip(ours_in, theirs_in):
        if t.grad is not None:
            np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_in_place_dropouts_and_checks():
    x = fnn.ones(4, 6)
    assert fnn.dropout_(x, 0.5, True) is x
    assert set(np.unique(x.numpy())) <= {0.0, 2.0}
    y = fnn.ones(2, 3, 4)
    assert fnn.feature_dropout_(y, 0.5, True) is y
    per_channel = y.numpy()
    assert (per_channel == per_channel[..., :1]).all()  # whole channels kept or dropped
    assert fnn.alpha_dropout_(fnn.ones(3), 0.2, False).tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(TypeError):
        fnn.alpha_dropout(fnn.ones(3), 0.2)  # train is required, as ATen's
    with pytest.raises(ValueError, match="reduction must be 0"):
        fnn.kl_div(fnn.zeros(2), fnn.zeros(2), 3)
    assert fnn.is_signed(fnn.zeros(2)) is torch.is_signed(torch.zeros(2)) is True
    assert fnn.is_signed(fnn.zeros(2, dtype=fnn.uint8)) is False
    with pytest.warns(UserWarning, match="chain_matmul is deprecated"):
        fnn.chain_matmul(fnn.eye(2), fnn.eye(2))
