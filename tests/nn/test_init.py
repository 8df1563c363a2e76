"""fastnn.nn.init against torch.nn.init: gains, fans, bounds and spreads, exact fills,
orthogonality, truncation, seeding, in-place writes through views, on every device."""

import math

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn
from fastnn.nn import init
from tests.nn.torch_compare import devices


@pytest.fixture(params=devices())
def device(request):
    return request.param


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def empty(*shape, device="cpu", dtype="float32"):
    return fnn.zeros(*shape, device=device, dtype=dtype)


# ---------------------------------------------------------------- gains and fans

GAINS = [("linear", None), ("conv1d", None), ("conv2d", None), ("conv3d", None),
         ("conv_transpose1d", None), ("conv_transpose2d", None), ("conv_transpose3d", None),
         ("sigmoid", None), ("tanh", None), ("relu", None), ("selu", None),
         ("leaky_relu", None), ("leaky_relu", 0.2), ("leaky_relu", 0), ("leaky_relu", 1),
         ("leaky_relu", math.sqrt(5))]


@pytest.mark.parametrize("nonlinearity,param", GAINS)
def test_calculate_gain_is_torchs(torch, nonlinearity, param):
    assert init.calculate_gain(nonlinearity, param) == torch.nn.init.calculate_gain(
        nonlinearity, param)


@pytest.mark.parametrize("nonlinearity,param", [("softmax", None), ("leaky_relu", True),
                                                ("leaky_relu", "0.1")])
def test_calculate_gain_refuses_what_torch_refuses(torch, nonlinearity, param):
    with pytest.raises(ValueError):
        torch.nn.init.calculate_gain(nonlinearity, param)
    with pytest.raises(ValueError):
        init.calculate_gain(nonlinearity, param)


# Linear, Conv1d, Conv2d, Conv3d weights, and a non-square 2-D one
FAN_SHAPES = [(20, 10), (8, 4, 3), (16, 3, 5, 5), (4, 6, 2, 3, 2), (1, 7)]


@pytest.mark.parametrize("shape", FAN_SHAPES)
def test_fans_are_torchs(torch, shape):
    ours = init._calculate_fan_in_and_fan_out(empty(*shape))
    assert ours == torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))


def test_fans_of_layers_weights():
    assert init._calculate_fan_in_and_fan_out(nn.Linear(10, 20).weight) == (10, 20)
    assert init._calculate_fan_in_and_fan_out(nn.Conv1d(4, 8, 3).weight) == (12, 24)
    assert init._calculate_fan_in_and_fan_out(nn.Conv2d(3, 16, 5).weight) == (75, 400)


@pytest.mark.parametrize("fn", [init.xavier_uniform_, init.xavier_normal_,
                                init.kaiming_uniform_, init.kaiming_normal_])
def test_fans_need_two_dims(torch, fn):
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        fn(empty(5))
    with pytest.raises(ValueError):
        getattr(torch.nn.init, fn.__name__)(torch.empty(5))


# ---------------------------------------------------------------- bounds and spreads

SHAPE = (256, 64, 3)  # fan_in 192, fan_out 768; 49152 samples: std to well under 2%


def _uniform_bound(name, kwargs):
    fan_in, fan_out = SHAPE[1] * SHAPE[2], SHAPE[0] * SHAPE[2]
    if name == "xavier_uniform_":
        return kwargs.get("gain", 1.0) * math.sqrt(6.0 / (fan_in + fan_out))
    fan = fan_in if kwargs.get("mode", "fan_in") == "fan_in" else fan_out
    gain = init.calculate_gain(kwargs.get("nonlinearity", "leaky_relu"), kwargs.get("a", 0))
    return gain * math.sqrt(3.0 / fan)


UNIFORM_CASES = [("xavier_uniform_", {}), ("xavier_uniform_", {"gain": 5 / 3}),
                 ("kaiming_uniform_", {}), ("kaiming_uniform_", {"a": math.sqrt(5)}),
                 ("kaiming_uniform_", {"mode": "fan_out", "nonlinearity": "relu"})]


