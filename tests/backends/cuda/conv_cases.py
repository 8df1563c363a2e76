"""conv1d configurations shared by the CUDA backend's tests (host-run and GPU)."""

# (N, C_in, L, C_out, K, stride, padding, dilation, groups)
CONV_CASES = [
    (2, 3, 11, 4, 3, 1, 0, 1, 1),
    (2, 4, 13, 6, 3, 2, 1, 2, 2),
    (1, 2, 9, 2, 4, 3, 2, 1, 1),
    (3, 6, 8, 6, 1, 1, 0, 1, 3),
    (2, 2, 70, 3, 5, 1, 2, 3, 1),  # rows longer than one warp of threads
]

# (x shape, weight shape, stride, padding ((top, bottom), (left, right)), dilation, groups)
CONV2D_CASES = [
    ((2, 3, 5, 6), (4, 3, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    ((2, 4, 7, 9), (6, 2, 3, 2), (2, 1), ((1, 1), (2, 2)), (1, 2), 2),
    ((1, 2, 6, 5), (2, 2, 2, 2), (1, 1), ((0, 1), (1, 0)), (1, 1), 1),  # "same", even kernel
    ((2, 4, 6, 6), (4, 1, 3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), 4),  # depthwise
    ((1, 2, 3, 70), (3, 2, 1, 5), (1, 3), ((0, 0), (2, 2)), (1, 2), 1),  # rows past a warp
]
