"""Embedding, attention, Transformer encoder, LSTM and GRU against PyTorch: a PyTorch
state_dict (as NumPy) loads, and outputs, input gradients and parameter gradients agree,
in float32 and float64 on cpu and opencl."""

import copy

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn
from tests.nn.torch_compare import compare, devices

torch = pytest.importorskip("torch")
DTYPES = ["float32", "float64"]
rng = np.random.default_rng(0)


@pytest.fixture(params=devices())
def device(request):
    return request.param


@pytest.fixture(params=DTYPES)
def dtype(request):
    return request.param


RNN_CONFIGS = [
    {},
    {"num_layers": 2},
    {"bidirectional": True, "batch_first": True},
    {"num_layers": 2, "bidirectional": True, "bias": False},
]


@pytest.mark.parametrize("config", RNN_CONFIGS, ids=str)
@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_recurrent_matches_torch(kind, config, dtype, device):
    torch.manual_seed(0)
    theirs = getattr(torch.nn, kind)(3, 4, **config)
    ours = getattr(nn, kind)(3, 4, dtype=dtype, device=device, **config)
    x = rng.standard_normal((2, 5, 3) if config.get("batch_first") else (5, 2, 3))
    compare(ours, theirs, [x], dtype, device)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_recurrent_initial_state_and_final_state(kind, dtype, device):
    torch.manual_seed(1)
    theirs = getattr(torch.nn, kind)(3, 4, num_layers=2, bidirectional=True).to(
        getattr(torch, dtype))
    ours = getattr(nn, kind)(3, 4, num_layers=2, bidirectional=True, dtype=dtype, device=device)
    ours.load_state_dict({k: v.detach().numpy() for k, v in theirs.state_dict().items()})
    x = rng.standard_normal((5, 2, 3)).astype(dtype)
    h0 = rng.standard_normal((4, 2, 4)).astype(dtype)
    c0 = rng.standard_normal((4, 2, 4)).astype(dtype)
    t_state = (torch.tensor(h0), torch.tensor(c0)) if kind == "LSTM" else torch.tensor(h0)
    f_state = ((fnn.tensor(h0, device=device), fnn.tensor(c0, device=device)) if kind == "LSTM"
               else fnn.tensor(h0, device=device))
    t_out, t_final = theirs(torch.tensor(x), t_state)
    f_out, f_final = ours(fnn.tensor(x, device=device), f_state)
    tol = dict(rtol=2e-4, atol=2e-5) if dtype == "float32" else dict(rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(f_out.numpy(), t_out.detach().numpy(), **tol)
    t_final = t_final if kind == "LSTM" else (t_final,)
    f_final = f_final if kind == "LSTM" else (f_final,)
    for a, b in zip(f_final, t_final):
        assert a.shape == tuple(b.shape)
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), **tol)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_recurrent_unbatched_input(kind):
    torch.manual_seed(2)
    theirs = getattr(torch.nn, kind)(3, 4).double()
    ours = getattr(nn, kind)(3, 4, dtype=fnn.float64)
    out = compare(ours, theirs, [rng.standard_normal((6, 3))], "float64", "cpu")
    assert out.shape == (6, 4)


