"""Packed sequences (fastnn.nn.utils.rnn) and RNN/LSTM/GRU on them against PyTorch: the
packed data, batch sizes and orders, outputs, h_n (and c_n), and gradients of the padded
input, h_0 and every parameter."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn
from fastnn.nn.utils import rnn as frnn
from tests.nn.torch_compare import TOL

torch = pytest.importorskip("torch")
trnn = pytest.importorskip("torch.nn.utils.rnn")
rng = np.random.default_rng(61)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_recurrent_layers_on_packed_sequences_match_torch(kind, bidirectional, batch_first):
    torch.manual_seed(0)
    cfg = dict(num_layers=2, bidirectional=bidirectional, batch_first=batch_first)
    theirs = getattr(torch.nn, kind)(2, 4, **cfg).double()
    ours = getattr(nn, kind)(2, 4, dtype=fnn.float64, **cfg)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    lengths = [2, 5, 3]  # unsorted
    x = rng.standard_normal((3, 5, 2) if batch_first else (5, 3, 2))
    h0 = rng.standard_normal((4 if bidirectional else 2, 3, 4))
    tx, fx = torch.tensor(x, requires_grad=True), fnn.tensor(x, requires_grad=True)
    th0, fh0 = torch.tensor(h0, requires_grad=True), fnn.tensor(h0, requires_grad=True)
    t_packed = trnn.pack_padded_sequence(tx, lengths, batch_first, enforce_sorted=False)
    f_packed = frnn.pack_padded_sequence(fx, lengths, batch_first, enforce_sorted=False)
    np.testing.assert_array_equal(f_packed.data.numpy(), t_packed.data.detach().numpy())
    assert f_packed.batch_sizes.numpy().tolist() == t_packed.batch_sizes.tolist()
    assert f_packed.sorted_indices.numpy().tolist() == t_packed.sorted_indices.tolist()
    t_state = (th0, th0 * 0.5) if kind == "LSTM" else th0
    f_state = (fh0, fh0 * 0.5) if kind == "LSTM" else fh0
    t_out, t_final = theirs(t_packed, t_state)
    f_out, f_final = ours(f_packed, f_state)
    assert isinstance(f_out, frnn.PackedSequence)
    t_pad, t_len = trnn.pad_packed_sequence(t_out, batch_first, total_length=6)
    f_pad, f_len = frnn.pad_packed_sequence(f_out, batch_first, total_length=6)
    assert f_len.numpy().tolist() == t_len.tolist() == lengths
    t_final = t_final if kind == "LSTM" else (t_final,)
    f_final = f_final if kind == "LSTM" else (f_final,)
    tol = TOL["float64"]
    for a, b in zip((f_pad, *f_final), (t_pad, *t_final)):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), **tol)
    weights = [rng.standard_normal(tuple(t.shape)) for t in (t_pad, *t_final)]
    sum((t * torch.tensor(w)).sum() for t, w in zip((t_pad, *t_final), weights)).backward()
    f_loss = fnn.tensor(0.0, dtype=fnn.float64)
    for t, w in zip((f_pad, *f_final), weights):
        f_loss = f_loss + (t * fnn.tensor(w)).sum()
    f_loss.backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), **tol)
    np.testing.assert_allclose(fh0.grad.numpy(), th0.grad.numpy(), **tol)
    t_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), t_params[name].grad.numpy(), err_msg=name,
                                   **tol)


def test_pad_and_pack_sequence_helpers():
    seqs = [rng.standard_normal((n, 3)) for n in (4, 2, 3)]
    for batch_first in (False, True):
        for side in ("right", "left"):
            a = frnn.pad_sequence([fnn.tensor(s) for s in seqs], batch_first, -1.0, side)
            b = trnn.pad_sequence([torch.tensor(s) for s in seqs], batch_first, -1.0, side)
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    f_packed = frnn.pack_sequence([fnn.tensor(s) for s in seqs], enforce_sorted=False)
    t_packed = trnn.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    np.testing.assert_array_equal(f_packed.data.numpy(), t_packed.data.numpy())
    assert f_packed.unsorted_indices.numpy().tolist() == t_packed.unsorted_indices.tolist()
    padded = frnn.pad_sequence([fnn.tensor(s) for s in seqs])
    for a, b in zip(frnn.unpad_sequence(padded, [4, 2, 3]), seqs):
        np.testing.assert_array_equal(a.numpy(), b)
    with pytest.raises(RuntimeError, match="enforce_sorted"):
        frnn.pack_padded_sequence(padded, [2, 4, 3])
    with pytest.raises(ValueError, match="greater than 0"):
        frnn.pack_padded_sequence(padded, [4, 0, 3], enforce_sorted=False)


def test_packed_data_of_another_dtype_is_refused():
    packed = frnn.pack_sequence([fnn.randn(3, 2, dtype=fnn.float64)])
    with pytest.raises(TypeError, match="packed data is float64"):
        nn.GRU(2, 3)(packed)


def test_unpack_sequence_and_packed_sequence_methods_follow_torch():
    seqs = [rng.standard_normal((n, 3)).astype(np.float32) for n in (2, 4, 3)]
    f_packed = frnn.pack_sequence([fnn.tensor(s) for s in seqs], enforce_sorted=False)
    t_packed = trnn.pack_sequence([torch.tensor(s) for s in seqs], enforce_sorted=False)
    for a, b in zip(frnn.unpack_sequence(f_packed), trnn.unpack_sequence(t_packed)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # PyTorch's constructor fills unsorted_indices from sorted_indices
    rebuilt = frnn.PackedSequence(f_packed.data, f_packed.batch_sizes, f_packed.sorted_indices)
    theirs = trnn.PackedSequence(t_packed.data, t_packed.batch_sizes, t_packed.sorted_indices)
    assert rebuilt.unsorted_indices.tolist() == theirs.unsorted_indices.tolist()
    assert frnn.invert_permutation(None) is None
    perm = [2, 0, 3, 1]
    assert (frnn.invert_permutation(fnn.tensor(perm)).tolist()
            == trnn.invert_permutation(torch.tensor(perm)).tolist())
    # the Tensor-like moves and casts a script calls on a packed batch
    assert f_packed.to("cpu") is f_packed and f_packed.cpu() is f_packed
    assert f_packed.is_cuda is t_packed.is_cuda is False
    for cast in ("double", "float", "half", "long", "int", "short", "char", "byte"):
        ours, theirs = getattr(f_packed, cast)(), getattr(t_packed, cast)()
        assert ours.data.dtype.name == str(theirs.data.dtype).removeprefix("torch.")
        assert ours.sorted_indices.tolist() == theirs.sorted_indices.tolist()
        assert ours.batch_sizes.tolist() == theirs.batch_sizes.tolist()
    assert f_packed.to(fnn.float64).data.dtype == fnn.float64
