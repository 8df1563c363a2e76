"""RNN, the recurrent cells and LSTM's proj_size against PyTorch: a PyTorch state_dict loads,
outputs, final states, input gradients and parameter gradients agree; reverse/apply work."""

import copy

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn
from tests.nn.torch_compare import TOL, compare, devices

torch = pytest.importorskip("torch")
rng = np.random.default_rng(21)


@pytest.fixture(params=[d if d == "cpu" else pytest.param(d, marks=pytest.mark.slow)
                        for d in devices()])  # other backends: --runslow
def device(request):
    return request.param


RNN_CONFIGS = [
    {},
    {"nonlinearity": "relu"},
    {"num_layers": 2, "bidirectional": True, "nonlinearity": "relu", "batch_first": True},
    {"num_layers": 3, "bias": False},
]


@pytest.mark.parametrize("config", RNN_CONFIGS, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_rnn_matches_torch(config, dtype, device):
    torch.manual_seed(0)
    theirs = torch.nn.RNN(3, 4, **config)
    ours = nn.RNN(3, 4, dtype=dtype, device=device, **config)
    x = rng.standard_normal((2, 5, 3) if config.get("batch_first") else (5, 2, 3))
    compare(ours, theirs, [x], dtype, device)


def test_rnn_nonlinearity_is_the_fourth_positional_argument():
    assert nn.RNN(2, 3, 1, "relu").mode == torch.nn.RNN(2, 3, 1, "relu").mode == "RNN_RELU"
    assert repr(nn.RNN(2, 3, nonlinearity="relu")) == "RNN(2, 3)"  # (PyTorch's repr omits it)
    with pytest.raises(ValueError, match="nonlinearity"):
        nn.RNN(2, 3, nonlinearity="sigmoid")


LSTM_PROJ = [
    {"proj_size": 2},
    {"proj_size": 3, "num_layers": 2, "bidirectional": True},
    {"proj_size": 1, "num_layers": 2, "batch_first": True, "bias": False},
]


@pytest.mark.parametrize("config", LSTM_PROJ, ids=str)
def test_lstm_proj_size_matches_torch(config, device):
    torch.manual_seed(1)
    theirs = torch.nn.LSTM(3, 5, **config)
    ours = nn.LSTM(3, 5, dtype="float64", device=device, **config)
    assert {k: v.shape for k, v in ours.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    x = rng.standard_normal((2, 4, 3) if config.get("batch_first") else (4, 2, 3))
    compare(ours, theirs, [x], "float64", device)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_initial_and_final_states_with_their_gradients(kind, batch_first):
    """h_0 (and c_0) in, (h_n, c_n) out: values, shapes, and gradients of h_0/c_0 through a
    loss on the output AND the final state, bidirectional and two layers (LSTM projected)."""
    torch.manual_seed(2)
    extra = {"proj_size": 2} if kind == "LSTM" else {}
    cfg = dict(num_layers=2, bidirectional=True, batch_first=batch_first, **extra)
    theirs = getattr(torch.nn, kind)(3, 4, **cfg).double()
    ours = getattr(nn, kind)(3, 4, dtype=fnn.float64, **cfg)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = rng.standard_normal((2, 5, 3) if batch_first else (5, 2, 3))
    h_size = 2 if kind == "LSTM" else 4
    arrays = [x, rng.standard_normal((4, 2, h_size))]
    if kind == "LSTM":
        arrays.append(rng.standard_normal((4, 2, 4)))
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    f_in = [fnn.tensor(a, requires_grad=True) for a in arrays]
    t_state = tuple(t_in[1:]) if kind == "LSTM" else t_in[1]
    f_state = tuple(f_in[1:]) if kind == "LSTM" else f_in[1]
    t_out, t_final = theirs(t_in[0], t_state)
    f_out, f_final = ours(f_in[0], f_state)
    t_final = t_final if kind == "LSTM" else (t_final,)
    f_final = f_final if kind == "LSTM" else (f_final,)
    tol = TOL["float64"]
    weights = [rng.standard_normal(tuple(t.shape)) for t in (t_out, *t_final)]
    t_loss = sum((t * torch.tensor(w)).sum() for t, w in zip((t_out, *t_final), weights))
    f_loss = sum(((t * fnn.tensor(w)).sum() for t, w in zip((f_out, *f_final), weights)),
                 fnn.tensor(0.0, dtype=fnn.float64))
    for a, b in zip((f_out, *f_final), (t_out, *t_final)):
        assert a.shape == tuple(b.shape)
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), **tol)
    t_loss.backward()
    f_loss.backward()
    for a, b in zip(f_in, t_in):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **tol)
    t_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), t_params[name].grad.numpy(), err_msg=name,
                                   **tol)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_unbatched_input_with_an_initial_state(kind):
    torch.manual_seed(3)
    theirs = getattr(torch.nn, kind)(3, 4, num_layers=2).double()
    ours = getattr(nn, kind)(3, 4, num_layers=2, dtype=fnn.float64)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x, h = rng.standard_normal((6, 3)), rng.standard_normal((2, 4))
    state_t = (torch.tensor(h), torch.tensor(h * 2)) if kind == "LSTM" else torch.tensor(h)
    state_f = (fnn.tensor(h), fnn.tensor(h * 2)) if kind == "LSTM" else fnn.tensor(h)
    t_out, t_final = theirs(torch.tensor(x), state_t)
    f_out, f_final = ours(fnn.tensor(x), state_f)
    np.testing.assert_allclose(f_out.numpy(), t_out.detach().numpy(), **TOL["float64"])
    f_h = f_final[0] if kind == "LSTM" else f_final
    t_h = t_final[0] if kind == "LSTM" else t_final
    assert f_h.shape == (2, 4)
    np.testing.assert_allclose(f_h.numpy(), t_h.detach().numpy(), **TOL["float64"])


