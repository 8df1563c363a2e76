"""TransformerDecoderLayer, TransformerDecoder and Transformer against PyTorch: a PyTorch
state_dict loads, outputs and gradients (of tgt, memory / src and every parameter) agree
with masks, padding and causal flags; reverse/apply work with the extra input."""

import copy
import inspect

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn
from tests.nn.torch_compare import TOL, compare, devices

torch = pytest.importorskip("torch")
rng = np.random.default_rng(31)
LAYER_NORM_BIAS = "bias" in inspect.signature(nn.LayerNorm).parameters


@pytest.fixture(params=[d if d == "cpu" else pytest.param(d, marks=pytest.mark.slow)
                        for d in devices()])  # other backends: --runslow
def device(request):
    return request.param


def _masks(t, s, batch, device, float_tgt=False):
    """A causal tgt mask, a random memory mask and padding masks: (torch's, fastnn's)."""
    causal = np.triu(np.ones((t, t), bool), 1)
    memory = rng.uniform(size=(t, s)) > 0.6
    memory[:, 0] = False  # every query keeps a key (a fully masked row is NaN in both)
    tgt_pad = np.zeros((batch, t), bool)
    tgt_pad[1, -1] = True
    mem_pad = np.zeros((batch, s), bool)
    mem_pad[0, -2:] = True
    tgt_mask = np.where(causal, -np.inf, 0.0) if float_tgt else causal
    arrays = {"tgt_mask": tgt_mask, "memory_mask": memory, "tgt_key_padding_mask": tgt_pad,
              "memory_key_padding_mask": mem_pad}
    return ({k: torch.tensor(v) for k, v in arrays.items()},
            {k: fnn.tensor(v, device=device) for k, v in arrays.items()})


DECODER_CASES = {
    "post_norm": {},
    "pre_norm_gelu_batch_first": {"norm_first": True, "activation": "gelu", "batch_first": True},
    "no_bias": {"bias": False},
}


def _matrix(cases, fast, flags=(False, True)):
    """Every (case, flag, dtype); all but the ``fast`` ones are marked slow (--runslow)."""
    return [pytest.param(c, f, d, marks=() if (c, f, d) in fast else pytest.mark.slow)
            for c in cases for f in flags for d in ("float32", "float64")]


@pytest.mark.filterwarnings("ignore:Support for mismatched")  # torch's mask-type warnings
@pytest.mark.parametrize("case,masked,dtype", _matrix(DECODER_CASES, {
    ("post_norm", True, "float32"), ("pre_norm_gelu_batch_first", True, "float64"),
    ("no_bias", False, "float64")}))
def test_decoder_layer_matches_torch(case, masked, dtype, device):
    config = DECODER_CASES[case]
    if config.get("bias") is False and not LAYER_NORM_BIAS:
        pytest.skip("LayerNorm(bias=False) is not in this tree yet")
    torch.manual_seed(0)
    theirs = torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, **config)
    ours = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, dtype=dtype, device=device,
                                      **config)
    bf = config.get("batch_first", False)
    tgt = rng.standard_normal((2, 4, 8) if bf else (4, 2, 8))
    memory = rng.standard_normal((2, 5, 8) if bf else (5, 2, 8))
    kw_t, kw_f = _masks(4, 5, 2, device, float_tgt=dtype == "float64") if masked else ({}, {})
    compare(ours, theirs, [tgt, memory], dtype, device,
            lambda m, a, b: m(a, b, **kw_f), lambda m, a, b: m(a, b, **kw_t))


