"""Conformance cases of the spatial-transformer composites: grid_sample and affine_grid.

The references are NumPy float64 loops over the output points (one pixel read at a time,
Python's arithmetic), written to accept complex input so that the complex-step gradients of
:func:`fastnn.conformance.cases_vis.complex_step` hold for the input, the grid and theta
(floors, clips and reflections decide on the real part, as the op does on its values).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from hypothesis import strategies as st

import fastnn.functional as F
from fastnn.conformance.case import CASES, Sample, composite
from fastnn.conformance.cases_vis import _seeded, case
from fastnn.conformance.compare import ACCUMULATING

_BEFORE = set(CASES)
CUBIC_A = -0.75


def _unnormalize(g, n, align):
    return (g + 1) * (n - 1) / 2 if align else ((g + 1) * n - 1) / 2


def _clip(c, n):
    """c limited to [0, n - 1] (the bounds are constants: no gradient there)."""
    if c.real != c.real or 0 < c.real < n - 1:
        return c
    return 0.0 if c.real <= 0 else float(n - 1)


def _reflect(c, n, align):
    """A triangle wave: c folded into [low, high] by mirroring at both ends."""
    low, high = (0.0, n - 1.0) if align else (-0.5, n - 0.5)
    span = high - low
    if span == 0:
        return 0.0
    d = c - low
    d = -d if d.real < 0 else d
    phase = d - 2 * span * math.floor(d.real / (2 * span))  # in [0, 2 span)
    folded = phase - span
    return low + span - (-folded if folded.real < 0 else folded)


def _pad(c, n, padding, align):
    if padding == "border":
        return _clip(c, n)
    if padding == "reflection":
        return _clip(_reflect(c, n, align), n)
    return c


def _pixel(image, at):
    """image[:, *at] (a vector over channels), or zeros outside the image."""
    if any(i.real != i.real or not 0 <= i.real <= n - 1 for i, n in zip(at, image.shape[1:])):
        return np.zeros(image.shape[0], image.dtype)
    return image[(slice(None),) + tuple(int(i.real) for i in at)]


def _cubic(d):
    d = -d if d.real < 0 else d
    a = CUBIC_A
    if d.real <= 1:
        return ((a + 2) * d - (a + 3)) * d * d + 1
    return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a if d.real < 2 else 0.0


def _sample_point(image, coords, mode, padding, align):
    sizes = image.shape[1:]
    if mode == "bicubic":  # taps around the unpadded coordinate, each padded on its own
        base = [math.floor(c.real) for c in coords]
        total = 0
        for taps in itertools.product(range(-1, 3), repeat=len(coords)):
            weight = np.prod([_cubic(c - (b + t)) for c, b, t in zip(coords, base, taps)])
            at = [_pad(float(b + t), n, padding, align) for b, t, n in zip(base, taps, sizes)]
            total = total + weight * _pixel(image, at)
        return total
    coords = [_pad(c, n, padding, align) for c, n in zip(coords, sizes)]
    if mode == "nearest":
        return _pixel(image, [float(np.round(c.real)) for c in coords])
    total = 0
    for corner in itertools.product((0, 1), repeat=len(coords)):
        at = [math.floor(c.real) + up for c, up in zip(coords, corner)]
        weight = np.prod([1 - (c - i) if i <= c.real else 1 - (i - c)
                          for c, i in zip(coords, at)])
        total = total + weight * _pixel(image, [float(i) for i in at])
    return total


def grid_sample_ref(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    """PyTorch's grid_sample, one output point at a time."""
    n, c, *spatial = x.shape
    rank = len(spatial)
    out_shape = grid.shape[1:-1]
    dtype = np.result_type(x, grid, np.float64)
    out = np.zeros((n, c) + tuple(out_shape), dtype)
    for b in range(n):
        for point in np.ndindex(*out_shape):
            g = grid[(b,) + point]
            coords = [_unnormalize(g[rank - 1 - k], spatial[k], align_corners)
                      for k in range(rank)]
            out[(b, slice(None)) + point] = _sample_point(x[b], coords, mode, padding_mode,
                                                          align_corners)
    return out