@pytest.mark.parametrize("name,kwargs", UNIFORM_CASES)
def test_uniform_bounds_are_the_formula_and_torchs(torch, device, name, kwargs):
    bound = _uniform_bound(name, kwargs)
    w = getattr(init, name)(empty(*SHAPE, device=device), **kwargs).numpy()
    assert np.abs(w).max() <= bound
    assert np.abs(w).max() > 0.999 * bound  # the whole interval is used
    assert np.std(w) == pytest.approx(bound / math.sqrt(3), rel=0.02)
    theirs = getattr(torch.nn.init, name)(torch.empty(SHAPE), **kwargs).numpy()
    assert np.abs(theirs).max() <= bound * (1 + 1e-6)
    assert np.std(w) == pytest.approx(np.std(theirs), rel=0.03)


NORMAL_CASES = [("xavier_normal_", {}, lambda fi, fo: math.sqrt(2.0 / (fi + fo))),
                ("xavier_normal_", {"gain": 2.0}, lambda fi, fo: 2 * math.sqrt(2.0 / (fi + fo))),
                ("kaiming_normal_", {}, lambda fi, fo: math.sqrt(2.0 / fi)),
                ("kaiming_normal_", {"mode": "fan_out", "nonlinearity": "tanh"},
                 lambda fi, fo: 5 / 3 / math.sqrt(fo))]


@pytest.mark.parametrize("name,kwargs,std", NORMAL_CASES)
def test_normal_spread_is_the_formula_and_torchs(torch, device, name, kwargs, std):
    expected = std(SHAPE[1] * SHAPE[2], SHAPE[0] * SHAPE[2])
    w = getattr(init, name)(empty(*SHAPE, device=device), **kwargs).numpy()
    assert np.std(w) == pytest.approx(expected, rel=0.02)
    assert abs(np.mean(w)) < 0.02 * expected
    theirs = getattr(torch.nn.init, name)(torch.empty(SHAPE), **kwargs).numpy()
    assert np.std(w) == pytest.approx(np.std(theirs), rel=0.03)


def test_uniform_and_normal(device):
    w = init.uniform_(empty(300, 200, device=device), -3.0, 5.0).numpy()
    assert w.min() >= -3.0 and w.max() <= 5.0 and w.mean() == pytest.approx(1.0, abs=0.05)
    w = init.normal_(empty(300, 200, device=device), mean=2.0, std=0.5).numpy()
    assert w.mean() == pytest.approx(2.0, abs=0.01) and w.std() == pytest.approx(0.5, rel=0.02)
    w = init.uniform_(empty(1000, device=device)).numpy()  # defaults: U(0, 1)
    assert w.min() >= 0.0 and w.max() <= 1.0


def test_kaiming_mode_must_be_a_fan():
    with pytest.raises(ValueError, match="fan_in"):
        init.kaiming_uniform_(empty(3, 4), mode="fan_avg")


def test_kaiming_on_a_zero_element_tensor_warns_and_does_nothing():
    w = empty(0, 4)
    with pytest.warns(UserWarning, match="zero-element"):
        assert init.kaiming_normal_(w) is w


# ---------------------------------------------------------------- truncated normal


@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (0.0, 0.02, -0.04, 0.04),
                                          (1.0, 1.0, 1.5, 2.0),  # uniform proposals
                                          (0.0, 1.0, 2.0, 3.0)])  # only the far tail
def test_trunc_normal_stays_in_bounds_and_has_torchs_spread(torch, device, mean, std, a, b):
    w = init.trunc_normal_(empty(200, 100, device=device), mean, std, a, b).numpy()
    assert w.min() >= a and w.max() <= b
    theirs = torch.nn.init.trunc_normal_(torch.empty(200, 100), mean, std, a, b).numpy()
    assert w.mean() == pytest.approx(theirs.mean(), abs=0.02 * (b - a))
    assert w.std() == pytest.approx(theirs.std(), rel=0.04)