def test_dropout_between_layers_only_in_training():
    fnn.manual_seed(4)
    lstm = nn.LSTM(3, 4, num_layers=2, dropout=0.5, dtype=fnn.float64)
    x = fnn.tensor(rng.standard_normal((5, 2, 3)))
    lstm.eval()
    a, b = lstm(x)[0].numpy(), lstm(x)[0].numpy()
    np.testing.assert_array_equal(a, b)
    lstm.train()
    c, d = lstm(x)[0].numpy(), lstm(x)[0].numpy()
    assert not np.allclose(c, a) and not np.allclose(c, d)
    with pytest.warns(UserWarning, match="num_layers=1"):
        nn.GRU(2, 3, dropout=0.2)
    with pytest.raises(ValueError, match="dropout"):
        nn.RNN(2, 3, num_layers=2, dropout=1.5)


def test_bad_shapes_and_options_are_refused():
    with pytest.raises(ValueError, match="proj_size"):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(TypeError):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError, match="h_0 must have shape"):
        nn.RNN(3, 4, num_layers=2)(fnn.randn(5, 2, 3), fnn.randn(1, 2, 4))
    with pytest.raises(ValueError, match="c_0 must have shape"):
        nn.LSTM(3, 4, proj_size=2)(fnn.randn(5, 2, 3), (fnn.randn(1, 2, 2), fnn.randn(1, 2, 2)))
    with pytest.raises(ValueError, match="hx must have shape"):
        nn.GRUCell(3, 4)(fnn.randn(2, 3), fnn.randn(3, 4))
    with pytest.raises(ValueError, match="input must be"):
        nn.RNNCell(3, 4)(fnn.randn(2, 5))
    for kind in ("RNN", "LSTM", "GRU"):  # as PyTorch refuses them, not a NumPy casting error
        with pytest.raises(TypeError, match="input is int64 but the layer's parameters are"):
            getattr(nn, kind)(3, 4)(fnn.zeros(5, 2, 3, dtype=fnn.int64))


CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}),
         ("GRUCell", {}), ("GRUCell", {"bias": False})]


@pytest.mark.parametrize("kind,config", CELLS, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("with_state", [False, True])
def test_cells_match_torch(kind, config, dtype, with_state, device):
    torch.manual_seed(5)
    theirs = getattr(torch.nn, kind)(3, 4, **config)
    ours = getattr(nn, kind)(3, 4, dtype=dtype, device=device, **config)
    assert {k: v.shape for k, v in ours.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    bound = 0.5  # 1 / sqrt(hidden_size)
    assert all(np.abs(v).max() <= bound for v in ours.state_dict().values())
    inputs = [rng.standard_normal((2, 3))]
    if not with_state:
        compare(ours, theirs, inputs, dtype, device)
        return
    inputs += [rng.standard_normal((2, 4)) for _ in range(2 if kind == "LSTMCell" else 1)]
    if kind == "LSTMCell":
        compare(ours, theirs, inputs, dtype, device, lambda mod, x, h, c: mod(x, (h, c)))
    else:
        compare(ours, theirs, inputs, dtype, device)


@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cells_unbatched_and_the_lstm_cell_state(kind):
    torch.manual_seed(6)
    theirs = getattr(torch.nn, kind)(3, 4).double()
    ours = getattr(nn, kind)(3, 4, dtype=fnn.float64)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = rng.standard_normal(3)
    t_out, f_out = theirs(torch.tensor(x)), ours(fnn.tensor(x))
    t_out = t_out if kind == "LSTMCell" else (t_out,)
    f_out = f_out if kind == "LSTMCell" else (f_out,)
    for a, b in zip(f_out, t_out):
        assert a.shape == (4,)
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), **TOL["float64"])


