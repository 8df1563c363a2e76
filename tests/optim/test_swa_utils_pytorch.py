"""optim.swa_utils against torch.optim.swa_utils: AveragedModel (SWA and EMA, with and
without buffers) holds torch's averages after every update, update_bn gives torch's running
statistics, and SWALR's rates equal torch's, with a state_dict round trip."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import fastnn as fnn
from fastnn import nn, optim
from fastnn.optim import swa_utils

torch = pytest.importorskip("torch")

UPDATES = 6


@pytest.fixture(autouse=True)
def one_torch_thread():
    """torch's batch_norm with two threads on a busy machine costs ~0.1 s a call; one is
    enough for these sizes."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _pair():
    ours = nn.Sequential(nn.Linear(4, 5, dtype=fnn.float64), nn.BatchNorm1d(5, dtype=fnn.float64),
                         nn.Linear(5, 2, dtype=fnn.float64))
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.BatchNorm1d(5),
                                 torch.nn.Linear(5, 2)).double()
    theirs.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in ours.state_dict().items()})
    return ours, theirs


def _train_step(ours, theirs, rng):
    """Perturb the weights the same way in both, and run a batch (BatchNorm statistics move)."""
    x = rng.standard_normal((8, 4))
    ours.train()
    theirs.train()
    ours(fnn.tensor(x, dtype=fnn.float64))
    theirs(torch.tensor(x))
    noise = {k: rng.standard_normal(np.shape(v)) * 0.1 for k, v in ours.state_dict().items()
             if "num_batches" not in k}
    state = {k: (np.asarray(v) + noise[k] if k in noise else np.asarray(v))
             for k, v in ours.state_dict().items()}
    ours.load_state_dict(state)
    theirs.load_state_dict({k: torch.tensor(v) for k, v in state.items()})


AVERAGING = {
    "swa": (dict(), dict()),
    "swa-buffers": (dict(use_buffers=True), dict(use_buffers=True)),
    "ema-multi": (dict(multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.9)),
                  dict(multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(0.9))),
    "ema-multi-buffers": (dict(multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.7),
                               use_buffers=True),
                          dict(multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(0.7),
                               use_buffers=True)),
    "ema-avg-fn": (dict(avg_fn=swa_utils.get_ema_avg_fn(0.8)),
                   dict(avg_fn=torch.optim.swa_utils.get_ema_avg_fn(0.8))),
    "swa-multi": (dict(multi_avg_fn=swa_utils.get_swa_multi_avg_fn()),
                  dict(multi_avg_fn=torch.optim.swa_utils.get_swa_multi_avg_fn())),
}


def _compare(ours, theirs):
    mine, want = ours.state_dict(), theirs.state_dict()
    assert list(mine) == list(want)
    for k, v in want.items():
        np.testing.assert_allclose(np.asarray(mine[k], dtype=float), v.double().numpy(),
                                   rtol=1e-12, atol=1e-14, err_msg=k)


@pytest.mark.parametrize("name", sorted(AVERAGING))
def test_averaged_model_matches_torch(name):
    rng = np.random.default_rng(0)
    ours, theirs = _pair()
    ours_kw, theirs_kw = AVERAGING[name]
    avg, tavg = (swa_utils.AveragedModel(ours, **ours_kw),
                 torch.optim.swa_utils.AveragedModel(theirs, **theirs_kw))
    for _ in range(UPDATES):
        _train_step(ours, theirs, rng)
        avg.update_parameters(ours)
        tavg.update_parameters(theirs)
        _compare(avg, tavg)
    x = rng.standard_normal((3, 4))
    avg.eval()
    tavg.eval()
    np.testing.assert_allclose(avg(fnn.tensor(x, dtype=fnn.float64)).numpy(),
                               tavg(torch.tensor(x)).detach().numpy(), rtol=1e-12)


def test_update_bn_matches_torch():
    rng = np.random.default_rng(1)
    ours, theirs = _pair()
    _train_step(ours, theirs, rng)
    batches = [rng.standard_normal((6, 4)) for _ in range(4)]
    ours.eval()
    theirs.eval()
    swa_utils.update_bn([(fnn.tensor(b, dtype=fnn.float64), 0) for b in batches], ours)
    torch.optim.swa_utils.update_bn([(torch.tensor(b), 0) for b in batches], theirs)
    _compare(ours, theirs)
    assert not ours.training and ours[1].momentum == theirs[1].momentum == 0.1
    # the cumulative average of the batches' statistics, written out
    h = np.concatenate([b @ np.asarray(ours.state_dict()["0.weight"]).T
                        + np.asarray(ours.state_dict()["0.bias"]) for b in batches]).reshape(
        4, 6, 5)
    np.testing.assert_allclose(ours[1].running_mean.numpy(), h.mean(axis=1).mean(axis=0),
                               rtol=1e-12)


def _rates(lib, strategy, anneal, steps=25):
    mod = swa_utils if lib is optim else torch.optim.swa_utils
    if lib is optim:
        params = [fnn.zeros(3, requires_grad=True), fnn.zeros(2, requires_grad=True)]
        opt = optim.SGD([{"params": [params[0]]}, {"params": [params[1]], "lr": 0.3}], lr=0.1)
    else:
        params = [torch.zeros(3, requires_grad=True), torch.zeros(2, requires_grad=True)]
        opt = torch.optim.SGD([{"params": [params[0]]}, {"params": [params[1]], "lr": 0.3}],
                              lr=0.1)
    s = mod.SWALR(opt, swa_lr=[0.05, 0.01], anneal_epochs=anneal, anneal_strategy=strategy)
    out = [s.get_last_lr()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(steps):
            s.step()
            out.append(s.get_last_lr())
    return out, s, opt


@pytest.mark.parametrize("strategy,anneal", [("cos", 10), ("linear", 5), ("cos", 0),
                                             ("linear", 1)])
def test_swalr_matches_torch(strategy, anneal):
    ours, _, _ = _rates(optim, strategy, anneal)
    theirs, _, _ = _rates(torch, strategy, anneal)
    np.testing.assert_allclose(ours, theirs, rtol=1e-13)
    # mid-run state_dict round trip
    _, s, opt = _rates(optim, strategy, anneal, steps=7)
    saved, saved_opt = s.state_dict(), opt.state_dict()
    _, fresh, fresh_opt = _rates(optim, strategy, anneal, steps=0)
    fresh_opt.load_state_dict(saved_opt)
    fresh.load_state_dict(saved)
    rest = []
    for _ in range(25 - 7):
        fresh.step()
        rest.append(fresh.get_last_lr())
    np.testing.assert_allclose(rest, ours[8:], rtol=1e-13)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="decay"):
        swa_utils.get_ema_multi_avg_fn(1.5)
    model = nn.Linear(2, 2)
    with pytest.raises(ValueError, match="not both"):
        swa_utils.AveragedModel(model, avg_fn=swa_utils.get_ema_avg_fn(),
                                multi_avg_fn=swa_utils.get_ema_multi_avg_fn())
    opt = optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="anneal_strategy"):
        swa_utils.SWALR(opt, swa_lr=0.05, anneal_strategy="step")