def test_trunc_normal_defaults_are_torchs():
    w = init.trunc_normal_(empty(100_000)).numpy()
    assert w.min() >= -2.0 and w.max() <= 2.0
    assert w.std() == pytest.approx(0.8796, rel=0.02)  # std of N(0, 1) cut at +-2


def test_trunc_normal_warns_for_a_mean_far_from_the_interval():
    with pytest.warns(UserWarning, match="more than 2 std"):
        init.trunc_normal_(empty(10), mean=5.0, std=1.0, a=-1.0, b=1.0)


# ---------------------------------------------------------------- exact fills


def _same_as_torch(torch, ours, fn, shape, *args):
    theirs = getattr(torch.nn.init, fn)(torch.empty(shape), *args).numpy()
    np.testing.assert_array_equal(ours.numpy(), theirs)


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4)])
def test_eye_is_torchs(torch, device, shape):
    _same_as_torch(torch, init.eye_(empty(*shape, device=device)), "eye_", shape)


@pytest.mark.parametrize("shape,groups", [((6, 4, 3), 1), ((4, 6, 3, 3), 1),
                                          ((8, 3, 5, 4), 2), ((6, 2, 3, 3, 3), 3),
                                          ((2, 5, 4, 4), 1)])
def test_dirac_is_torchs(torch, device, shape, groups):
    ours = init.dirac_(init.normal_(empty(*shape, device=device)), groups)
    _same_as_torch(torch, ours, "dirac_", shape, groups)


def test_dirac_on_a_conv_passes_channels_through(device):
    conv = nn.Conv2d(3, 3, 3, padding=1, device=device)
    with fnn.no_grad():
        init.dirac_(conv.weight)
        init.zeros_(conv.bias)
    x = fnn.randn(2, 3, 5, 5, device=device)
    np.testing.assert_allclose(conv(x).numpy(), x.numpy(), atol=1e-6)


@pytest.mark.parametrize("fn,args", [("constant_", (0.3,)), ("constant_", (-2,)),
                                     ("ones_", ()), ("zeros_", ())])
def test_constant_fills_are_torchs(torch, device, fn, args):
    ours = getattr(init, fn)(init.normal_(empty(4, 6, device=device)), *args)
    _same_as_torch(torch, ours, fn, (4, 6), *args)


@pytest.mark.parametrize("fn,shape,message", [
    (init.eye_, (2, 3, 4), "2 dimensions"), (init.eye_, (3,), "2 dimensions"),
    (init.dirac_, (3, 3), "3, 4, or 5"), (init.orthogonal_, (5,), "2 or more"),
    (init.sparse_, (2, 3, 4), "2 dimensions")])
def test_shape_errors(fn, shape, message):
    args = (0.5,) if fn is init.sparse_ else ()
    with pytest.raises(ValueError, match=message):
        fn(empty(*shape), *args)


def test_dirac_groups_must_divide_the_output_channels():
    with pytest.raises(ValueError, match="divisible by groups"):
        init.dirac_(empty(5, 2, 3), groups=2)


def test_a_non_tensor_is_refused_with_a_message():
    with pytest.raises(TypeError, match="xavier_uniform_: expected a Tensor"):
        init.xavier_uniform_(np.zeros((3, 4)))


# ---------------------------------------------------------------- orthogonal and sparse


@pytest.mark.parametrize("shape", [(16, 64), (64, 16), (32, 32), (8, 4, 3, 3)])
@pytest.mark.parametrize("gain", [1, 2.5])
def test_orthogonal_rows_or_columns_are_orthonormal(device, shape, gain):
    w = init.orthogonal_(empty(*shape, device=device), gain=gain).numpy().astype(np.float64)
    w = w.reshape(shape[0], -1)
    gram = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w
    np.testing.assert_allclose(gram, gain ** 2 * np.eye(len(gram)), atol=1e-5 * gain ** 2)


def test_orthogonal_in_float64_is_orthonormal_to_roundoff():
    w = init.orthogonal_(empty(40, 30, dtype="float64")).numpy()
    np.testing.assert_allclose(w.T @ w, np.eye(30), atol=1e-12)