def _points(rng, sizes, out_shape, align):
    """A grid whose pixel coordinates lie 0.15 to 0.35 away from integers, some outside the
    input: away from the kinks of every mode and padding (integers, halves), so that float16
    rounding crosses none of them."""
    rank = len(sizes)
    grid = np.empty(tuple(out_shape) + (rank,))
    for k, n in enumerate(reversed(sizes)):
        offset = rng.uniform(0.15, 0.35, size=out_shape) * rng.choice([-1, 1], size=out_shape)
        pixel = rng.integers(-2, n + 2, size=out_shape) + offset
        grid[..., k] = (2 * pixel / (n - 1) - 1) if align else ((2 * pixel + 1) / n - 1)
    return grid


def _grid_samples(rng):
    samples = []
    for mode, padding, align in itertools.product(("bilinear", "nearest", "bicubic"),
                                                  ("zeros", "border", "reflection"),
                                                  (False, True)):
        x = rng.normal(size=(2, 2, 3, 4))
        grid = np.stack([_points(rng, (3, 4), (2, 3), align) for _ in range(2)])
        samples.append(Sample(f"{mode} {padding} align_corners={align}", (x, grid),
                              dict(mode=mode, padding_mode=padding, align_corners=align)))
    x = rng.normal(size=(1, 2, 2, 3, 2))
    grid = _points(rng, (2, 3, 2), (2, 1, 3), False)[None]
    samples.append(Sample("trilinear reflection", (x, grid),
                          dict(mode="bilinear", padding_mode="reflection",
                               align_corners=False)))
    return samples


def _grid_random(draw):
    rng = _seeded(draw)
    h, w = draw(st.integers(1, 4)), draw(st.integers(2, 4))
    mode = draw(st.sampled_from(["bilinear", "nearest", "bicubic"]))
    padding = draw(st.sampled_from(["zeros", "border", "reflection"]))
    align = draw(st.booleans()) and h > 1
    grid = _points(rng, (h, w), (2, draw(st.integers(1, 3))), align)[None]
    return Sample(f"random {mode} {padding} {h}x{w}", (rng.normal(size=(1, 2, h, w)), grid),
                  dict(mode=mode, padding_mode=padding, align_corners=align))


case("grid_sample", lambda x, grid, **p: F.grid_sample(x, grid, **p), grid_sample_ref,
     _grid_samples, _grid_random, diff_args=(0, 1), tol=ACCUMULATING)


def affine_grid_ref(theta, size, align_corners=False):
    """PyTorch's affine_grid: theta @ (x, y (, z), 1) at each output pixel's centre."""
    spatial = size[2:]

    def position(i, n):
        if n == 1:
            return 0.0
        return (2 * i / (n - 1) - 1) * (1 if align_corners else (n - 1) / n)

    rank = len(spatial)
    out = np.zeros((size[0],) + tuple(spatial) + (rank,), np.result_type(theta, np.float64))
    for b in range(size[0]):
        for point in np.ndindex(*spatial):
            xyz = [position(i, n) for i, n in zip(reversed(point), reversed(spatial))]
            out[(b,) + point] = theta[b] @ np.array(xyz + [1.0])
    return out


def _affine_random(draw):
    h, w = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    align = draw(st.booleans()) and min(h, w) > 1  # unit sizes with align_corners warn
    return Sample("random", (_seeded(draw).normal(size=(1, 2, 3)), (1, 1, h, w)),
                  dict(align_corners=align))


case("affine_grid", lambda theta, size, **p: F.affine_grid(theta, size, **p),
     affine_grid_ref,
     lambda rng: [Sample("2-D", (rng.normal(size=(2, 2, 3)), (2, 1, 3, 4)),
                         dict(align_corners=False)),
                  Sample("2-D align_corners", (rng.normal(size=(1, 2, 3)), (1, 2, 4, 2)),
                         dict(align_corners=True)),
                  Sample("3-D", (rng.normal(size=(1, 3, 4)), (1, 1, 2, 3, 4)),
                         dict(align_corners=False))],
     lambda draw: _affine_random(draw))


composite(*(c for name, c in CASES.items() if name not in _BEFORE))
