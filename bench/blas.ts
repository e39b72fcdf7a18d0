// The BLAS the PyTorch reference runs, chosen and checked before the engine benchmarks race it.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

/** Debian's python3 (it has python3-torch); a pyenv shim first on PATH may not. */
export const PYTHON = process.env['REIN_PYTHON'] ?? '/usr/bin/python3';

// Debian's python3-torch calls whatever libblas.so.3 resolves to (BLAS_INFO=generic): the reference netlib BLAS at
// 3-4 GFLOP/s unless libopenblas0-pthread is installed. OpenBLAS then picks its kernel from its own CPU detection,
// which can be several times slower than the best one it ships: Debian's 0.3.21 takes some AVX-512 CPUs for
// Prescott (37-50 GFLOP/s against 198 with SkylakeX), and on an AVX2 EPYC its choice ran 77 GFLOP/s against 105
// with Zen. A ratio measured against such a reference flatters us, so the bench probes the kernels this CPU can run,
// races the fastest, and refuses to print a ratio when the reference's matmul is still far below ORT's.

/** What picks an OpenBLAS kernel: the first CPU of /proc/cpuinfo. */
export interface CpuInfo {
  readonly vendor: string;
  readonly family: number;
  readonly model: string;
  readonly flags: ReadonlySet<string>;
}

export function parseCpuInfo(text: string): CpuInfo {
  const first = text.split(/\n\s*\n/)[0] ?? '';
  const field = (k: string): string => new RegExp(`^${k}\\s*:\\s*(.*)$`, 'm').exec(first)?.[1]?.trim() ?? '';
  return { vendor: field('vendor_id'), family: Number(field('cpu family')) || 0, model: field('model name'), flags: new Set(field('flags').split(/\s+/).filter((f) => f !== '')) };
}

/** This machine's CPU, or null where there is no /proc/cpuinfo (then OpenBLAS's own detection stands). */
export function readCpuInfo(): CpuInfo | null {
  try {
    return parseCpuInfo(readFileSync('/proc/cpuinfo', 'utf8'));
  } catch {
    return null;
  }
}

/** The AVX-512 subsets OpenBLAS's SkylakeX kernels use (its cpuid_x86.c checks F, BW, VL, DQ and CD). */
const AVX512_SKX = ['avx512f', 'avx512bw', 'avx512vl', 'avx512dq', 'avx512cd'];

/**
 * The OpenBLAS kernels (OPENBLAS_CORETYPE names) this CPU can run and that may be its fastest, the rule's pick first:
 * with AVX-512, Cooperlake where it has BF16 (OpenBLAS's own choice for Cooper Lake, Sapphire Rapids and Zen 4),
 * else SkylakeX; with AVX2 and FMA, Zen on AMD Zen (family 17h and later), Haswell otherwise. Both AVX-512 kernels are
 * kept with the AVX2 ones: which is fastest depends on the part (a Zen 5 ran Cooperlake at about twice Haswell's
 * speed and Zen at a third of it), so the probe decides. Empty before AVX2: OpenBLAS's detection stands.
 */
export function kernelCandidates(cpu: CpuInfo): string[] {
  const f = cpu.flags;
  const out: string[] = [];
  if (AVX512_SKX.every((x) => f.has(x))) out.push(...(f.has('avx512_bf16') ? ['Cooperlake', 'SkylakeX'] : ['SkylakeX']));
  if (f.has('avx2') && f.has('fma')) out.push(...(cpu.vendor === 'AuthenticAMD' && cpu.family >= 0x17 ? ['Zen', 'Haswell'] : ['Haswell']));
  return out;
}

/** What bench/reference/blas.py reports from inside a PyTorch process: its BLAS and its 2048³ float32 matmul. */
export interface BlasReport {
  gflops: number;
  cpu_wall: number;
  reps: number;
  threads: number;
  torch: string;
  torch_blas_info: string | null;
  /** Real paths of the BLAS libraries mapped into the process (libblas.so.3 resolved). */
  libblas: string[];
  /** The library whose sgemm_ torch calls (of those mapped, the first in libtorch_cpu's dependency order). */
  sgemm_from: string | null;
  /** OpenBLAS's name for the kernel it runs (openblas_get_corename); null when sgemm_from is not OpenBLAS. */
  openblas_core: string | null;
  openblas_config: string | null;
  coretype_env: string | null;
}