def test_orthogonal_matches_torchs_sign_convention(torch):
    # the same normal draws through QR and the sign fix give the same matrix
    rng = np.random.default_rng(3)
    ours = init.orthogonal_(empty(6, 9), generator=np.random.default_rng(3)).numpy()
    draws = torch.tensor(rng.standard_normal((6, 9)).T)
    q, r = torch.linalg.qr(draws)
    np.testing.assert_allclose(ours, (q * torch.diag(r).sign()).T.numpy(), atol=1e-6)


def test_sparse_zeros_the_same_count_in_every_column(device):
    w = init.sparse_(empty(40, 30, device=device), sparsity=0.25, std=0.5).numpy()
    np.testing.assert_array_equal((w == 0).sum(axis=0), np.full(30, math.ceil(0.25 * 40)))
    assert w[w != 0].std() == pytest.approx(0.5, rel=0.1)


# ---------------------------------------------------------------- seeding


RANDOM = [(init.uniform_, ()), (init.normal_, ()), (init.trunc_normal_, ()),
          (init.xavier_uniform_, ()), (init.xavier_normal_, ()), (init.kaiming_uniform_, ()),
          (init.kaiming_normal_, ()), (init.orthogonal_, ()), (init.sparse_, (0.5,))]


@pytest.mark.parametrize("fn,args", RANDOM, ids=[f.__name__ for f, _ in RANDOM])
def test_manual_seed_reproduces_every_random_initialiser(device, fn, args):
    def draw(seed):
        fnn.manual_seed(seed)
        return fn(empty(12, 10, device=device), *args).numpy()

    np.testing.assert_array_equal(draw(5), draw(5))
    assert not np.array_equal(draw(5), draw(6))


@pytest.mark.parametrize("fn,args", RANDOM, ids=[f.__name__ for f, _ in RANDOM])
def test_a_numpy_generator_reproduces_every_random_initialiser(device, fn, args):
    def draw(seed):
        return fn(empty(12, 10, device=device), *args,
                  generator=np.random.default_rng(seed)).numpy()

    np.testing.assert_array_equal(draw(1), draw(1))
    assert not np.array_equal(draw(1), draw(2))


def test_generator_must_be_a_numpy_generator():
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        init.uniform_(empty(3), generator=7)


# ---------------------------------------------------------------- in place, views, params


@pytest.mark.parametrize("fn,args", [*RANDOM, (init.eye_, ()), (init.constant_, (0.5,)),
                                     (init.ones_, ()), (init.zeros_, ())])
def test_fills_in_place_and_views_see_it(device, fn, args):
    w = empty(12, 10, device=device)
    w.fill_(7.0)
    view = w[2:5]
    assert fn(w, *args) is w
    np.testing.assert_array_equal(view.numpy(), w.numpy()[2:5])
    assert not np.any(w.numpy() == 7.0)


def test_initialising_a_slice_changes_only_that_slice_of_the_weight(device):
    layer = nn.Linear(8, 6, device=device)
    before = layer.weight.numpy().copy()
    init.orthogonal_(layer.weight[:, :4])
    init.constant_(layer.weight[:, 4:].T[1], 3.0)  # a non-contiguous view: column 5
    after = layer.weight.numpy()
    np.testing.assert_allclose(after[:, :4].T @ after[:, :4], np.eye(4), atol=1e-5)
    np.testing.assert_array_equal(after[:, 5], np.full(6, 3.0))
    np.testing.assert_array_equal(after[:, [4, 6, 7]], before[:, [4, 6, 7]])


def test_a_parameter_that_requires_grad_stays_a_trainable_leaf(device):
    layer = nn.Linear(5, 3, device=device)
    for fn in (init.xavier_uniform_, init.kaiming_normal_, init.orthogonal_,
               init.trunc_normal_, init.eye_, init.zeros_):
        out = fn(layer.weight)
        assert out is layer.weight
        assert layer.weight.requires_grad and layer.weight.is_leaf
        assert layer.weight.grad_fn is None
    assert fnn.is_grad_enabled()
    layer(fnn.randn(2, 5, device=device)).sum().backward()
    assert layer.weight.grad is not None