def test_recurrent_parameter_names_shapes_and_init_range():
    theirs = torch.nn.LSTM(3, 5, num_layers=2, bidirectional=True)
    ours = nn.LSTM(3, 5, num_layers=2, bidirectional=True)
    shapes = {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    assert {k: v.shape for k, v in ours.state_dict().items()} == shapes
    bound = 1 / np.sqrt(5)
    assert all(np.abs(v).max() <= bound for v in ours.state_dict().values())
    assert nn.GRU(2, 3).weight_hh_l0.shape == (9, 3)


MHA_CASES = {
    "plain": ({}, {}),
    "batch_first": ({"batch_first": True}, {}),
    "no_bias": ({"bias": False}, {}),
    "bool_mask": ({}, {"attn_mask": "bool"}),
    "float_mask": ({}, {"attn_mask": "float"}),
    "key_padding": ({}, {"key_padding_mask": True}),
    "padding_and_mask": ({}, {"key_padding_mask": True, "attn_mask": "bool"}),
    "per_head_weights": ({}, {"average_attn_weights": False}),
    "float_mask_and_padding": ({}, {"attn_mask": "float", "key_padding_mask": True}),
    "per_head_mask": ({}, {"attn_mask": "3d"}),
}


@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")  # torch's
@pytest.mark.parametrize("case", list(MHA_CASES))
def test_multihead_attention_matches_torch(case, dtype, device):
    config, call_kw = MHA_CASES[case]
    torch.manual_seed(3)
    theirs = torch.nn.MultiheadAttention(8, 2, **config)
    ours = nn.MultiheadAttention(8, 2, dtype=dtype, device=device, **config)
    batch_first = config.get("batch_first", False)
    q = rng.standard_normal((2, 5, 8) if batch_first else (5, 2, 8))
    kv = rng.standard_normal((2, 6, 8) if batch_first else (6, 2, 8))
    masks_t, masks_f = {}, {}
    if call_kw.get("attn_mask") == "bool":
        mask = rng.uniform(size=(5, 6)) > 0.6
        mask[:, 0] = False  # every query keeps a key (a fully masked row is NaN in both)
        masks_t["attn_mask"], masks_f["attn_mask"] = torch.tensor(mask), fnn.tensor(mask,
                                                                                   device=device)
    elif call_kw.get("attn_mask") == "3d":  # (N * heads, L, S)
        mask = rng.uniform(size=(4, 5, 6)) > 0.6
        mask[..., 0] = False
        masks_t["attn_mask"], masks_f["attn_mask"] = torch.tensor(mask), fnn.tensor(mask,
                                                                                   device=device)
    elif call_kw.get("attn_mask") == "float":
        mask = rng.standard_normal((5, 6)).astype(dtype)
        masks_t["attn_mask"] = torch.tensor(mask)
        masks_f["attn_mask"] = fnn.tensor(mask, device=device)
    if call_kw.get("key_padding_mask"):
        pad = np.array([[False] * 5 + [True], [False] * 3 + [True] * 3])
        masks_t["key_padding_mask"] = torch.tensor(pad)
        masks_f["key_padding_mask"] = fnn.tensor(pad, device=device)
    avg = call_kw.get("average_attn_weights", True)

    def ours_call(m, a, b, c):
        return m(a, b, c, average_attn_weights=avg, **masks_f)

    def torch_call(m, a, b, c):
        return m(a, b, c, average_attn_weights=avg, **masks_t)

    compare(ours, theirs, [q, kv, kv.copy()], dtype, device, ours_call, torch_call)
    # and the attention weights
    ours.zero_grad()
    _, weights = ours(fnn.tensor(q.astype(dtype), device=device),
                      fnn.tensor(kv.astype(dtype), device=device),
                      fnn.tensor(kv.astype(dtype), device=device),
                      average_attn_weights=avg, **masks_f)
    _, t_weights = theirs(torch.tensor(q.astype(dtype)), torch.tensor(kv.astype(dtype)),
                          torch.tensor(kv.astype(dtype)), average_attn_weights=avg, **masks_t)
    np.testing.assert_allclose(weights.numpy(), t_weights.detach().numpy(), rtol=2e-4,
                               atol=2e-5)


def test_multihead_attention_is_causal_builds_the_mask():
    torch.manual_seed(4)
    theirs = torch.nn.MultiheadAttention(4, 2).double()
    ours = nn.MultiheadAttention(4, 2, dtype=fnn.float64)
    causal = torch.nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
    x = rng.standard_normal((5, 3, 4))
    compare(ours, theirs, [x], "float64", "cpu",
            lambda m, t: m(t, t, t, is_causal=True, need_weights=False),
            lambda m, t: m(t, t, t, attn_mask=causal, need_weights=False))
    assert ours(fnn.tensor(x), fnn.tensor(x), fnn.tensor(x), need_weights=False)[1] is None


def test_multihead_attention_unbatched_and_init():
    torch.manual_seed(5)
    ours = nn.MultiheadAttention(6, 3, dtype=fnn.float64)
    bound = np.sqrt(6 / (6 + 18))
    assert np.abs(ours.in_proj_weight.numpy()).max() <= bound
    assert not ours.in_proj_bias.numpy().any() and not ours.out_proj.bias.numpy().any()
    theirs = torch.nn.MultiheadAttention(6, 3).double()
    out = compare(ours, theirs, [rng.standard_normal((4, 6))], "float64", "cpu",
                  lambda m, t: m(t, t, t))
    assert out.shape == (4, 6)


SDPA_CASES = ["none", "bool", "float", "causal", "gqa"]


@pytest.mark.parametrize("mask", SDPA_CASES)
def test_scaled_dot_product_attention_matches_torch(mask, dtype, device):
    import fastnn.functional as F

    q = rng.standard_normal((2, 3, 5, 4)).astype(dtype)
    k = rng.standard_normal((2, 3, 6, 4)).astype(dtype)
    v = rng.standard_normal((2, 3, 6, 2)).astype(dtype)
    kw_t, kw_f = {}, {}
    if mask == "bool":
        m = rng.uniform(size=(5, 6)) > 0.5
        m[:, 1] = True
        kw_t["attn_mask"], kw_f["attn_mask"] = torch.tensor(m), fnn.tensor(m, device=device)
    elif mask == "float":
        m = rng.standard_normal((5, 6)).astype(dtype)
        kw_t["attn_mask"], kw_f["attn_mask"] = torch.tensor(m), fnn.tensor(m, device=device)
    elif mask == "causal":
        kw_t["is_causal"] = kw_f["is_causal"] = True
    elif mask == "gqa":  # grouped-query attention: one key/value head for query's three
        k, v = k[:, :1].copy(), v[:, :1].copy()
        kw_t["enable_gqa"] = kw_f["enable_gqa"] = True
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    fq, fk, fv = (fnn.tensor(a, device=device, requires_grad=True) for a in (q, k, v))
    t_out = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, **kw_t)
    f_out = F.scaled_dot_product_attention(fq, fk, fv, **kw_f)
    tol = dict(rtol=2e-4, atol=2e-5) if dtype == "float32" else dict(rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(f_out.numpy(), t_out.detach().numpy(), **tol)
    g = rng.standard_normal(t_out.shape).astype(dtype)
    t_out.backward(torch.tensor(g))
    f_out.backward(fnn.tensor(g, device=device))
    for a, b in ((fq, tq), (fk, tk), (fv, tv)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **tol)


ENCODER_CASES = {
    "post_norm": {},
    "pre_norm_gelu_batch_first": {"norm_first": True, "activation": "gelu", "batch_first": True},
}


@pytest.mark.parametrize("case", list(ENCODER_CASES))
def test_transformer_encoder_matches_torch(case, dtype, device):
    config = ENCODER_CASES[case]
    torch.manual_seed(6)
    theirs = torch.nn.TransformerEncoder(
        torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **config), 2,
        enable_nested_tensor=False)
    ours = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, dtype=dtype, device=device, **config),
        2)
    assert "layers.1.self_attn.in_proj_weight" in ours.state_dict()
    x = rng.standard_normal((2, 5, 8) if config.get("batch_first") else (5, 2, 8))
    compare(ours, theirs, [x], dtype, device)


