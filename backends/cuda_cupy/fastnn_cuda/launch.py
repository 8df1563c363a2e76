"""Launch parameters for the CUDA kernels: pure Python and NumPy, testable without a GPU.

Six shapes of launch:

- row-wise (softmax, cross-entropy, rms_div): one block per row, the block size
  the smallest multiple of 32 covering the row, at most ``ROW_THREADS_MAX``;
- column-tiled (sums over rows, bias_act_backward): one block per 32 adjacent
  columns, ``COLUMN_THREADS`` threads whose warps take the rows in turn; used
  up to ``COLUMN_ROWS_MAX`` rows (beyond, too few blocks for too long a loop);
- one block (a full sum of at most ``ONE_BLOCK_MAX`` elements);
- planes (elementwise kernels over rows: bias + activation, the cross-entropy
  backward, Swish, im2col, col2im): ``plane_grid`` puts a row's positions on
  x, rows (or samples) on y and a third index on z, each capped and looped
  over by the kernel, so that no thread divides a flat index by runtime sizes;
- column-tiled over chunks of rows (layer norm's weight and bias gradients):
  ``column_chunk_grid`` adds blockIdx.y for a chunk of at least ``CHUNK_ROWS_MIN``
  rows, so that few columns still fill the GPU; the chunks' partials are summed after;
- optimizer steps: all parameters in one launch, described by a
  :data:`STEP_TABLE_DTYPE` record passed by value (see ``cu/optim.cu``).
"""

from __future__ import annotations

import numpy as np

WARP = 32
ROW_THREADS_MAX = 512
COLUMN_THREADS = 1024  # 32 warps per 32 columns: enough loads in flight per SM
COLUMN_ROWS_MAX = 16384
ONE_BLOCK_THREADS = 512
PLANE_THREADS_MAX = 256
PLANE_MAX_X = 4096  # blocks along a row; longer rows loop
PLANE_MAX_YZ = 65535  # CUDA's limit on grid y and z
ONE_BLOCK_MAX = 65536
STEP_THREADS = 256
STEP_MAX_BLOCKS_PER_TENSOR = 1024
MAX_TENSORS = 32  # per launch; more parameters make more launches
FLAT_THREADS = 256
FLAT_MAX_BLOCKS = 8192  # flat grid-stride kernels loop over the rest
BN_THREADS = 256  # batch norm: one block of this many threads per channel
STEP_POINTERS = 5  # per tensor: param, grad, up to three optimizer states (AMSGrad's)
# column sums split into chunks of rows (layer norm's weight and bias gradients): at least
# this many rows a chunk, and chunks until the grid has about this many blocks (two per SM
# of an H100/H200, 132 SMs): a (tokens, 768) gradient has only 24 column tiles
CHUNK_ROWS_MIN = 256
COLUMN_TARGET_BLOCKS = 264


