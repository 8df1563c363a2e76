"""Copies of strided views on CPU devices run one innermost run per work-item
(``k_write_runs``): ``contiguous`` of permuted and stepped views, and ``slice_scatter``
into stepped regions, bit for bit against NumPy's copies of the same views, at ranks 1-4
(collapsed), with unit and non-unit innermost strides, for float and integer dtypes."""

import numpy as np
import pytest

VIEWS = [  # (base shape, permutation, slices of the permuted view)
    ((16, 4, 8, 5), (0, 2, 1, 3), ()),  # a head split's transpose: runs of 5
    ((6, 7), (1, 0), ()),  # a transpose: innermost stride 7
    ((5, 6, 9), (0, 1, 2), (slice(None), slice(1, 5), slice(0, 9, 2))),  # stepped runs
    ((3, 4, 5, 6), (3, 1, 0, 2), ()),  # no unit stride left innermost
    ((2, 3, 4, 5), (0, 1, 2, 3), (slice(None), slice(None, None, 2), slice(1, 3))),
]


def _view(ocl, base, perm, index):
    dev = ocl.from_numpy(base, 0)
    view = ocl.transpose(dev, perm)
    host = base.transpose(perm)
    if index:
        starts = [s.indices(n)[0] for s, n in zip(index, host.shape)]
        stops = [s.indices(n)[1] for s, n in zip(index, host.shape)]
        steps = [s.indices(n)[2] for s, n in zip(index, host.shape)]
        pad = host.ndim - len(index)
        view = ocl.slice(view, tuple(starts) + (0,) * pad,
                         tuple(stops) + host.shape[len(index):], tuple(steps) + (1,) * pad)
        host = host[index]
    return view, host


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
@pytest.mark.parametrize("base_shape,perm,index", VIEWS)
def test_contiguous_of_a_strided_view(ocl, dtype, base_shape, perm, index):
    base = np.arange(np.prod(base_shape)).reshape(base_shape).astype(dtype)
    view, host = _view(ocl, base, perm, index)
    got = ocl.to_numpy(ocl.contiguous(view))
    assert got.shape == host.shape
    np.testing.assert_array_equal(got, host)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("base_shape,perm,index", VIEWS)
def test_slice_scatter_into_a_strided_region(ocl, dtype, base_shape, perm, index):
    rng = np.random.default_rng(len(base_shape))
    host_base = rng.integers(-50, 50, size=base_shape[::-1]).astype(dtype)
    dev_base = ocl.transpose(ocl.from_numpy(host_base, 0), tuple(range(len(base_shape)))[::-1])
    want = host_base.T.copy()
    # every second element of the last axis: the destination's runs are strided too
    region = tuple(slice(1, n) if n > 2 else slice(0, n) for n in base_shape[:-1])
    region += (slice(0, base_shape[-1], 2),)
    src = rng.integers(-50, 50, size=want[region].shape).astype(dtype)
    want[region] = src
    starts = tuple(s.start for s in region)
    stops = tuple(s.stop for s in region)
    steps = tuple(s.step or 1 for s in region)
    got = ocl.slice_scatter(dev_base, ocl.from_numpy(src, 0), starts, stops, steps)
    np.testing.assert_array_equal(ocl.to_numpy(got), want)