def test_transformer_layer_defaults_and_padding_mask():
    layer = nn.TransformerEncoderLayer(8, 2)
    assert layer.linear1.weight.shape == (2048, 8) and layer.dropout.p == 0.1
    assert not layer.norm_first and not layer.batch_first
    torch.manual_seed(7)
    theirs = torch.nn.TransformerEncoderLayer(8, 2, 12, dropout=0.0).double().eval()
    ours = nn.TransformerEncoderLayer(8, 2, 12, dropout=0.0, dtype=fnn.float64)
    pad = np.array([[False, False, True, True], [False] * 4])
    compare(ours, theirs, [rng.standard_normal((4, 2, 8))], "float64", "cpu",
            lambda m, x: m(x, src_key_padding_mask=fnn.tensor(pad)),
            lambda m, x: m(x, src_key_padding_mask=torch.tensor(pad)))


def test_encoder_layers_are_deep_copies():
    layer = nn.TransformerEncoderLayer(4, 2, 8)
    encoder = nn.TransformerEncoder(layer, 2)
    a, b = encoder.layers[0].linear1.weight, encoder.layers[1].linear1.weight
    assert a is not b and a is not layer.linear1.weight
    np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("padding_idx", [None, 1, -2])
def test_embedding_matches_torch(padding_idx, dtype, device):
    torch.manual_seed(8)
    theirs = torch.nn.Embedding(6, 3, padding_idx=padding_idx)
    with torch.no_grad():
        theirs.weight.add_(0.5)  # a non-zero padding row still comes out as it is
    ours = nn.Embedding(6, 3, padding_idx=padding_idx, dtype=dtype, device=device)
    idx = np.array([[0, 1, 4, 1], [4, 5, 3, 1]])
    compare(ours, theirs, [idx], dtype, device)
    if padding_idx is not None:
        assert not ours.weight.grad.numpy()[padding_idx].any()
        fresh = nn.Embedding(6, 3, padding_idx=padding_idx)
        assert not fresh.weight.numpy()[padding_idx].any()