@pytest.mark.parametrize("layer", [
    lambda: nn.RNN(4, 4, num_layers=2, bidirectional=True, dtype=fnn.float64),
    lambda: nn.LSTM(4, 5, proj_size=2, dtype=fnn.float64),
    lambda: nn.LSTMCell(4, 3, dtype=fnn.float64),
    lambda: nn.GRUCell(4, 3, dtype=fnn.float64),
    lambda: nn.RNNCell(4, 3, nonlinearity="relu", dtype=fnn.float64),
], ids=["RNN", "LSTM-proj", "LSTMCell", "GRUCell", "RNNCell"])
def test_reverse_and_apply_equal_the_tape(layer):
    layer = layer()
    twin = copy.deepcopy(layer)
    x = rng.standard_normal((3, 2, 4) if isinstance(layer, (nn.RNN, nn.LSTM)) else (2, 4))
    xt = fnn.tensor(x, requires_grad=True)
    out = layer(xt)
    out = out[0] if isinstance(out, tuple) else out
    g = rng.standard_normal(out.shape)
    out.backward(fnn.tensor(g))
    grad_x, grads = twin.reverse(fnn.tensor(x), fnn.tensor(g))
    np.testing.assert_allclose(grad_x.numpy(), xt.grad.numpy(), rtol=1e-12)
    assert set(grads) == {n for n, _ in layer.named_parameters()}
    for name, p in layer.named_parameters():
        np.testing.assert_allclose(grads[name].numpy(), p.grad.numpy(), rtol=1e-12, atol=1e-14)
    opt = fnn.optim.SGD(twin.parameters(), lr=0.1)
    before = {n: p.numpy().copy() for n, p in twin.named_parameters()}
    twin.apply(opt, grads)
    for name, p in twin.named_parameters():
        np.testing.assert_allclose(p.numpy(), before[name] - 0.1 * grads[name].numpy(),
                                   rtol=1e-12)


def test_all_weights_and_flatten_parameters_as_torch():
    theirs = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    ours = nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    ours.flatten_parameters()  # accepted, as PyTorch scripts call it
    assert [[p.shape for p in group] for group in ours.all_weights] == \
        [[tuple(p.shape) for p in group] for group in theirs.all_weights]
    assert ours.mode == "LSTM" and nn.GRU(2, 3).mode == "GRU"


def _weight_drop(lib, layer, name):
    """AWD-LSTM's WeightDrop: the parameter becomes ``name + '_raw'``, and before each
    forward the layer's attribute is set to a tensor computed from it."""
    raw = getattr(layer, name)
    del layer._parameters[name]
    layer.register_parameter(name + "_raw", lib.nn.Parameter(raw.data))
    setattr(layer, name, getattr(layer, name + "_raw") * 0.5)


@pytest.mark.filterwarnings("ignore:torch.nn.utils.weight_norm is deprecated")
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("how", ["weight_drop", "weight_norm", "orthogonal"])
def test_a_recurrent_weight_swapped_for_a_computed_tensor_is_used(kind, how):
    # PyTorch's layers read their weights as attributes (_flat_weights follow setattr), so
    # WeightDrop and the weight_norm / parametrization wrappers change what they compute
    torch.manual_seed(0)
    theirs = getattr(torch.nn, kind)(3, 4, num_layers=2, bidirectional=True).double()
    ours = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=True, dtype=fnn.float64)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    for lib, layer in ((torch, theirs), (fnn, ours)):
        if how == "weight_drop":
            _weight_drop(lib, layer, "weight_hh_l1_reverse")
        elif how == "weight_norm":
            lib.nn.utils.weight_norm(layer, "weight_hh_l0")
        else:
            lib.nn.utils.parametrizations.orthogonal(layer, "weight_hh_l0")
    assert sorted(n for n, _ in ours.named_parameters()) == \
        sorted(n for n, _ in theirs.named_parameters())
    # orthogonal's base completes a tall weight's Q with random columns: take PyTorch's
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = rng.standard_normal((5, 2, 3))
    t_out, _ = theirs(torch.tensor(x))
    f_out, _ = ours(fnn.tensor(x))
    np.testing.assert_allclose(f_out.detach().numpy(), t_out.detach().numpy(), **TOL["float64"])
    t_out.pow(2).sum().backward()
    f_out.pow(2).sum().backward()
    t_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), t_params[name].grad.numpy(), err_msg=name,
                                   **TOL["float64"])
