"""The process-wide switches scripts set first, fnn.Size, fnn.testing.assert_close and
nn.utils.parameters_to_vector: each does what PyTorch's does, or records the setting
where fastnn has nothing to switch (tested: it is kept and read back)."""

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn

try:
    import torch
except ImportError:
    torch = None


def test_size_is_a_shape_tuple():
    assert fnn.ones(2, 3).shape == fnn.Size([2, 3]) and fnn.Size((2, 3, 4)).numel() == 24
    assert fnn.Size([]).numel() == 1 and repr(fnn.Size([2])) == "fastnn.Size([2])"
    with pytest.raises(TypeError, match="sequence of ints"):
        fnn.Size([2.0])


def test_shape_and_size_are_sizes_as_torchs():
    # torch: x.shape and x.size() are torch.Size (isinstance checks, x.size().numel(),
    # Tensor(x.shape) an uninitialised tensor of that shape); f-strings keep the tuple
    x = fnn.zeros(2, 3)
    assert isinstance(x.shape, fnn.Size) and isinstance(x.size(), fnn.Size)
    assert x.size().numel() == 6 and x.shape == (2, 3) and hash(x.shape) == hash((2, 3))
    assert repr(x.shape) == "fastnn.Size([2, 3])" and f"{x.shape}" == str(x.shape) == "(2, 3)"
    assert fnn.Tensor(x.shape).shape == (2, 3) and type(x.size(1)) is int
    for grown, count in ((x.shape + (4,), 24), ((4,) + x.shape, 24), (x.shape * 2, 36),
                         (2 * x.shape, 36)):
        assert isinstance(grown, fnn.Size) and grown.numel() == count
    assert (x.shape + (4,)) == (2, 3, 4) and ((4,) + x.shape) == (4, 2, 3)
    if torch is not None:
        t = torch.zeros(2, 3)
        assert isinstance(t.shape, torch.Size) and t.size().numel() == 6
        assert torch.Tensor(t.shape).shape == (2, 3)


def test_threads_reach_numpys_blas():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = fnn.get_num_threads()
    with threadpoolctl.threadpool_limits(None):  # restored on exit
        fnn.set_num_threads(1)
        assert fnn.get_num_threads() == 1
    assert fnn.get_num_threads() == before
    with pytest.raises(ValueError, match="positive int"):
        fnn.set_num_threads(0)


def test_recorded_switches_read_back():
    assert fnn.get_float32_matmul_precision() == "highest"
    fnn.set_float32_matmul_precision("high")
    try:
        assert fnn.get_float32_matmul_precision() == "high"
    finally:
        fnn.set_float32_matmul_precision("highest")
    with pytest.raises(ValueError, match="expected one of highest, high, medium"):
        fnn.set_float32_matmul_precision("low")
    fnn.use_deterministic_algorithms(True)
    try:
        assert fnn.are_deterministic_algorithms_enabled()
    finally:
        fnn.use_deterministic_algorithms(False)
    fnn.backends.cudnn.benchmark = True
    assert fnn.backends.cudnn.benchmark and fnn.backends.cuda.matmul.allow_tf32 is False
    fnn.backends.cudnn.benchmark = False
    assert [r.name for r in fnn.backends()]  # still the list of installed backends
    assert fnn.get_num_interop_threads() == 1
    fnn.set_num_interop_threads(3)
    try:
        assert fnn.get_num_interop_threads() == 3
    finally:
        fnn.set_num_interop_threads(1)
    with pytest.raises(ValueError, match="positive int"):
        fnn.set_num_interop_threads(0)


def test_attention_kernel_switches_are_kept_as_pytorchs():
    # gpt-fast decodes under torch.backends.cuda.sdp_kernel(...): an AttributeError here
    cuda = fnn.backends.cuda
    assert cuda.flash_sdp_enabled() and cuda.math_sdp_enabled()
    with cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False, enable_math=True):
        assert not cuda.flash_sdp_enabled() and not cuda.mem_efficient_sdp_enabled()
        assert cuda.math_sdp_enabled() and cuda.cudnn_sdp_enabled()
    assert cuda.flash_sdp_enabled() and cuda.mem_efficient_sdp_enabled()
    cuda.enable_flash_sdp(False)
    try:
        assert not cuda.flash_sdp_enabled()
    finally:
        cuda.enable_flash_sdp(True)
    with pytest.raises(TypeError, match="enable_math_sdp: expected True or False"):
        cuda.enable_math_sdp("no")
    if torch is not None:
        with torch.backends.cuda.sdp_kernel(enable_flash=False):
            assert not torch.backends.cuda.flash_sdp_enabled()
        assert torch.backends.cuda.flash_sdp_enabled()


def test_fork_rng_puts_the_default_generator_back():
    """fnn.random (torch.random): fork_rng restores the default generator's state when its
    block ends, so the draws after it are those without the block; enabled=False does
    not; the seed functions are there too."""
    fnn.random.manual_seed(5)
    want = fnn.randn(3).numpy()
    fnn.random.manual_seed(5)
    with fnn.random.fork_rng():
        inside = fnn.randn(3).numpy()
        fnn.randn(10)
    np.testing.assert_array_equal(fnn.randn(3).numpy(), want)
    np.testing.assert_array_equal(inside, want)
    fnn.random.manual_seed(5)
    with fnn.random.fork_rng(enabled=False):
        fnn.randn(3)
    assert not np.array_equal(fnn.randn(3).numpy(), want)
    assert fnn.random.initial_seed() == 5 and isinstance(fnn.random.get_rng_state(), dict)