def test_reverse_of_mha_and_rnn_equals_the_tape_of_their_one_tensor_view():
    torch.manual_seed(9)
    x = rng.standard_normal((4, 2, 6))
    g = rng.standard_normal((4, 2, 6))
    for layer, call in ((nn.MultiheadAttention(6, 2, dtype=fnn.float64),
                         lambda m, t: m(t, t, t)[0]),
                        (nn.GRU(6, 6, dtype=fnn.float64), lambda m, t: m(t)[0])):
        twin = copy.deepcopy(layer)
        xt = fnn.tensor(x, requires_grad=True)
        call(layer, xt).backward(fnn.tensor(g))
        grad_x, grads = twin.reverse(fnn.tensor(x), fnn.tensor(g))
        # atol: the tape and reverse take different paths, and an element that cancels
        # to 8e-6 came out 4e-17 apart
        np.testing.assert_allclose(grad_x.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-15)
        for name, p in layer.named_parameters():
            # atol: MHA's call with weights takes the composite, reverse the fused hook;
            # the k bias's gradient is 0 up to rounding (softmax ignores a shift)
            np.testing.assert_allclose(grads[name].numpy(), p.grad.numpy(), rtol=1e-12,
                                       atol=1e-15)



@pytest.fixture(params=[d if d == "cpu" else pytest.param(d, marks=pytest.mark.slow)
                        for d in devices()])  # other backends: --runslow
def cpu_device(request):
    return request.param

MHA_EXTRA = [
    {"kdim": 3, "vdim": 5},
    {"add_bias_kv": True},
    {"add_zero_attn": True, "bias": False},
    {"kdim": 3, "vdim": 5, "add_bias_kv": True, "add_zero_attn": True, "batch_first": True},
]


