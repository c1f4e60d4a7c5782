/* Elementwise kernels (owner: oclops). Built per dtype with -DT=<OpenCL C type>. */

__kernel void relu(__global const T *x, ulong xo, __global T *y, ulong yo, ulong n) {
    size_t i = get_global_id(0);
    if (i >= n) return;
    T v = x[xo + i];
    y[yo + i] = v > (T)0 ? v : (T)0;
}