@pytest.mark.parametrize("norm", [False, True])
def test_decoder_stack_with_is_causal(norm, device):
    torch.manual_seed(1)
    t_norm = torch.nn.LayerNorm(8) if norm else None
    theirs = torch.nn.TransformerDecoder(
        torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), 2, t_norm)
    ours = nn.TransformerDecoder(
        nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, dtype=fnn.float64, device=device), 2,
        nn.LayerNorm(8, dtype=fnn.float64, device=device) if norm else None)
    mask_t = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    mask_f = nn.Transformer.generate_square_subsequent_mask(4, dtype=fnn.float64, device=device)
    np.testing.assert_array_equal(mask_f.numpy(), mask_t.numpy())
    tgt, memory = rng.standard_normal((4, 3, 8)), rng.standard_normal((6, 3, 8))
    compare(ours, theirs, [tgt, memory], "float64", device,
            lambda m, a, b: m(a, b, tgt_mask=mask_f, tgt_is_causal=True),
            lambda m, a, b: m(a, b, tgt_mask=mask_t, tgt_is_causal=True))
    # the flag alone builds the same mask
    ours.zero_grad()
    a, b = fnn.tensor(tgt, device=device), fnn.tensor(memory, device=device)
    np.testing.assert_allclose(ours(a, b, tgt_is_causal=True).numpy(),
                               ours(a, b, tgt_mask=mask_f).numpy(), rtol=1e-12)


TRANSFORMER_CASES = {
    "post_norm": {},
    "pre_norm_batch_first": {"norm_first": True, "batch_first": True, "activation": "gelu"},
}


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")  # torch's
@pytest.mark.filterwarnings("ignore:Support for mismatched")
@pytest.mark.parametrize("case,_,dtype", _matrix(TRANSFORMER_CASES, {
    ("post_norm", True, "float32"), ("pre_norm_batch_first", True, "float64")}, (True,)))
def test_transformer_matches_torch(case, _, dtype, device):
    config = TRANSFORMER_CASES[case]
    torch.manual_seed(2)
    theirs = torch.nn.Transformer(8, 2, 2, 1, 16, dropout=0.0, **config)
    ours = nn.Transformer(8, 2, 2, 1, 16, dropout=0.0, dtype=dtype, device=device, **config)
    bf = config.get("batch_first", False)
    src = rng.standard_normal((2, 5, 8) if bf else (5, 2, 8))
    tgt = rng.standard_normal((2, 4, 8) if bf else (4, 2, 8))
    kw_t, kw_f = _masks(4, 5, 2, device)
    src_pad = np.array([[False] * 4 + [True], [False] * 5])
    kw_t["src_key_padding_mask"] = torch.tensor(src_pad)
    kw_f["src_key_padding_mask"] = fnn.tensor(src_pad, device=device)
    compare(ours, theirs, [src, tgt], dtype, device,
            lambda m, a, b: m(a, b, **kw_f), lambda m, a, b: m(a, b, **kw_t))


def test_transformer_defaults_init_and_errors():
    model = nn.Transformer(16, 4, 1, 2, 32)
    assert model.encoder.norm is not None and model.decoder.norm is not None
    assert len(model.decoder.layers) == 2 and model.decoder.layers[0].dropout.p == 0.1
    w = model.encoder.layers[0].linear1.weight.numpy()
    bound = np.sqrt(6 / (16 + 32))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound  # xavier-uniform
    with torch.no_grad():
        theirs = torch.nn.Transformer(16, 4, 1, 2, 32)
    assert list(model.state_dict()) == list(theirs.state_dict())
    with pytest.raises(RuntimeError, match="batch sizes"):
        model(fnn.randn(5, 2, 16), fnn.randn(4, 3, 16))
    with pytest.raises(RuntimeError, match="d_model"):
        model(fnn.randn(5, 2, 8), fnn.randn(4, 2, 8))
    with pytest.raises(ValueError, match="activation"):
        nn.TransformerDecoderLayer(8, 2, activation="swish")
    custom = nn.Transformer(8, 2, custom_encoder=nn.Identity(), num_decoder_layers=1,
                            dim_feedforward=8)
    assert "encoder.layers.0.linear1.weight" not in custom.state_dict()


