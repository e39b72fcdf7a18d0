"""What BLAS the PyTorch reference really runs, and how fast: one 2048^3 float32 matmul timed in this process.

Debian's python3-torch is built with BLAS_INFO=generic: it calls whatever libblas.so.3 the alternatives system
resolves, the reference (netlib) BLAS at 3-4 GFLOP/s unless libopenblas0-pthread is installed, and OpenBLAS picks its
kernel from OPENBLAS_CORETYPE or its own CPU detection. So the benchmark asks the process itself: the BLAS library
mapped into it (/proc/self/maps) and the one whose sgemm_ torch calls, OpenBLAS's own name for the kernel it chose (openblas_get_corename) and its build
(openblas_get_config), torch's BLAS_INFO, and the matmul's GFLOP/s.

Imported by train_step.py (the reference times its own matmul), and run alone by bench/harness.ts to probe the
OpenBLAS kernels: `blas.py '{"threads": 2, "seconds": 1.0}'` prints one JSON line.
"""
import ctypes
import json
import os
import re
import sys
import time

import torch


def mapped_blas():
    """Real paths of the BLAS libraries mapped into this process (libblas.so.3 resolved, libopenblas*)."""
    paths = set()
    try:
        with open('/proc/self/maps') as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 6 and re.search(r'/lib(open)?blas[^/]*\.so', parts[5]):
                    paths.add(os.path.realpath(parts[5]))
    except OSError:
        pass  # not Linux: the GFLOP/s still tell
    return sorted(paths)


class _DlInfo(ctypes.Structure):
    _fields_ = [('dli_fname', ctypes.c_char_p), ('dli_fbase', ctypes.c_void_p),
                ('dli_sname', ctypes.c_char_p), ('dli_saddr', ctypes.c_void_p)]


def sgemm_provider():
    """The library whose sgemm_ torch calls: looked up from libtorch_cpu's handle (its dependency order, as its own
    calls resolve), then dladdr. Being mapped is not enough: Debian's liblapack.so.3 from OpenBLAS maps
    libopenblas beside a netlib libblas.so.3, whose sgemm_ comes first."""
    try:
        with open('/proc/self/maps') as f:
            torch_lib = next((p.split()[5] for p in f if len(p.split()) >= 6 and 'libtorch_cpu' in p.split()[5]), None)
        if torch_lib is None:
            return None
        fn = ctypes.cast(ctypes.CDLL(torch_lib).sgemm_, ctypes.c_void_p)
        info = _DlInfo()
        if ctypes.CDLL(None).dladdr(fn, ctypes.byref(info)) == 0 or not info.dli_fname:
            return None
        return os.path.realpath(info.dli_fname.decode())
    except (OSError, AttributeError):
        return None


def openblas_info(path):
    """(corename, config) when the library at `path` is OpenBLAS, else (None, None)."""
    try:
        lib = ctypes.CDLL(path)
        get_core, get_config = lib.openblas_get_corename, lib.openblas_get_config
    except (OSError, AttributeError, TypeError):
        return None, None
    get_core.restype = ctypes.c_char_p
    get_config.restype = ctypes.c_char_p
    return get_core().decode(), get_config().decode()


def matmul_gflops(seconds=1.0, n=2048):
    """Best of repeated n^3 float32 torch.mm (best, not mean: a shared machine only ever slows a run down).

    Repeats until `seconds` have passed, at least twice (the first run is the warm-up, and the best of the rest wins
    when there are more): 2048^3 takes ~0.1 s on a real BLAS and ~5 s on the netlib one, which then runs only twice
    and is still plainly slow."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=g)
    b = torch.randn(n, n, generator=g)
    best, reps = 0.0, 0
    w_all, c_all = 0.0, 0.0
    t_end = time.perf_counter() + seconds
    while reps < 2 or time.perf_counter() < t_end:
        w0, c0 = time.perf_counter(), time.process_time()
        torch.mm(a, b)
        w, c = time.perf_counter() - w0, time.process_time() - c0
        w_all, c_all = w_all + w, c_all + c
        best = max(best, 2 * n ** 3 / w / 1e9)
        reps += 1
    return best, c_all / w_all, reps


def blas_info_of_torch():
    m = re.search(r'BLAS_INFO=([^,\s]+)', torch.__config__.show())
    return m.group(1) if m else None


def report(seconds=1.0):
    gflops, cpu_wall, reps = matmul_gflops(seconds)
    paths = mapped_blas()
    sgemm = sgemm_provider()
    core, config = openblas_info(sgemm) if sgemm is not None else (None, None)
    return {
        'gflops': gflops, 'cpu_wall': cpu_wall, 'reps': reps, 'threads': torch.get_num_threads(),
        'torch': torch.__version__, 'torch_blas_info': blas_info_of_torch(), 'libblas': paths, 'sgemm_from': sgemm,
        'openblas_core': core, 'openblas_config': config, 'coretype_env': os.environ.get('OPENBLAS_CORETYPE'),
    }


if __name__ == '__main__':
    cfg = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    torch.set_num_threads(cfg.get('threads', 2))
    print(json.dumps(report(cfg.get('seconds', 1.0))), flush=True)