def test_the_dtype_is_kept(device):
    w = empty(6, 4, device=device, dtype="float64")
    assert init.xavier_normal_(w).dtype == fnn.float64
    assert init.orthogonal_(w).dtype == fnn.float64


def test_model_apply_as_pytorch_users_write_it(device):
    model = nn.Sequential(nn.Linear(64, 128, device=device), nn.ReLU(),
                          nn.Linear(128, 32, device=device), nn.Tanh(),
                          nn.Linear(32, 10, device=device))

    def init_weights(m):
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
            nn.init.zeros_(m.bias)

    fnn.manual_seed(0)
    assert model.apply(init_weights) is model
    for layer in (model[0], model[2], model[4]):
        fan_out, fan_in = layer.weight.shape
        bound = math.sqrt(6.0 / (fan_in + fan_out))
        w = layer.weight.numpy()
        assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
        assert w.std() == pytest.approx(bound / math.sqrt(3), rel=0.1)
        np.testing.assert_array_equal(layer.bias.numpy(), 0.0)
    first = [p.numpy().copy() for p in model.parameters()]
    fnn.manual_seed(0)
    model.apply(init_weights)
    for a, p in zip(first, model.parameters()):
        np.testing.assert_array_equal(a, p.numpy())


def test_import_paths():
    import fastnn.nn.init as by_path

    assert by_path is init is nn.init


def _resettable(lib):
    layers = lib.nn
    return layers.ModuleDict({
        "emb": layers.Embedding(50, 8, padding_idx=1), "bag": layers.EmbeddingBag(50, 8,
                                                                               padding_idx=2),
        "lstm": layers.LSTM(8, 6, 2, bidirectional=True, proj_size=3), "gru": layers.GRU(8, 6),
        "cell": layers.LSTMCell(8, 6), "ln": layers.LayerNorm(8), "rms": layers.RMSNorm(8),
        "lin": layers.Linear(8, 4), "mha": layers.MultiheadAttention(8, 2, add_bias_kv=True),
        "tr": layers.Transformer(8, 2, 1, 1, 16)})


def test_reset_parameters_where_torch_has_it(torch):
    # `for m in model.modules(): if hasattr(m, "reset_parameters"): m.reset_parameters()`
    # re-initialises a model in PyTorch; a layer without the method was silently skipped
    results = {}
    for lib in (torch, fnn):
        model = _resettable(lib)
        with lib.no_grad():
            for p in model.parameters():
                p.fill_(7.0)
        before = {name: id(p) for name, p in model.named_parameters()}
        reset = sorted(n for n, m in model.named_modules() if hasattr(m, "reset_parameters"))
        private = sorted(n for n, m in model.named_modules() if hasattr(m, "_reset_parameters"))
        for module in model.modules():
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()
        model["tr"]._reset_parameters()
        model["mha"]._reset_parameters()
        params = dict(model.named_parameters())
        assert all(id(p) == before[name] for name, p in params.items())  # in place
        results[lib.__name__] = (reset, private,
                                 sorted(n for n, p in params.items() if bool((p == 7.0).all())))
        assert float(model["emb"].weight[1].abs().sum()) == 0.0  # padding rows
        assert float(model["bag"].weight[2].abs().sum()) == 0.0
        assert 0.8 < float(model["emb"].weight.std()) < 1.2  # N(0, 1)
        assert float(model["lstm"].weight_hh_l0.abs().max()) <= 1 / math.sqrt(6)
        assert float(model["lin"].weight.abs().max()) <= 1 / math.sqrt(8)
        assert model["ln"].weight.tolist() == [1.0] * 8 and model["ln"].bias.tolist() == [0.0] * 8
        assert model["mha"].in_proj_bias.tolist() == [0.0] * 24
    assert results["fastnn"] == results["torch"]
    lazy = nn.LazyLinear(3)
    lazy.reset_parameters()  # a placeholder is left for the first input, as PyTorch's
    lazy(fnn.ones(2, 4))
    lazy.reset_parameters()
    assert lazy.weight.shape == (3, 4) and float(lazy.weight.abs().max()) <= 0.5