def column_grid(cols: int) -> tuple[tuple[int], tuple[int]]:
    """(grid, block) for a column-tiled kernel over ``cols`` columns (cols >= 1)."""
    return (-(-cols // WARP),), (COLUMN_THREADS,)


def column_chunk_grid(rows: int, cols: int) -> tuple[tuple[int, int], tuple[int], int]:
    """(grid, block, chunk_rows) of a column-tiled kernel whose blockIdx.y takes a chunk of
    ``chunk_rows`` rows (rows, cols >= 1): grid (column tiles, chunks)."""
    tiles = -(-cols // WARP)
    wanted = -(-COLUMN_TARGET_BLOCKS // tiles)
    chunks = max(1, min(wanted, rows // CHUNK_ROWS_MIN, PLANE_MAX_YZ))
    chunk_rows = -(-rows // chunks)
    return (tiles, -(-rows // chunk_rows)), (COLUMN_THREADS,), chunk_rows


def row_threads(cols: int) -> int:
    """Threads for one row of ``cols`` elements: a multiple of 32 in [32, ROW_THREADS_MAX]."""
    threads = WARP
    while threads < cols and threads < ROW_THREADS_MAX:
        threads *= 2
    return threads


def row_grid(rows: int, cols: int) -> tuple[tuple[int], tuple[int]]:
    """(grid, block) for a one-block-per-row kernel."""
    return (rows,), (row_threads(cols),)


def plane_grid(positions: int, middle: int, rows: int) -> tuple[tuple, tuple]:
    """(grid, block) for a plane kernel: ``positions`` along x (a warp multiple of threads
    covering the row, at most PLANE_THREADS_MAX), ``middle`` along y, ``rows`` along z;
    each grid dimension capped (the kernel loops over the rest). A row shorter than
    PLANE_THREADS_MAX shares its block with others along y (block (x, y)), so that a
    10-class head still runs full blocks. All sizes >= 1."""
    threads = WARP
    while threads < positions and threads < PLANE_THREADS_MAX:
        threads *= 2
    per_block = min(PLANE_THREADS_MAX // threads, middle)
    grid = (min(-(-positions // threads), PLANE_MAX_X),
            min(-(-middle // per_block), PLANE_MAX_YZ), min(rows, PLANE_MAX_YZ))
    return grid, (threads, per_block)


# Mirrors `struct StepTable` in cu/step_table.cuh field by field (align=True gives C's
# padding); the kernel source static_asserts the size, compiled with
# -DFASTNN_TABLE_BYTES from the value below.
STEP_TABLE_DTYPE = np.dtype(
    [
        ("ptr", np.uint64, (STEP_POINTERS, MAX_TENSORS)),
        ("size", np.int64, (MAX_TENSORS,)),
        ("lr", np.float64, (MAX_TENSORS,)),
        ("wd", np.float64, (MAX_TENSORS,)),
        ("block_start", np.int32, (MAX_TENSORS,)),
        ("flag", np.int32, (MAX_TENSORS,)),
        ("count", np.int32),
    ],
    align=True,
)


def table_defines() -> tuple[str, ...]:
    """NVRTC options that tell the kernels what Python plans: optim.cu's table layout and
    the column kernels' block size (their __launch_bounds__)."""
    return (
        f"-DFASTNN_MAX_TENSORS={MAX_TENSORS}",
        f"-DFASTNN_STEP_POINTERS={STEP_POINTERS}",
        f"-DFASTNN_TABLE_BYTES={STEP_TABLE_DTYPE.itemsize}",
        f"-DFASTNN_COLUMN_THREADS={COLUMN_THREADS}",
        f"-DFASTNN_BN_THREADS={BN_THREADS}",
    )


def flat_grid(total: int) -> tuple[tuple[int], tuple[int]]:
    """(grid, block) of a flat grid-stride kernel over ``total`` >= 1 elements."""
    return (min(-(-total // FLAT_THREADS), FLAT_MAX_BLOCKS),), (FLAT_THREADS,)


def channel_grid(channels: int) -> tuple[tuple[int], tuple[int]]:
    """(grid, block) of a one-block-per-channel kernel (it loops past 65535 channels)."""
    return (min(channels, 65535),), (BN_THREADS,)


def step_blocks(size: int) -> int:
    """Blocks one tensor of ``size`` elements gets in an optimizer launch (>= 1)."""
    return max(1, min(-(-size // STEP_THREADS), STEP_MAX_BLOCKS_PER_TENSOR))


def pack_step_tables(pointers, sizes, lrs, weight_decays, flags=None):
    """Pack tensors into StepTable records, at most MAX_TENSORS per record.

    ``pointers`` is one tuple of up to STEP_POINTERS device addresses per tensor (param,
    grad, state..., 0 where unused). Returns a list of ``(record, grid_blocks)``:
    ``record`` is a size-1 structured array (cupy passes it by value), and
    ``grid_blocks`` the 1-D grid size for that launch. Empty tensors are skipped.
    """
    count = len(sizes)
    for name, seq in (("pointers", pointers), ("lrs", lrs), ("weight_decays", weight_decays)):
        if len(seq) != count:
            raise ValueError(f"pack_step_tables: {name} has {len(seq)} entries, sizes has {count}")
    flags = [0] * count if flags is None else list(flags)
    live = [k for k in range(count) if sizes[k] > 0]
    out = []
    for start in range(0, len(live), MAX_TENSORS):
        chunk = live[start : start + MAX_TENSORS]
        n = len(chunk)
        # whole fields at once: per-element stores into a structured record cost
        # ~1 µs each, which a step of many parameters would pay every time
        ptrs = np.zeros((n, STEP_POINTERS), dtype=np.uint64)
        for slot, k in enumerate(chunk):
            if not 1 <= len(pointers[k]) <= STEP_POINTERS:
                raise ValueError(f"pack_step_tables: tensor {k} has {len(pointers[k])} pointers")
            ptrs[slot, : len(pointers[k])] = [int(p or 0) for p in pointers[k]]
        blocks = np.array([step_blocks(sizes[k]) for k in chunk], dtype=np.int64)
        record = np.zeros(1, dtype=STEP_TABLE_DTYPE)
        row = record[0]
        row["ptr"][:, :n] = ptrs.T
        row["size"][:n] = [sizes[k] for k in chunk]
        row["lr"][:n] = [lrs[k] for k in chunk]
        row["wd"][:n] = [weight_decays[k] for k in chunk]
        row["flag"][:n] = [int(bool(flags[k])) for k in chunk]
        row["block_start"][:n] = np.cumsum(blocks) - blocks
        row["count"] = n
        out.append((record, int(blocks.sum())))
    return out


def tensor_of_block(record, grid_blocks: int, block: int) -> tuple[int, int, int]:
    """Which tensor a block serves: (k, the block's index among k's blocks, k's block count).

    The Python twin of ``my_slice`` in step_table.cuh, used by the tests to check that
    the blocks of a packed launch cover every tensor's elements exactly once.
    """
    row = record[0]
    count = int(row["count"])
    starts = row["block_start"]
    k = 0
    for j in range(1, count):
        if block >= starts[j]:
            k = j
    end = int(starts[k + 1]) if k + 1 < count else grid_blocks
    return k, block - int(starts[k]), end - int(starts[k])