@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")  # torch's
@pytest.mark.parametrize("config", MHA_EXTRA, ids=str)
@pytest.mark.parametrize("masks", [pytest.param(False, marks=pytest.mark.slow), True])
def test_multihead_attention_kdim_vdim_bias_kv_zero_attn(config, masks, cpu_device):
    device = cpu_device
    torch.manual_seed(10)
    theirs = torch.nn.MultiheadAttention(8, 2, **config)
    ours = nn.MultiheadAttention(8, 2, dtype="float64", device=device, **config)
    assert {k: v.shape for k, v in ours.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
    bf = config.get("batch_first", False)
    kd, vd = config.get("kdim", 8), config.get("vdim", 8)
    q = rng.standard_normal((2, 5, 8) if bf else (5, 2, 8))
    k = rng.standard_normal((2, 6, kd) if bf else (6, 2, kd))
    v = rng.standard_normal((2, 6, vd) if bf else (6, 2, vd))
    kw_t, kw_f = {}, {}
    if masks:
        mask = rng.uniform(size=(5, 6)) > 0.6
        mask[:, 0] = False  # every query keeps a key (fully masked rows: their own test)
        pad = np.array([[False] * 5 + [True], [False] * 3 + [True] * 3])
        kw_t = {"attn_mask": torch.tensor(mask), "key_padding_mask": torch.tensor(pad)}
        kw_f = {"attn_mask": fnn.tensor(mask, device=device),
                "key_padding_mask": fnn.tensor(pad, device=device)}
    compare(ours, theirs, [q, k, v], "float64", device,
            lambda m, a, b, c: m(a, b, c, average_attn_weights=False, **kw_f),
            lambda m, a, b, c: m(a, b, c, average_attn_weights=False, **kw_t))
    _, w = ours(*(fnn.tensor(a, device=device) for a in (q, k, v)), **kw_f)
    _, t_w = theirs(*(torch.tensor(a) for a in (q, k, v)), **kw_t)
    np.testing.assert_allclose(w.numpy(), t_w.detach().numpy(), rtol=1e-9, atol=1e-11)


def test_multihead_attention_positional_arguments_follow_torch():
    mha = nn.MultiheadAttention(8, 2, 0.0, True, True, False, 4, 6)
    assert mha.bias_k.shape == (1, 1, 8) and not mha.batch_first
    assert mha.k_proj_weight.shape == (8, 4) and mha.v_proj_weight.shape == (8, 6)
    assert mha.in_proj_weight is None and "in_proj_weight" not in mha.state_dict()


@pytest.mark.filterwarnings("ignore:invalid value encountered")  # need_weights=True: NaN
@pytest.mark.parametrize("float_mask", [False, True])
def test_a_fully_masked_row_is_zero_as_torchs_safe_softmax(float_mask, cpu_device):
    """torch 2.13: scaled_dot_product_attention and MultiheadAttention(need_weights=False)
    give zeros (and finite gradients) for a query with every key masked out, MHA with
    need_weights=True gives NaN; fastnn the same."""
    import fastnn.functional as F

    device = cpu_device
    allowed = np.ones((3, 3), bool)
    allowed[1] = False
    mask = np.where(allowed, 0.0, -np.inf) if float_mask else allowed
    q = rng.standard_normal((2, 3, 4))
    tq, fq = torch.tensor(q, requires_grad=True), fnn.tensor(q, device=device,
                                                           requires_grad=True)
    t_out = torch.nn.functional.scaled_dot_product_attention(tq, tq, tq,
                                                             attn_mask=torch.tensor(mask))
    f_out = F.scaled_dot_product_attention(fq, fq, fq, attn_mask=fnn.tensor(mask, device=device))
    assert not f_out.numpy()[:, 1].any()
    t_out.sum().backward()
    f_out.sum().backward()
    np.testing.assert_allclose(f_out.numpy(), t_out.detach().numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fq.grad.numpy(), tq.grad.numpy(), rtol=1e-9, atol=1e-12)
    torch.manual_seed(11)
    theirs = torch.nn.MultiheadAttention(4, 2).double()
    ours = nn.MultiheadAttention(4, 2, dtype=fnn.float64, device=device)
    x = rng.standard_normal((3, 2, 4))
    masked_out = ~allowed if not float_mask else mask
    compare(ours, theirs, [x], "float64", device,
            lambda m, t: m(t, t, t, attn_mask=fnn.tensor(masked_out, device=device),
                           need_weights=False),
            lambda m, t: m(t, t, t, attn_mask=torch.tensor(masked_out), need_weights=False))
    with_weights = ours(*(fnn.tensor(x, device=device),) * 3,
                        attn_mask=fnn.tensor(masked_out, device=device))[0]
    assert np.isnan(with_weights.numpy()[1]).all()


@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")  # torch's
def test_left_padding_with_a_causal_mask_stays_finite_in_a_decoder():
    """A padded first position under a causal mask has no key: torch gives finite outputs."""
    torch.manual_seed(12)
    theirs = torch.nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0).double()
    ours = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, dtype=fnn.float64)
    causal_t = torch.nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    causal_f = nn.Transformer.generate_square_subsequent_mask(4, dtype=fnn.float64)
    pad = np.array([[True, False, False, False], [False] * 4])
    tgt, memory = rng.standard_normal((4, 2, 8)), rng.standard_normal((5, 2, 8))
    out = compare(ours, theirs, [tgt, memory], "float64", "cpu",
                  lambda m, a, b: m(a, b, tgt_mask=causal_f,
                                    tgt_key_padding_mask=fnn.tensor(pad)),
                  lambda m, a, b: m(a, b, tgt_mask=causal_t,
                                    tgt_key_padding_mask=torch.tensor(pad)))
    assert np.isfinite(out.numpy()).all()
