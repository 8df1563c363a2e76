"""conv1d configurations shared by the CUDA backend's tests (host-run and GPU)."""

# (N, C_in, L, C_out, K, stride, padding, dilation, groups)
CONV_CASES = [
    (2, 3, 11, 4, 3, 1, 0, 1, 1),
    (2, 4, 13, 6, 3, 2, 1, 2, 2),
    (1, 2, 9, 2, 4, 3, 2, 1, 1),
    (3, 6, 8, 6, 1, 1, 0, 1, 3),
    (2, 2, 70, 3, 5, 1, 2, 3, 1),  # rows longer than one warp of threads
]