def test_assert_close_uses_pytorchs_default_tolerances():
    x = np.array([1.0, 2.0, 3.0], np.float32)
    fnn.testing.assert_close(fnn.tensor(x), fnn.tensor(x * (1 + 1e-6)))
    with pytest.raises(AssertionError, match=r"1 of 3 elements differ .* index \(2,\)"):
        fnn.testing.assert_close(fnn.tensor(x), fnn.tensor(x + np.float32([0, 0, 1e-3])))
    with pytest.raises(AssertionError, match="dtypes differ"):
        fnn.testing.assert_close(fnn.tensor(x), fnn.tensor(x.astype(np.float64)))
    with pytest.raises(AssertionError, match="shapes differ"):
        fnn.testing.assert_close(fnn.tensor(x), fnn.tensor(x[:2]))
    fnn.testing.assert_close({"a": [fnn.tensor(x)]}, {"a": [fnn.tensor(x)]})
    fnn.testing.assert_close(fnn.tensor(x), fnn.tensor(x + 0.01), rtol=0.0, atol=0.02)
    if torch is not None:  # the same verdicts as PyTorch's at its defaults
        for delta in (1e-6, 5e-6, 2e-5):
            theirs = True
            try:
                torch.testing.assert_close(torch.tensor(x), torch.tensor(x + delta))
            except AssertionError:
                theirs = False
            ours = True
            try:
                fnn.testing.assert_close(fnn.tensor(x), fnn.tensor(x + delta))
            except AssertionError:
                ours = False
            assert ours == theirs, delta


def test_parameters_to_vector_and_back():
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU(), nn.Linear(2, 1))
    flat = np.concatenate([p.numpy().ravel() for p in model.parameters()])
    vec = nn.utils.parameters_to_vector(model.parameters())
    np.testing.assert_array_equal(vec.numpy(), flat)
    nn.utils.vector_to_parameters(fnn.tensor(np.arange(flat.size, dtype=np.float32)),
                                  model.parameters())
    np.testing.assert_array_equal(model[0].weight.numpy(), np.arange(6).reshape(2, 3))
    np.testing.assert_array_equal(model[2].bias.numpy(), [10.0])
    with pytest.raises(ValueError, match="has 3 elements, the parameters 11"):
        nn.utils.vector_to_parameters(fnn.ones(3), model.parameters())


def test_vector_to_parameters_makes_the_parameters_views_of_the_vector():
    # PyTorch sets param.data to a slice of vec: a later write to either is seen by both
    # (flat-parameter code updates the vector in place and expects the model to follow)
    def run(lib):
        model = lib.nn.Linear(2, 2)
        vec = lib.arange(7.0)  # one element more than the parameters: left unused
        lib.nn.utils.vector_to_parameters(vec, model.parameters())
        vec.mul_(10)
        seen = [model.weight.detach().numpy().copy(), model.bias.detach().numpy().copy()]
        with lib.no_grad():
            model.weight.add_(1)
        opt = lib.optim.SGD(model.parameters(), lr=1.0)
        model(lib.ones(1, 2)).sum().backward()
        opt.step()
        return seen + [vec.numpy().copy(), isinstance(model.weight, lib.nn.Parameter)]

    ours = run(fnn)
    np.testing.assert_array_equal(ours[0], [[0, 10], [20, 30]])
    np.testing.assert_array_equal(ours[2], [0, 10, 20, 30, 39, 49, 60])
    assert ours[3] is True
    if torch is not None:
        for mine, theirs in zip(ours, run(torch)):
            np.testing.assert_array_equal(mine, theirs)


def test_the_library_switches_are_kept_and_model_compile_stays_eager():
    assert fnn.backends.mkldnn.is_available() is False and fnn.backends.opt_einsum.enabled
    model = fnn.nn.Linear(2, 2)
    x = fnn.ones(1, 2)
    before = model(x).tolist()
    assert model.compile(mode="max-autotune") is None and model(x).tolist() == before


def _child(index, folder, fail_at):
    if index == fail_at:
        raise ValueError(f"child {index} was told to fail")
    with open(f"{folder}/{index}", "w") as f:
        f.write(str(index * 10))


def test_multiprocessing_spawn_runs_each_index_and_reports_a_failure(tmp_path):
    # (forked here: a spawned child imports this test module, torch with it, ~25 s a child
    # on a loaded machine; spawn() is start_processes with "spawn")
    import fastnn.multiprocessing as mp

    assert mp.get_context("spawn").get_start_method() == "spawn" and mp.cpu_count() >= 1
    mp.start_processes(_child, args=(str(tmp_path), -1), nprocs=2, start_method="fork")
    assert sorted(p.read_text() for p in tmp_path.iterdir()) == ["0", "10"]
    with pytest.raises(mp.ProcessRaisedException, match="child 1 was told to fail") as info:
        mp.start_processes(_child, args=(str(tmp_path), 1), nprocs=2, start_method="fork")
    assert info.value.error_index == 1
    with pytest.raises(ValueError, match="nprocs must be a positive int"):
        mp.spawn(_child, nprocs=0)


@pytest.mark.parametrize("name, why", [("fft", "no complex dtypes"), ("sparse", "dense only"),
                                       ("_dynamo", "fnn.compile captures a step")])
def test_a_pytorch_submodule_fastnn_lacks_says_why(name, why):
    assert not hasattr(fnn, name)
    with pytest.raises(AttributeError, match=f"torch.{name} .*{why}"):
        getattr(fnn, name)
