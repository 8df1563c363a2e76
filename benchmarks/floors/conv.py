"""Convolutional floors: Conv1d (bench_conv's), the CNN and the ResNet of bench_models."""

import numpy as np

from floors.layers import (
    batchnorm_b,
    batchnorm_f,
    conv2d_b,
    conv2d_f,
    cross_entropy,
    linear_b,
    linear_f,
    maxpool2_b,
    maxpool2_f,
    relu_b,
    relu_f,
    sgd,
)


def conv1d_step(p, x, y, lr):
    x4 = x[:, :, None, :]

    def step():
        w1, w2 = p["conv1.weight"][:, :, None], p["conv2.weight"][:, :, None]
        z1, c1 = conv2d_f(x4, w1, p["conv1.bias"], (0, 2))
        h1, r1 = relu_f(z1)
        z2, c2 = conv2d_f(h1, w2, p["conv2.bias"], (0, 2))
        h2, r2 = relu_f(z2)
        length = h2.shape[3]
        logits, ch = linear_f(h2.mean((2, 3)), p["head.weight"], p["head.bias"])
        loss, g = cross_entropy(logits, y)
        grads = {}
        g, grads["head.weight"], grads["head.bias"] = linear_b(g, ch, p["head.weight"])
        g = np.broadcast_to((g / length)[:, :, None, None], h2.shape)
        g, dw2, grads["conv2.bias"] = conv2d_b(relu_b(g, r2), c2)
        _, dw1, grads["conv1.bias"] = conv2d_b(relu_b(g, r1), c1)
        grads["conv2.weight"], grads["conv1.weight"] = dw2[:, :, 0], dw1[:, :, 0]
        sgd(p, grads, lr)
        return loss

    return step


def _conv_bn_relu_f(p, x, conv, bn, relu=True):
    z, cc = conv2d_f(x, p[f"{conv}.weight"], p.get(f"{conv}.bias"), (1, 1))
    z, cb = batchnorm_f(z, p[f"{bn}.weight"], p[f"{bn}.bias"])
    if not relu:
        return z, (cc, cb, None)
    h, r = relu_f(z)
    return h, (cc, cb, r)


def _conv_bn_relu_b(p, g, cache, conv, bn, grads):
    cc, cb, r = cache
    if r is not None:
        g = relu_b(g, r)
    g, grads[f"{bn}.weight"], grads[f"{bn}.bias"] = batchnorm_b(g, cb)
    g, grads[f"{conv}.weight"], db = conv2d_b(g, cc)
    if f"{conv}.bias" in p:
        grads[f"{conv}.bias"] = db
    return g


def cnn_step(p, x, y, lr):
    """conv(1,16) BN ReLU maxpool conv(16,32) BN ReLU maxpool, flatten, linear."""
    def step():
        grads = {}
        h, c0 = _conv_bn_relu_f(p, x, "0", "1")
        h, m0 = maxpool2_f(h)
        h, c1 = _conv_bn_relu_f(p, h, "4", "5")
        h, m1 = maxpool2_f(h)
        logits, ch = linear_f(h.reshape(h.shape[0], -1), p["9.weight"], p["9.bias"])
        loss, g = cross_entropy(logits, y)
        g, grads["9.weight"], grads["9.bias"] = linear_b(g, ch, p["9.weight"])
        g = maxpool2_b(g.reshape(h.shape), m1)
        g = _conv_bn_relu_b(p, g, c1, "4", "5", grads)
        g = maxpool2_b(g, m0)
        _conv_bn_relu_b(p, g, c0, "0", "1", grads)
        sgd(p, grads, lr)
        return loss

    return step


def resnet_step(p, x, y, lr, blocks=3):
    """stem conv BN ReLU, three basic blocks, global mean, linear."""
    def step():
        grads = {}
        h, cs = _conv_bn_relu_f(p, x, "stem", "bn")
        caches = []
        for i in range(blocks):
            b = f"blocks.{i}"
            t, c1 = _conv_bn_relu_f(p, h, f"{b}.conv1", f"{b}.bn1")
            t, c2 = _conv_bn_relu_f(p, t, f"{b}.conv2", f"{b}.bn2", relu=False)
            h, r = relu_f(h + t)
            caches.append((c1, c2, r))
        area = h.shape[2] * h.shape[3]
        logits, ch = linear_f(h.mean((2, 3)), p["head.weight"], p["head.bias"])
        loss, g = cross_entropy(logits, y)
        g, grads["head.weight"], grads["head.bias"] = linear_b(g, ch, p["head.weight"])
        g = np.broadcast_to((g / area)[:, :, None, None], h.shape)
        for i in reversed(range(blocks)):
            b = f"blocks.{i}"
            c1, c2, r = caches[i]
            g = relu_b(g, r)
            t = _conv_bn_relu_b(p, g, c2, f"{b}.conv2", f"{b}.bn2", grads)
            g = g + _conv_bn_relu_b(p, t, c1, f"{b}.conv1", f"{b}.bn1", grads)
        _conv_bn_relu_b(p, g, cs, "stem", "bn", grads)
        sgd(p, grads, lr)
        return loss

    return step