def _vision_resettable(lib):
    layers = lib.nn
    return layers.ModuleDict({
        "c1": layers.Conv1d(6, 8, 5, groups=2), "c2": layers.Conv2d(4, 16, 3),
        "c3": layers.Conv3d(2, 4, (1, 3, 3), bias=False), "t1": layers.ConvTranspose1d(4, 6, 3),
        "t2": layers.ConvTranspose2d(8, 4, 4, groups=2), "t3": layers.ConvTranspose3d(2, 3, 2),
        "bil": layers.Bilinear(5, 7, 3), "bn": layers.BatchNorm2d(6), "bn1": layers.BatchNorm1d(4),
        "in": layers.InstanceNorm2d(6, affine=True, track_running_stats=True),
        "gn": layers.GroupNorm(2, 6), "prelu": layers.PReLU(3, init=0.1),
        "sync": layers.SyncBatchNorm(3)})


def test_reset_parameters_of_the_vision_layers_as_torchs(torch):
    """Every conv, norm, Bilinear and PReLU resets in place to PyTorch's init: the same
    layers answer hasattr, the draws stay within PyTorch's bounds 1/sqrt(fan_in) (fan_in
    from the weight: ConvTranspose's dim 1 is out_channels / groups; Bilinear's is
    in1_features) and fill them, the norms and running statistics go back exactly."""
    results = {}
    for lib in (torch, fnn):
        model = _vision_resettable(lib)
        with lib.no_grad():
            for t in [*model.parameters(), *model.buffers()]:
                t.fill_(7)
        before = {name: id(p) for name, p in model.named_parameters()}
        for module in model.modules():
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()
        params = dict(model.named_parameters())
        assert all(id(p) == before[name] for name, p in params.items())
        results[lib.__name__] = (
            sorted(n for n, m in model.named_modules() if hasattr(m, "reset_parameters")),
            sorted(n for n, m in model.named_modules() if hasattr(m, "reset_running_stats")))
        fans = {"c1": 3 * 5, "c2": 4 * 9, "c3": 2 * 9, "t1": 6 * 3, "t2": 2 * 16, "t3": 3 * 8,
                "bil": 5}
        for name, fan_in in fans.items():
            for p in (model[name].weight, model[name].bias):
                if p is None:
                    continue
                host = p.detach().numpy()
                bound = 1 / math.sqrt(fan_in)
                assert np.abs(host).max() <= bound, name
                assert host.size < 24 or np.abs(host).max() > 0.5 * bound, name  # the bound's
        for name in ("bn", "bn1", "in", "gn", "sync"):
            assert (model[name].weight.detach().numpy() == 1).all()
            assert (model[name].bias.detach().numpy() == 0).all()
        for name in ("bn", "bn1", "in", "sync"):
            assert (model[name].running_mean.numpy() == 0).all()
            assert (model[name].running_var.numpy() == 1).all()
            assert int(model[name].num_batches_tracked) == 0
        np.testing.assert_allclose(model["prelu"].weight.detach().numpy(), 0.1, rtol=1e-6)
    assert results["fastnn"] == results["torch"]
    lazy = nn.LazyConv2d(4, 3)
    lazy.reset_parameters()  # a placeholder: left for the first input, as PyTorch's
    lazy(fnn.ones(1, 2, 5, 5))
    lazy.reset_parameters()
    assert lazy.weight.shape == (4, 2, 3, 3) and float(lazy.weight.abs().max()) <= 1 / 18 ** .5
    lazy_bn = nn.LazyBatchNorm1d()
    lazy_bn.reset_parameters()
    lazy_bn.reset_running_stats()
    for name, args in (("LazyLinear", (3,)), ("LazyConv2d", (3, 2)),
                       ("LazyBatchNorm1d", ())):  # only the norms have it
        assert (hasattr(getattr(nn, name)(*args), "reset_running_stats")
                == hasattr(getattr(torch.nn, name)(*args), "reset_running_stats")), name
