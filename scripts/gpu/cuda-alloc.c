/* cuda-alloc MIB: hold MIB MiB of device memory on GPU 0 until killed.
 *
 * scripts/gpu-check's process in a module. It needs no CUDA toolkit: the driver's libcuda.so.1 is
 * loaded at run time (dlopen) and its entry points are declared here as the driver API
 * documents them (cuInit, cuDeviceGet, cuCtxCreate_v2, cuMemAlloc_v2). It prints "READY <pid>"
 * once the memory is allocated, then waits; an error is one line and exit 1.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

static void *sym(void *lib, const char *name)
{
	void *f = dlsym(lib, name);
	if (!f) {
		fprintf(stderr, "cuda-alloc: %s not in libcuda.so.1\n", name);
		exit(1);
	}
	return f;
}

static void check(CUresult r, const char *what)
{
	if (r != 0) {
		fprintf(stderr, "cuda-alloc: %s failed: CUresult %d\n", what, r);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2 || atol(argv[1]) <= 0) {
		fprintf(stderr, "usage: cuda-alloc MIB\n");
		return 2;
	}
	size_t bytes = (size_t)atol(argv[1]) << 20;
	void *lib = dlopen("libcuda.so.1", RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "cuda-alloc: %s\n", dlerror());
		return 1;
	}
	CUresult (*init)(unsigned) = (CUresult(*)(unsigned))sym(lib, "cuInit");
	CUresult (*device_get)(CUdevice *, int) = (CUresult(*)(CUdevice *, int))sym(lib, "cuDeviceGet");
	CUresult (*ctx_create)(CUcontext *, unsigned, CUdevice) =
		(CUresult(*)(CUcontext *, unsigned, CUdevice))sym(lib, "cuCtxCreate_v2");
	CUresult (*mem_alloc)(CUdeviceptr *, size_t) =
		(CUresult(*)(CUdeviceptr *, size_t))sym(lib, "cuMemAlloc_v2");
	CUdevice dev;
	CUcontext ctx;
	CUdeviceptr ptr;
	check(init(0), "cuInit");
	check(device_get(&dev, 0), "cuDeviceGet");
	check(ctx_create(&ctx, 0, dev), "cuCtxCreate");
	check(mem_alloc(&ptr, bytes), "cuMemAlloc");
	printf("READY %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}
