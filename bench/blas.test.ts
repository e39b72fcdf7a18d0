import { spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import {
  PROBE_MARGIN, PYTHON, REFEREE_MIN_FRACTION, blasReport, chooseReferenceKernel, envWithCoretype, kernelCandidates, parseCpuInfo, pickKernel, readCpuInfo, refereeVerdict,
} from './blas.ts';
import type { BlasReport, KernelProbe } from './blas.ts';

/** A /proc/cpuinfo block as Linux writes it (two processors: the parser reads the first). */
function cpuinfo(vendor: string, family: number, model: string, flags: string): string {
  const one = (n: number): string =>
    `processor\t: ${n}\nvendor_id\t: ${vendor}\ncpu family\t: ${family}\nmodel\t\t: 1\nmodel name\t: ${model}\nflags\t\t: ${flags}\nbogomips\t: 4192.03\n`;
  return `${one(0)}\n${one(1)}\n`;
}

const AVX2 = 'fpu sse sse2 ssse3 sse4_1 sse4_2 avx f16c fma avx2 bmi1 bmi2';
const SKX = `${AVX2} avx512f avx512dq avx512cd avx512bw avx512vl`;
const cpus = {
  // Flags as these parts report them (trimmed to what matters).
  zen5: cpuinfo('AuthenticAMD', 26, 'AMD EPYC', `${SKX} avx512ifma avx_vnni avx512_bf16 avx512vbmi avx512_vnni`),
  zen3: cpuinfo('AuthenticAMD', 25, 'AMD EPYC 7B13 64-Core Processor', `${AVX2} sha_ni clzero`),
  excavator: cpuinfo('AuthenticAMD', 21, 'AMD Opteron X3421 APU', AVX2),
  skylakeSp: cpuinfo('GenuineIntel', 6, 'Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz', SKX),
  sapphireRapids: cpuinfo('GenuineIntel', 6, 'Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz', `${SKX} avx512_bf16 amx_tile`),
  haswell: cpuinfo('GenuineIntel', 6, 'Intel(R) Core(TM) i7-4770 CPU @ 3.40GHz', AVX2),
  knightsLanding: cpuinfo('GenuineIntel', 6, 'Intel(R) Xeon Phi(TM) CPU 7210 @ 1.30GHz', `${AVX2} avx512f avx512cd avx512er avx512pf`),
  nehalem: cpuinfo('GenuineIntel', 6, 'Intel(R) Xeon(R) CPU E5520 @ 2.27GHz', 'fpu sse sse2 ssse3 sse4_1 sse4_2 popcnt'),
};

function report(over: Partial<BlasReport>): BlasReport {
  return {
    gflops: 100, cpu_wall: 1.95, reps: 10, threads: 2, torch: '1.13.0a0', torch_blas_info: 'generic',
    libblas: ['/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3'], sgemm_from: '/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3', openblas_core: 'Haswell',
    openblas_config: 'OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64', coretype_env: null, ...over,
  };
}
const probe = (coretype: string | null, gflops: number): KernelProbe => ({ coretype, report: report({ gflops, coretype_env: coretype }) });

describe('OpenBLAS kernel choice for the reference', () => {
  it('reads vendor, family, model and flags from the first processor of /proc/cpuinfo', () => {
    const c = parseCpuInfo(cpus.zen3);
    expect([c.vendor, c.family, c.model, c.flags.has('avx2'), c.flags.has('avx512f'), c.flags.size]).toEqual(['AuthenticAMD', 25, 'AMD EPYC 7B13 64-Core Processor', true, false, 14]);
  });

  it('names SkylakeX or Cooperlake on AVX-512, Zen on AMD Zen, Haswell on other AVX2 parts, the rule pick first', () => {
    const k = (text: string): string[] => kernelCandidates(parseCpuInfo(text));
    expect(k(cpus.skylakeSp)).toEqual(['SkylakeX', 'Haswell']);
    expect(k(cpus.sapphireRapids)).toEqual(['Cooperlake', 'SkylakeX', 'Haswell']);
    expect(k(cpus.zen3)).toEqual(['Zen', 'Haswell']);
    expect(k(cpus.zen5)).toEqual(['Cooperlake', 'SkylakeX', 'Zen', 'Haswell']);
    expect(k(cpus.haswell)).toEqual(['Haswell']);
    // Pre-Zen AMD with AVX2 and Knights Landing (AVX-512F without BW/VL/DQ) get no kernel they cannot run well.
    expect(k(cpus.excavator)).toEqual(['Haswell']);
    expect(k(cpus.knightsLanding)).toEqual(['Haswell']);
    expect(k(cpus.nehalem)).toEqual([]);
  });

  it('keeps the rule pick unless another kernel probes more than PROBE_MARGIN faster', () => {
    const near = [probe(null, 150), probe('Cooperlake', 140), probe('SkylakeX', 140 * PROBE_MARGIN), probe('Zen', 70)];
    expect(pickKernel(near, 'Cooperlake').coretype).toBe('Cooperlake');
    const far = [probe(null, 77), probe('Zen', 60), probe('Haswell', 80), probe('SkylakeX', 60 * PROBE_MARGIN + 1)];
    expect(pickKernel(far, 'Zen').coretype).toBe('Haswell');
    expect(pickKernel([probe(null, 50), probe('Haswell', 40)], 'Zen').coretype).toBe(null); // the rule's kernel died in the probe
    expect(() => pickKernel([], 'Zen')).toThrow(/no kernel probe ran/);
  });

  it('sets OPENBLAS_CORETYPE or removes it, never leaves it empty (OpenBLAS reads an empty value as a core name)', () => {
    const base = { PATH: '/usr/bin', OPENBLAS_CORETYPE: 'Prescott' };
    expect(envWithCoretype('Zen', base)).toEqual({ PATH: '/usr/bin', OPENBLAS_CORETYPE: 'Zen' });
    expect('OPENBLAS_CORETYPE' in envWithCoretype(null, base)).toBe(false);
    expect(base.OPENBLAS_CORETYPE).toBe('Prescott');
  });
});

describe('the referee check: no ratio against a reference whose matmul runs below half of ORT’s peak', () => {
  it('passes at half the peak and fails just below it', () => {
    expect(REFEREE_MIN_FRACTION).toBe(0.5);
    expect(refereeVerdict(report({ gflops: 80 }), 160)).toEqual({ ok: true, why: '' });
    expect(refereeVerdict(report({ gflops: 79.9 }), 160).ok).toBe(false);
  });

  it('names the netlib BLAS and says to install OpenBLAS', () => {
    // Both mapped, as when liblapack.so.3 is OpenBLAS's and libblas.so.3 the netlib one: sgemm_from tells which runs.
    const libblas = ['/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0', '/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblasp-r0.3.21.so'];
    const v = refereeVerdict(report({ gflops: 3.4, libblas, sgemm_from: libblas[0]!, openblas_core: null, openblas_config: null }), 160);
    expect(v.ok).toBe(false);
    expect(v.why).toContain('3.4 GFLOP/s');
    expect(v.why).toContain('160.0 GFLOP/s');
    expect(v.why).toContain('/usr/lib/x86_64-linux-gnu/blas/libblas.so.3.11.0');
    expect(v.why).toContain('apt-get install libopenblas0-pthread');
    expect(v.why).toContain('update-alternatives --display libblas.so.3-x86_64-linux-gnu');
  });

  it('names a slow OpenBLAS kernel, who chose it, and the kernels to try instead', () => {
    const v = refereeVerdict(report({ gflops: 45, openblas_core: 'Prescott', coretype_env: 'Prescott', cpu_wall: 1.9 }), 170, ['Cooperlake', 'SkylakeX']);
    expect(v.ok).toBe(false);
    expect(v.why).toMatch(/OpenBLAS runs its Prescott kernel \(OPENBLAS_CORETYPE=Prescott\)/);
    expect(v.why).toContain('unset OPENBLAS_CORETYPE so that the bench probes Cooperlake, SkylakeX');
    expect(refereeVerdict(report({ gflops: 45, openblas_core: 'Prescott' }), 170).why).toContain('chosen by its own detection');
  });
});

/** Debian's python3 with torch, and libblas.so.3 resolving to OpenBLAS: what the reference needs. */
const torchOpenblas = (() => {
  const r = spawnSync(PYTHON, ['-c', 'import torch'], { timeout: 300_000 });
  if (r.status !== 0) return false;
  return blasReport(envWithCoretype(null), 0, 1).openblas_core !== null;
})();
const cpu = readCpuInfo();
const runnable = cpu === null ? [] : kernelCandidates(cpu);

describe.skipIf(!torchOpenblas || runnable.length === 0)('the reference process reports its own BLAS (skipped without python3-torch on OpenBLAS and an AVX2 CPU: apt-get install python3-torch libopenblas0-pthread)', () => {
  const saved = process.env['OPENBLAS_CORETYPE'];
  afterEach(() => {
    if (saved === undefined) delete process.env['OPENBLAS_CORETYPE'];
    else process.env['OPENBLAS_CORETYPE'] = saved;
  });

  it('runs the kernel it is given, and names the library libblas.so.3 resolved to', () => {
    const core = runnable.at(-1)!;
    const r = blasReport(envWithCoretype(core), 0, 2);
    expect([r.openblas_core, r.coretype_env, r.threads, r.torch_blas_info]).toEqual([core, core, 2, 'generic']);
    expect(r.sgemm_from).toMatch(/openblas/);
    expect(r.gflops).toBeGreaterThan(0);
  }, 300_000);

  it('probes the candidates when the caller chose no kernel, and keeps the caller’s choice otherwise', () => {
    delete process.env['OPENBLAS_CORETYPE'];
    const k = chooseReferenceKernel({ threads: 2, seconds: 0, passes: 1, cpu });
    expect(k.candidates).toEqual(runnable);
    for (const c of runnable) expect(k.label).toMatch(new RegExp(`\\b${c} \\d+`));
    expect(k.label).toMatch(/detected \w+ \d+/);
    const chosen = k.env['OPENBLAS_CORETYPE'];
    expect(chosen === undefined || runnable.includes(chosen)).toBe(true);
    process.env['OPENBLAS_CORETYPE'] = 'Haswell';
    const given = chooseReferenceKernel({ threads: 2, cpu });
    expect([given.env['OPENBLAS_CORETYPE'], given.label]).toEqual(['Haswell', 'OPENBLAS_CORETYPE=Haswell (set by the caller; no probe)']);
  }, 600_000);
});
