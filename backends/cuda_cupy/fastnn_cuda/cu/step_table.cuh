// The table of one multi-tensor optimizer launch (optim.cu, optim_more.cu include it).
//
// ptr[0] = param, ptr[1] = grad, ptr[2..4] = optimizer state (each rule names its own).
// launch.py packs it with a NumPy structured dtype of the same layout; the static_assert
// fails the compile (also in CI) if the two layouts ever disagree.

#ifndef FASTNN_MAX_TENSORS
#define FASTNN_MAX_TENSORS 32
#endif
#ifndef FASTNN_STEP_POINTERS
#define FASTNN_STEP_POINTERS 5
#endif

struct StepTable {
    unsigned long long ptr[FASTNN_STEP_POINTERS][FASTNN_MAX_TENSORS];
    i64 size[FASTNN_MAX_TENSORS];
    double lr[FASTNN_MAX_TENSORS];
    double wd[FASTNN_MAX_TENSORS];
    int block_start[FASTNN_MAX_TENSORS];
    int flag[FASTNN_MAX_TENSORS];  // sgd: 1 = initialise the momentum buffer from the gradient
    int count;
};

#ifdef FASTNN_TABLE_BYTES
static_assert(sizeof(StepTable) == FASTNN_TABLE_BYTES,
              "StepTable layout differs from launch.STEP_TABLE_DTYPE");
#endif

struct TensorSlice {
    int k;       // which tensor of the table this block works on
    i64 first;   // this thread's first element
    i64 stride;  // grid-stride over the tensor's own blocks
};

__device__ __forceinline__ TensorSlice my_slice(const StepTable& t) {
    int k = 0;
    for (int j = 1; j < t.count; ++j)
        if ((int)blockIdx.x >= t.block_start[j]) k = j;
    const int end = (k + 1 < t.count) ? t.block_start[k + 1] : (int)gridDim.x;
    TensorSlice s;
    s.k = k;
    s.first = (i64)(blockIdx.x - t.block_start[k]) * blockDim.x + threadIdx.x;
    s.stride = (i64)(end - t.block_start[k]) * blockDim.x;
    return s;
}
