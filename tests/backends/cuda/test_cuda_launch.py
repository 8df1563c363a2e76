"""Launch parameters of the CUDA backend (pure Python: runs without a GPU)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from fastnn_cuda import launch


@pytest.mark.parametrize("cols", [0, 1, 31, 32, 33, 100, 511, 512, 513, 10**6])
def test_row_threads_is_the_smallest_covering_warp_multiple(cols):
    threads = launch.row_threads(cols)
    assert threads % launch.WARP == 0
    assert launch.WARP <= threads <= launch.ROW_THREADS_MAX
    assert threads >= min(cols, launch.ROW_THREADS_MAX)
    if threads > launch.WARP:
        assert threads // 2 < cols  # half as many would not cover the row


@pytest.mark.parametrize("positions", [1, 10, 31, 33, 256, 257, 10**7])
@pytest.mark.parametrize("middle,rows", [(1, 1), (256, 160), (70000, 3), (2, 10**6), (1024, 1)])
def test_plane_grid_is_within_cuda_limits_and_covers_or_loops(positions, middle, rows):
    (gx, gy, gz), (tx, ty) = launch.plane_grid(positions, middle, rows)
    assert tx % launch.WARP == 0 and launch.WARP <= tx <= launch.PLANE_THREADS_MAX
    assert tx >= min(positions, launch.PLANE_THREADS_MAX)
    assert 1 <= gx <= launch.PLANE_MAX_X and (gx - 1) * tx < positions
    assert gx * tx >= positions or gx == launch.PLANE_MAX_X
    # short rows share a block: full blocks where there are rows enough, never idle rows
    assert 1 <= ty <= middle and tx * ty <= launch.PLANE_THREADS_MAX
    assert tx * ty == launch.PLANE_THREADS_MAX or ty == middle or tx * ty * 2 > 256
    assert 1 <= gy <= 65535 and 1 <= gz <= 65535  # CUDA's limits on grid y and z
    assert (gy - 1) * ty < middle and (gy * ty >= middle or gy == 65535)
    assert gz == min(rows, 65535)


@pytest.mark.parametrize("rows", [1, 255, 256, 257, 4096, 10**5, 10**8])
@pytest.mark.parametrize("cols", [1, 33, 768, 5000, 10**5])
def test_column_chunks_cover_every_row_once_and_fill_the_gpu(rows, cols):
    (tiles, chunks), (threads,), chunk_rows = launch.column_chunk_grid(rows, cols)
    assert tiles * launch.WARP >= cols > (tiles - 1) * launch.WARP
    assert threads == launch.COLUMN_THREADS
    assert 1 <= chunks <= launch.PLANE_MAX_YZ
    assert (chunks - 1) * chunk_rows < rows <= chunks * chunk_rows  # no empty chunk
    if chunks > 1:
        assert chunk_rows >= launch.CHUNK_ROWS_MIN  # never finer than that
    # as many blocks as wanted (give or take the rounding), unless the rows run out first
    wanted_chunks = -(-launch.COLUMN_TARGET_BLOCKS // tiles)
    assert chunks >= min(wanted_chunks, rows // launch.CHUNK_ROWS_MIN, launch.PLANE_MAX_YZ) - 1


def test_a_ten_class_head_runs_full_blocks():
    (gx, gy, gz), (tx, ty) = launch.plane_grid(10, 1024, 1)
    assert (tx, ty) == (32, 8) and (gx, gy, gz) == (1, 128, 1)


class _CTable(ctypes.Structure):
    """The C layout of `struct StepTable` (cu/optim.cu), as the host ABI lays it out."""

    _fields_ = [
        ("ptr", ctypes.c_uint64 * launch.MAX_TENSORS * launch.STEP_POINTERS),
        ("size", ctypes.c_int64 * launch.MAX_TENSORS),
        ("lr", ctypes.c_double * launch.MAX_TENSORS),
        ("wd", ctypes.c_double * launch.MAX_TENSORS),
        ("block_start", ctypes.c_int32 * launch.MAX_TENSORS),
        ("flag", ctypes.c_int32 * launch.MAX_TENSORS),
        ("count", ctypes.c_int32),
    ]


def test_step_table_dtype_matches_the_c_struct_layout():
    dtype = launch.STEP_TABLE_DTYPE
    assert dtype.itemsize == ctypes.sizeof(_CTable)
    for name, *_ in _CTable._fields_:
        assert dtype.fields[name][1] == getattr(_CTable, name).offset, name


def _visits(record, grid_blocks, sizes):
    """Replay optim.cu's my_slice + grid-stride loop: how often each element is visited."""
    threads = launch.STEP_THREADS
    count = int(record[0]["count"])
    visits = [np.zeros(int(record[0]["size"][k]), dtype=np.int64) for k in range(count)]
    for block in range(grid_blocks):
        k, local, blocks_of_k = launch.tensor_of_block(record, grid_blocks, block)
        first = local * threads + np.arange(threads)
        stride = blocks_of_k * threads
        size = visits[k].size
        for start in first[first < size]:
            visits[k][start:size:stride] += 1
    return visits


def test_packed_launch_visits_every_element_exactly_once():
    sizes = [1, 300, 0, 5000, launch.STEP_THREADS * launch.STEP_MAX_BLOCKS_PER_TENSOR + 7]
    pointers = [(k + 1, 100 + k) for k in range(len(sizes))]
    (record, blocks), = launch.pack_step_tables(pointers, sizes, [0.1] * 5, [0.0] * 5)
    assert blocks == sum(launch.step_blocks(s) for s in sizes if s)
    visits = _visits(record, blocks, [s for s in sizes if s])
    for k, v in enumerate(visits):
        assert v.min() == 1 and v.max() == 1, f"tensor {k}: visits {v.min()}..{v.max()}"


def test_tables_hold_the_right_values_and_chunk_by_max_tensors():
    n = 2 * launch.MAX_TENSORS + 6
    sizes = [k % 7 for k in range(n)]  # every 7th tensor is empty and must be skipped
    pointers = [(1000 + k, 2000 + k, 3000 + k) for k in range(n)]
    lrs = [0.5 + k for k in range(n)]
    wds = [0.01 * k for k in range(n)]
    flags = [k % 2 for k in range(n)]
    tables = launch.pack_step_tables(pointers, sizes, lrs, wds, flags)
    live = [k for k in range(n) if sizes[k]]
    assert [int(r[0]["count"]) for r, _ in tables] == [
        len(live[i : i + launch.MAX_TENSORS]) for i in range(0, len(live), launch.MAX_TENSORS)
    ]
    slots = [(r, s) for r, _ in tables for s in range(int(r[0]["count"]))]
    for k, (record, slot) in zip(live, slots):
        row = record[0]
        assert list(row["ptr"][:, slot]) == [1000 + k, 2000 + k, 3000 + k, 0, 0]
        assert row["size"][slot] == sizes[k]
        assert row["lr"][slot] == lrs[k] and row["wd"][slot] == wds[k]
        assert row["flag"][slot] == flags[k]


def test_pack_rejects_mismatched_lists():
    with pytest.raises(ValueError, match="lrs has 1 entries, sizes has 2"):
        launch.pack_step_tables([(1, 2), (3, 4)], [5, 6], [0.1], [0.0, 0.0])
    with pytest.raises(ValueError, match="6 pointers"):
        launch.pack_step_tables([(1, 2, 3, 4, 5, 6)], [5], [0.1], [0.0])
