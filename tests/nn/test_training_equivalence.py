"""Training with the tape and training with reverse/apply give the same model."""

import numpy as np
import pytest

import fastnn as fnn
import fastnn.functional as F
from fastnn import nn, optim


def _model():
    return nn.Sequential(nn.Linear(6, 16), nn.Activation("tanh"), nn.RMSNorm(16),
                         nn.Swish(16), nn.Linear(16, 16), nn.Activation("relu"),
                         nn.Residual(nn.Linear(16, 16)), nn.Linear(16, 3))


def _data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 6)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0.5)
    return fnn.tensor(x), fnn.tensor(y)


def _ce_grad(logits, targets):
    """dL/dlogits of mean cross-entropy, (softmax - one_hot) / N, written with tensor ops."""
    with fnn.no_grad():
        probs = F.softmax(logits, dim=-1)
        return (probs - F.one_hot(targets, logits.shape[1])) * (1.0 / logits.shape[0])


@pytest.mark.parametrize("make_opt", [
    lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=1e-3, class_lr={"bias": 2.0}),
    lambda ps: optim.AdamW(ps, lr=0.01),
], ids=["sgd", "adamw"])
def test_tape_and_reverse_apply_training_end_with_the_same_weights(make_opt):
    x, y = _data()
    fnn.manual_seed(1)
    tape_model = _model()
    fnn.manual_seed(1)
    rev_model = _model()
    tape_opt, rev_opt = make_opt(tape_model.parameters()), make_opt(rev_model.parameters())
    losses = []
    for _ in range(15):
        tape_opt.zero_grad()
        loss = F.cross_entropy(tape_model(x), y)
        loss.backward()
        tape_opt.step()
        losses.append(loss.item())

        logits, inputs = rev_model.forward_with_inputs(x)  # keeps inputs: no second forward
        _, grads = rev_model.reverse(x, _ce_grad(logits, y), inputs=inputs)
        rev_model.apply(rev_opt, grads)
    assert losses[-1] < 0.7 * losses[0]  # it does train
    for (name, a), (_, b) in zip(tape_model.named_parameters(), rev_model.named_parameters()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-4, atol=2e-5, err_msg=name)


def test_layer_by_layer_apply_equals_whole_model_apply():
    """Applying each layer's grads separately (as a pipeline would) is the same update."""
    x, y = _data()
    fnn.manual_seed(2)
    whole = _model()
    fnn.manual_seed(2)
    split = _model()
    opt_whole, opt_split = optim.Adam(whole.parameters()), optim.Adam(split.parameters())
    for _ in range(3):
        with fnn.no_grad():
            g = _ce_grad(whole(x), y)
        _, grads = whole.reverse(x, g)
        whole.apply(opt_whole, grads)
        _, grads = split.reverse(x, g)
        for index, layer in enumerate(split):
            own = {k.split(".", 1)[1]: v for k, v in grads.items()
                   if k.split(".", 1)[0] == str(index)}
            layer.apply(opt_split, own)
    for a, b in zip(whole.parameters(), split.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_reverse_with_kept_inputs_equals_recomputing_them():
    x, y = _data()
    fnn.manual_seed(4)
    model = _model()
    logits, inputs = model.forward_with_inputs(x)
    g = _ce_grad(logits, y)
    kept_x, kept = model.reverse(x, g, inputs=inputs)
    fresh_x, fresh = model.reverse(x, g)
    np.testing.assert_array_equal(kept_x.numpy(), fresh_x.numpy())
    for name in fresh:
        np.testing.assert_array_equal(kept[name].numpy(), fresh[name].numpy())
    with pytest.raises(ValueError, match="forward_with_inputs"):
        model.reverse(x, g, inputs=inputs[1:])
