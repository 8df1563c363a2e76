"""MLP floor: 784-512-512-10, ReLU, cross-entropy, SGD."""

from floors.layers import cross_entropy, linear_b, linear_f, relu_b, relu_f, sgd


def mlp_step(p, x, y, lr):
    def step():
        h, caches = x, []
        for i in (0, 2):
            z, c = linear_f(h, p[f"{i}.weight"], p[f"{i}.bias"])
            h, r = relu_f(z)
            caches.append((c, r))
        logits, c4 = linear_f(h, p["4.weight"], p["4.bias"])
        loss, g = cross_entropy(logits, y)
        grads = {}
        g, grads["4.weight"], grads["4.bias"] = linear_b(g, c4, p["4.weight"])
        for i, (c, r) in zip((2, 0), reversed(caches)):
            g, grads[f"{i}.weight"], grads[f"{i}.bias"] = linear_b(relu_b(g, r), c,
                                                                 p[f"{i}.weight"])
        sgd(p, grads, lr)
        return loss

    return step