def test_unbatched_transformer():
    torch.manual_seed(3)
    theirs = torch.nn.Transformer(8, 2, 1, 1, 16, dropout=0.0).double()
    ours = nn.Transformer(8, 2, 1, 1, 16, dropout=0.0, dtype=fnn.float64)
    out = compare(ours, theirs, [rng.standard_normal((5, 8)), rng.standard_normal((3, 8))],
                  "float64", "cpu")
    assert out.shape == (3, 8)


@pytest.mark.parametrize("kind", ["layer", "stack", "transformer"])
def test_reverse_with_the_second_input(kind):
    fnn.manual_seed(4)
    layer = nn.TransformerDecoderLayer(6, 2, 12, dropout=0.0, dtype=fnn.float64)
    module = {"layer": layer, "stack": nn.TransformerDecoder(layer, 2),
              "transformer": nn.Transformer(6, 2, 1, 1, 12, dropout=0.0,
                                            dtype=fnn.float64)}[kind]
    twin = copy.deepcopy(module)
    x, other = rng.standard_normal((4, 2, 6)), rng.standard_normal((3, 2, 6))
    if kind == "transformer":  # x is src, the output is shaped like tgt
        x, other = other, x
    xt = fnn.tensor(x, requires_grad=True)
    out = module(xt, fnn.tensor(other))
    g = rng.standard_normal(out.shape)
    out.backward(fnn.tensor(g))
    grad_x, grads = twin.reverse(fnn.tensor(x), fnn.tensor(g), fnn.tensor(other))
    np.testing.assert_allclose(grad_x.numpy(), xt.grad.numpy(), rtol=1e-10, atol=1e-13)
    for name, p in module.named_parameters():
        np.testing.assert_allclose(grads[name].numpy(), p.grad.numpy(), rtol=1e-10,
                                   atol=1e-13, err_msg=name)
    opt = fnn.optim.SGD(twin.parameters(), lr=0.5)
    twin.apply(opt, grads)
    name, p = next(iter(twin.named_parameters()))
    np.testing.assert_allclose(p.numpy(), dict(module.named_parameters())[name].numpy()
                               - 0.5 * grads[name].numpy(), rtol=1e-12)
    with pytest.raises(TypeError, match="give the"):
        twin.reverse(fnn.tensor(x), fnn.tensor(g))


def test_encoder_accepts_torch_options_and_causal_detection():
    torch.manual_seed(5)
    theirs = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16, 0.0), 2,
                                         enable_nested_tensor=False, mask_check=False)
    ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, 0.0, dtype=fnn.float64),
                                 2, enable_nested_tensor=False, mask_check=False)
    mask_t = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    mask_f = nn.Transformer.generate_square_subsequent_mask(5, dtype=fnn.float64)
    compare(ours, theirs, [rng.standard_normal((5, 2, 8))], "float64", "cpu",
            lambda m, x: m(x, mask=mask_f), lambda m, x: m(x, mask=mask_t))
    grad_x, grads = ours.reverse(fnn.tensor(rng.standard_normal((5, 2, 8))),
                                 fnn.tensor(rng.standard_normal((5, 2, 8))), mask=mask_f)
    assert grad_x.shape == (5, 2, 8) and set(grads) == {n for n, _ in ours.named_parameters()}
    assert TOL  # the shared tolerances are the ones compare() uses


NESTED_PADDING = {  # (N, T) = (3, 5); True: padded
    "left_aligned": [[0, 0, 0, 1, 1], [0, 0, 0, 0, 0], [0, 1, 1, 1, 1]],
    "a_row_all_padding": [[0, 0, 0, 1, 1], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]],
    "not_left_aligned": [[0, 1, 0, 0, 0], [0, 0, 0, 0, 0], [0, 1, 1, 1, 1]],
}


@pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")
@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
@pytest.mark.parametrize("padding", list(NESTED_PADDING))
@pytest.mark.parametrize("call", ["no_grad", "frozen", "float_mask", "no_mask_check",
                                  "src_requires_grad", "train", "norm_first", "seq_first"])