/** One probe: the OPENBLAS_CORETYPE given (null: OpenBLAS detects) and what the process then ran. */
export interface KernelProbe {
  coretype: string | null;
  report: BlasReport;
}

/** How much faster than the rule's pick another kernel must probe to replace it: a probe on a shared machine is noisy. */
export const PROBE_MARGIN = 1.25;

/** The rule's pick (kernelCandidates' first), unless the fastest probe beats it by more than PROBE_MARGIN. */
export function pickKernel(probes: readonly KernelProbe[], rule: string | null): KernelProbe {
  if (probes.length === 0) throw new Error('pickKernel: no kernel probe ran');
  const fastest = probes.reduce((a, b) => (b.report.gflops > a.report.gflops ? b : a));
  const ruled = probes.find((p) => p.coretype === rule);
  return ruled === undefined || fastest.report.gflops > PROBE_MARGIN * ruled.report.gflops ? fastest : ruled;
}

/** The reference's environment: OPENBLAS_CORETYPE as given, or removed (an empty value is not "unset" to OpenBLAS). */
export function envWithCoretype(coretype: string | null, base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  const env = { ...base };
  delete env['OPENBLAS_CORETYPE'];
  return coretype === null ? env : { ...env, OPENBLAS_CORETYPE: coretype };
}

export function describeBlas(r: BlasReport): string {
  const lib = r.openblas_core !== null
    ? `${r.openblas_config?.split(' ').slice(0, 2).join(' ') ?? 'OpenBLAS'} kernel ${r.openblas_core}`
    : `${r.sgemm_from ?? 'an unknown BLAS'} (not OpenBLAS)`;
  return `${lib}, torch ${r.torch} BLAS_INFO=${r.torch_blas_info ?? '?'}, matmul 2048³ ${r.gflops.toFixed(1)} GFLOP/s (cpu/wall ${r.cpu_wall.toFixed(2)}, ${r.threads} threads)`;
}

/** Below this fraction of ORT's MatMul peak measured beside it, the reference is not a fair one. */
export const REFEREE_MIN_FRACTION = 0.5;

export interface RefereeVerdict {
  ok: boolean;
  /** Why not, and how to fix it; empty when ok. */
  why: string;
}

/**
 * Whether the reference may be raced: its own 2048³ matmul must run at least REFEREE_MIN_FRACTION of ORT's MatMul
 * peak measured beside it (both on the same threads and the same load). Otherwise the ratio would measure the
 * reference's BLAS, not our engine.
 */
export function refereeVerdict(ref: BlasReport, ortPeakGflops: number, candidates: readonly string[] = []): RefereeVerdict {
  if (ref.gflops >= REFEREE_MIN_FRACTION * ortPeakGflops) return { ok: true, why: '' };
  const head = `the reference's matmul ran at ${ref.gflops.toFixed(1)} GFLOP/s, below ${(100 * REFEREE_MIN_FRACTION).toFixed(0)}% of ORT's MatMul peak measured beside it (${ortPeakGflops.toFixed(1)} GFLOP/s)`;
  if (ref.openblas_core === null) {
    return {
      ok: false,
      why: `${head}: PyTorch's sgemm comes from ${ref.sgemm_from ?? 'an unknown library'} (BLAS_INFO=${ref.torch_blas_info ?? '?'}), not OpenBLAS; Debian's python3-torch then runs the reference netlib BLAS. ` +
        'Fix: apt-get install libopenblas0-pthread, and check that `update-alternatives --display libblas.so.3-x86_64-linux-gnu` points at openblas-pthread.',
    };
  }
  const chosen = ref.coretype_env === null ? 'chosen by its own detection' : `OPENBLAS_CORETYPE=${ref.coretype_env}`;
  return {
    ok: false,
    why: `${head}: OpenBLAS runs its ${ref.openblas_core} kernel (${chosen}). ` +
      `Fix: unset OPENBLAS_CORETYPE so that the bench probes ${candidates.length > 0 ? candidates.join(', ') : 'the kernels'} and races the fastest, or set the one that is fastest here; ` +
      `if its cpu/wall (${ref.cpu_wall.toFixed(2)}) is far below the threads (${ref.threads}), the machine was busy: run again when it is quieter.`,
  };
}