def test_encoder_zeroes_padded_frames_where_torch_takes_its_nested_path(padding, call):
    # PyTorch's encoder in eval with a padding mask and nothing to differentiate runs on
    # nested tensors: the padded frames come out 0 (the final norm's bias after it)
    if (call, padding) == ("norm_first", "a_row_all_padding"):
        pytest.skip("PyTorch's fused eval layer gives NaN for a sequence of padding alone "
                    "where its own training path (and fastnn) attend to nothing: 0")
    torch.manual_seed(0)
    layer_kw = {"dim_feedforward": 16, "dropout": 0.0, "batch_first": call != "seq_first",
                "norm_first": call == "norm_first"}
    theirs = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(8, 2, **layer_kw), 2,
        norm=torch.nn.LayerNorm(8), mask_check=call != "no_mask_check").double()
    ours = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dtype=fnn.float64, **layer_kw),
                                 2, norm=nn.LayerNorm(8, dtype=fnn.float64),
                                 mask_check=call != "no_mask_check")
    with torch.no_grad():
        theirs.norm.bias.fill_(0.5)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    for model in (theirs, ours):
        model.train(call == "train")
        model.requires_grad_(call != "frozen")
    x = rng.standard_normal((3, 5, 8) if call != "seq_first" else (5, 3, 8))
    mask = np.array(NESTED_PADDING[padding], bool)
    if call == "float_mask":
        mask = np.where(mask, -1e9, 0.0)
    grad = call in ("frozen", "src_requires_grad")
    tx = torch.tensor(x, requires_grad=call == "src_requires_grad")
    fx = fnn.tensor(x, requires_grad=call == "src_requires_grad")
    with torch.set_grad_enabled(grad):
        expected = theirs(tx, src_key_padding_mask=torch.tensor(mask)).detach().numpy()
    with fnn.set_grad_enabled(grad):
        got = ours(fx, src_key_padding_mask=fnn.tensor(mask)).detach().numpy()
    np.testing.assert_allclose(got, expected, **TOL["float64"], equal_nan=True)


def _weight_keeping(base):
    """The usual recipe to get a transformer layer's attention weights: a subclass whose
    ``_sa_block`` (PyTorch's name) asks for them and keeps them."""

    class Keeping(base):
        def _sa_block(self, x, attn_mask, key_padding_mask, is_causal=False):
            out, self.kept = self.self_attn(x, x, x, attn_mask=attn_mask,
                                            key_padding_mask=key_padding_mask,
                                            need_weights=True, average_attn_weights=False)
            return self.dropout1(out * 0.5)

        def _ff_block(self, x):
            return super()._ff_block(x) * 2.0

    return Keeping


@pytest.mark.parametrize("kind", ["Encoder", "Decoder"])
def test_a_subclass_overriding_the_attention_block_changes_forward(kind):
    torch.manual_seed(0)
    theirs = _weight_keeping(getattr(torch.nn, f"Transformer{kind}Layer"))(
        8, 2, 16, 0.0, batch_first=True).double()
    ours = _weight_keeping(getattr(nn, f"Transformer{kind}Layer"))(
        8, 2, 16, 0.0, batch_first=True, dtype=fnn.float64)
    ours.load_state_dict({k: v.numpy() for k, v in theirs.state_dict().items()})
    x, memory = rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 4, 8))
    args_t, args_f = [torch.tensor(x)], [fnn.tensor(x)]
    if kind == "Decoder":
        args_t.append(torch.tensor(memory))
        args_f.append(fnn.tensor(memory))
    np.testing.assert_allclose(ours(*args_f).detach().numpy(), theirs(*args_t).detach().numpy(),
                               **TOL["float64"])
    assert ours.kept.shape == tuple(theirs.kept.shape) == (2, 2, 5, 5)
    np.testing.assert_allclose(ours.kept.detach().numpy(), theirs.kept.detach().numpy(),
                               **TOL["float64"])