/** The reference's BLAS report in a fresh process under `env` (bench/reference/blas.py). */
export function blasReport(env: NodeJS.ProcessEnv, seconds: number, threads: number): BlasReport {
  const script = path.join(import.meta.dirname, 'reference', 'blas.py');
  const r = spawnSync(PYTHON, [script, JSON.stringify({ threads, seconds })], { env, encoding: 'utf8', timeout: 1_200_000 });
  const line = r.stdout?.trim().split('\n').pop() ?? '';
  if (r.status !== 0 || !line.startsWith('{')) throw new Error(`${PYTHON} ${script} (OPENBLAS_CORETYPE=${env['OPENBLAS_CORETYPE'] ?? 'unset'}) failed with status ${r.status} ${r.signal ?? ''}: ${(r.stderr ?? '').slice(-1000)}`);
  return JSON.parse(line) as BlasReport;
}

export interface ReferenceKernel {
  env: NodeJS.ProcessEnv;
  /** The candidates the probe could try (kernelCandidates), for the fix a refusal suggests. */
  candidates: string[];
  /** What was chosen and how, printed with the results. */
  label: string;
}

/**
 * The kernel the reference runs: OPENBLAS_CORETYPE if the caller set it; else the rule's pick (kernelCandidates), or
 * the fastest of a quick probe over the candidates and OpenBLAS's own detection where it clearly wins (pickKernel).
 * Each probe runs in its own process, since OpenBLAS reads the variable once when it loads; `passes` rounds over all
 * of them, best per kernel, because a shared machine only ever slows a probe.
 */
export function chooseReferenceKernel(opts: { threads: number; seconds?: number; passes?: number; cpu?: CpuInfo | null }): ReferenceKernel {
  const cpu = opts.cpu === undefined ? readCpuInfo() : opts.cpu;
  const candidates = cpu === null ? [] : kernelCandidates(cpu);
  const given = process.env['OPENBLAS_CORETYPE'];
  if (given !== undefined) return { env: process.env, candidates, label: `OPENBLAS_CORETYPE=${given} (set by the caller; no probe)` };
  const best = new Map<string | null, KernelProbe>();
  const keep = (p: KernelProbe): void => {
    const old = best.get(p.coretype);
    if (old === undefined || p.report.gflops > old.report.gflops) best.set(p.coretype, p);
  };
  const detected: KernelProbe = { coretype: null, report: blasReport(envWithCoretype(null), opts.seconds ?? 0.5, opts.threads) };
  keep(detected);
  // Not OpenBLAS: no kernel to choose (and the netlib BLAS takes seconds a matmul); the referee says what to install.
  if (detected.report.openblas_core === null || candidates.length === 0) {
    return { env: envWithCoretype(null), candidates, label: `${describeBlas(detected.report)} (no kernel to probe)` };
  }
  for (let pass = 0; pass < (opts.passes ?? 2); pass++) {
    for (const c of [null, ...candidates]) {
      if (pass === 0 && c === null) continue;
      try {
        keep({ coretype: c, report: blasReport(envWithCoretype(c), opts.seconds ?? 0.5, opts.threads) });
      } catch (e) {
        console.warn(`OpenBLAS kernel probe: ${(e as Error).message}`); // a kernel this CPU cannot run dies; the others stand
      }
    }
  }
  const probes = [...best.values()];
  const win = pickKernel(probes, candidates[0]!);
  const listed = probes.map((p) => `${p.coretype ?? `detected ${p.report.openblas_core}`} ${p.report.gflops.toFixed(0)}`).join(', ');
  return {
    env: envWithCoretype(win.coretype),
    candidates,
    label: `OPENBLAS_CORETYPE=${win.coretype ?? '(OpenBLAS detects)'}: OpenBLAS kernel ${win.report.openblas_core} at ${win.report.gflops.toFixed(1)} GFLOP/s ` +
      `(the rule picks ${candidates[0]!}, kept unless another probes ${PROBE_MARGIN}× faster; probe, 2048³ best of ${opts.passes ?? 2}: ${listed})`,
  };
}
