// npm run bench:int8-linears — can int8 compute (MatMulNBits accuracy_level 4: int8 activations × int4 weights, VNNI)
// make the Qwen2-0.5B linears fast enough for the int4 LoRA step to reach 0.8× the fp32 step? One Qwen2-0.5B
// layer's linear shapes at T = 512, 2 ORT threads, each way its own session, median of 5 runs after one warm-up:
//   forward X·Wᵀ: f32 Gemm (W fed as an input: our fp32 step), MatMulNBits with W fed as inputs (our int4 step now),
//     MatMulNBits with W a constant initializer (ORT prepacks it) at accuracy_level 0 and at 4;
//   backward dY·W: f32 Gemm, our dequantize-then-Gemm, MatMulNBits on a transposed int4 copy as an initializer at
//     accuracy_level 4 (Wᵀ re-quantized along N: another matrix);
// and the product's error against f32 on the same dequantized weights (max |Δ| / max |y|), for X as it is and for X
// already rounded to Q8_0 blocks as llama.cpp rounds it (composites.quantizeActivations 'q8_0'), plus the RSS a
// session with embedded int4 initializers costs after creation.
//   flags: --seq T (512)  --runs N (5)
import onnxProto from 'onnx-proto';
import ort from 'onnxruntime-node';
import { Rng } from '../src-main/common/engine/rng.ts';
import { QUANT_BLOCK, type QuantWeight, dequantize, quantize } from '../src-main/common/engine/quant.ts';
import { loadAverage, median } from './harness.ts';
import { benchArgs } from './args.ts';
import { maxRelErr } from '../src-main/node/engine/test-utils/compare.ts';

const { onnx } = onnxProto;
const args = benchArgs();
const flag = args.num;
const T = flag('seq', 512);
const RUNS = flag('runs', 5);
const THREADS = 2;
const F = onnx.TensorProto.DataType.FLOAT;
const U8 = onnx.TensorProto.DataType.UINT8;
const A = onnx.AttributeProto.AttributeType;

type Arr = Float32Array | Uint8Array;
interface Tin { name: string; type: number; dims: number[]; data: Arr }

const bytes = (a: Arr): Uint8Array => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
const vi = (name: string, type: number, dims: number[]): onnxProto.onnx.IValueInfoProto => ({ name, type: { tensorType: { elemType: type, shape: { dim: dims.map((d) => ({ dimValue: d })) } } } });

/** A one-node model: `inputs` are fed, `inits` are constant initializers. */
function model(node: onnxProto.onnx.INodeProto, inputs: Omit<Tin, 'data'>[], inits: Tin[], out: [string, number[]]): Uint8Array {
  const m: onnxProto.onnx.IModelProto = {
    irVersion: 8,
    producerName: 'rein-bench',
    opsetImport: [{ domain: '', version: 18 }, { domain: 'com.microsoft', version: 1 }],
    graph: {
      name: 'g',
      node: [node],
      initializer: inits.map((t) => ({ name: t.name, dataType: t.type, dims: t.dims, rawData: bytes(t.data) })),
      input: inputs.map((t) => vi(t.name, t.type, t.dims)),
      output: [vi(out[0], F, out[1])],
    },
  };
  return onnx.ModelProto.encode(onnx.ModelProto.fromObject(m)).finish();
}

const nbitsNode = (N: number, K: number, acc: number): onnxProto.onnx.INodeProto => ({
  opType: 'MatMulNBits', domain: 'com.microsoft', input: ['x', 'qw', 'sc'], output: ['y'],
  attribute: [
    { name: 'K', type: A.INT, i: K }, { name: 'N', type: A.INT, i: N }, { name: 'bits', type: A.INT, i: 4 },
    { name: 'block_size', type: A.INT, i: QUANT_BLOCK }, { name: 'accuracy_level', type: A.INT, i: acc },
  ],
});

const qTensors = (w: QuantWeight): Tin[] => [
  { name: 'qw', type: U8, dims: [w.rows, w.cols / QUANT_BLOCK, 16], data: w.qweight },
  { name: 'sc', type: F, dims: [w.scales.length], data: w.scales },
];

const sessionOpts: ort.InferenceSession.SessionOptions = { executionProviders: ['cpu'], intraOpNumThreads: THREADS, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all' };

interface Way { name: string; bytes: Uint8Array; feeds: Record<string, Tin> }

async function runWay(w: Way): Promise<{ ms: number; y: Float32Array; rssMiB: number }> {
  const rss0 = process.memoryUsage().rss;
  const s = await ort.InferenceSession.create(w.bytes, sessionOpts);
  const rssMiB = (process.memoryUsage().rss - rss0) / 2 ** 20;
  const feeds: Record<string, ort.Tensor> = {};
  for (const [k, t] of Object.entries(w.feeds)) feeds[k] = new ort.Tensor(t.type === F ? 'float32' : 'uint8', t.data, t.dims);
  let y = (await s.run(feeds))['y']!.data as Float32Array;
  const ms: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const t0 = performance.now();
    y = (await s.run(feeds))['y']!.data as Float32Array;
    ms.push(performance.now() - t0);
  }
  await s.release();
  return { ms: median(ms), y, rssMiB };
}

/** Mean |a − b| / mean |b|. */
function meanRelErr(a: Float32Array, b: Float32Array): number {
  let d = 0;
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    d += Math.abs(a[i]! - b[i]!);
    m += Math.abs(b[i]!);
  }
  return d / m;
}

/** x rounded as llama.cpp's quantize_row_q8_0 does (composites.quantizeActivations 'q8_0'): q = round(x·127/amax), d = fp16(amax/127). */
function roundQ8_0(x: Float32Array): Float32Array {
  const out = new Float32Array(x.length);
  const f16 = new Float16Array(1);
  for (let o = 0; o < x.length; o += 32) {
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[o + j]!));
    if (amax === 0) continue;
    const s = Math.fround(127 / amax);
    f16[0] = Math.fround(amax / 127);
    const d = f16[0];
    for (let j = 0; j < 32; j++) {
      const v = Math.fround(x[o + j]! * s);
      let q = Math.round(v);
      if (q - v === 0.5 && q % 2 !== 0) q -= 1; // half to even
      out[o + j] = q * d;
    }
  }
  return out;
}

function transpose(w: Float32Array, N: number, K: number): Float32Array {
  const t = new Float32Array(K * N);
  for (let i = 0; i < N; i++) for (let j = 0; j < K; j++) t[j * N + i] = w[i * K + j]!;
  return t;
}

async function main(): Promise<void> {
  const H = 896;
  const I = 4864;
  const KV = 128;
  // [name, N, K, count per layer]
  const shapes: [string, number, number, number][] = [['q/o', H, H, 2], ['k/v', KV, H, 2], ['gate/up', I, H, 2], ['down', H, I, 1]];
  console.log(`int8-linears bench: T=${T}, ${THREADS} threads, median of ${RUNS} runs; onnxruntime-node ${ort.env.versions.common}; load ${loadAverage()}`);
  const rng = new Rng(5);
  const total: Record<string, number> = {};
  for (const [label, N, K, count] of shapes) {
    const x = rng.fillNormal(new Float32Array(T * K), 1);
    const xq = roundQ8_0(x);
    const dy = rng.fillNormal(new Float32Array(T * N), 1);
    const wq = quantize(rng.fillNormal(new Float32Array(N * K), 0.02), N, K, { bits: 4, zeroPoints: false });
    const wd = dequantize(wq); // the weights both sides multiply by
    const wt = quantize(transpose(wd, N, K), K, N, { bits: 4, zeroPoints: false }); // Wᵀ re-quantized along N
    const fwd: Way[] = [
      {
        name: 'fwd f32 Gemm (W input)',
        bytes: model({ opType: 'Gemm', input: ['x', 'w'], output: ['y'], attribute: [{ name: 'transB', type: A.INT, i: 1 }] }, [{ name: 'x', type: F, dims: [T, K] }, { name: 'w', type: F, dims: [N, K] }], [], ['y', [T, N]]),
        feeds: { x: { name: 'x', type: F, dims: [T, K], data: x }, w: { name: 'w', type: F, dims: [N, K], data: wd } },
      },
      {
        name: 'fwd NBits inputs acc0',
        bytes: model(nbitsNode(N, K, 0), [{ name: 'x', type: F, dims: [T, K] }, ...qTensors(wq)], [], ['y', [T, N]]),
        feeds: { x: { name: 'x', type: F, dims: [T, K], data: x }, ...Object.fromEntries(qTensors(wq).map((t) => [t.name, t])) },
      },
      ...[0, 4].map((acc): Way => ({
        name: `fwd NBits const acc${acc}`,
        bytes: model(nbitsNode(N, K, acc), [{ name: 'x', type: F, dims: [T, K] }], qTensors(wq), ['y', [T, N]]),
        feeds: { x: { name: 'x', type: F, dims: [T, K], data: x } },
      })),
    ];
    const bwd: Way[] = [
      {
        name: 'bwd f32 Gemm (W input)',
        bytes: model({ opType: 'Gemm', input: ['x', 'w'], output: ['y'] }, [{ name: 'x', type: F, dims: [T, N] }, { name: 'w', type: F, dims: [N, K] }], [], ['y', [T, K]]),
        feeds: { x: { name: 'x', type: F, dims: [T, N], data: dy }, w: { name: 'w', type: F, dims: [N, K], data: wd } },
      },
      {
        name: 'bwd Wᵀ int4 const acc4',
        bytes: model(nbitsNode(K, N, 4), [{ name: 'x', type: F, dims: [T, N] }], qTensors(wt), ['y', [T, K]]),
        feeds: { x: { name: 'x', type: F, dims: [T, N], data: dy } },
      },
    ];
    const res: Record<string, { ms: number; y: Float32Array; rssMiB: number }> = {};
    for (const w of [...fwd, ...bwd]) res[w.name] = await runWay(w);
    // The error of int8 compute on X already rounded to Q8_0: against f32 on the same rounded X.
    const q8In: Way = { ...fwd[3]!, name: 'q8', feeds: { x: { name: 'x', type: F, dims: [T, K], data: xq } } };
    const q8Ref: Way = { ...fwd[0]!, name: 'q8ref', feeds: { ...fwd[0]!.feeds, x: { name: 'x', type: F, dims: [T, K], data: xq } } };
    const yq8 = (await runWay(q8In)).y;
    const yq8Ref = (await runWay(q8Ref)).y;
    const ref = res['fwd f32 Gemm (W input)']!.y;
    const bref = res['bwd f32 Gemm (W input)']!.y;
    console.log(`${label} [${T}, ${K}]·[${N}, ${K}]ᵀ (×${count} per layer):`);
    for (const [name, r] of Object.entries(res)) {
      const base = name.startsWith('fwd') ? res['fwd f32 Gemm (W input)']!.ms : res['bwd f32 Gemm (W input)']!.ms;
      const err = name.startsWith('fwd') ? maxRelErr(r.y, ref) : maxRelErr(r.y, bref);
      const mErr = name.startsWith('fwd') ? meanRelErr(r.y, ref) : meanRelErr(r.y, bref);
      console.log(`  ${name.padEnd(26)} ${r.ms.toFixed(2).padStart(7)} ms (${(base / r.ms).toFixed(2)}× f32 speed)  err max ${err.toExponential(1)} mean ${mErr.toExponential(1)}  session RSS +${r.rssMiB.toFixed(0)} MiB`);
      total[name] = (total[name] ?? 0) + count * r.ms;
    }
    console.log(`  int8 (acc4) on X pre-rounded to Q8_0 vs f32 on the same rounded X: err max ${maxRelErr(yq8, yq8Ref).toExponential(1)} mean ${meanRelErr(yq8, yq8Ref).toExponential(1)}; ` +
      `Q8_0 rounding itself vs exact X: mean ${meanRelErr(yq8Ref, ref).toExponential(1)}`);
  }
  console.log(`one layer's 7 linears (forward / backward):`);
  for (const [name, ms] of Object.entries(total)) console.log(`  ${name.padEnd(26)} ${ms.toFixed(1).padStart(7)} ms`);
  // Memory: a Llama-3-8B gate_proj-sized int4 weight [14336, 4096] (28 MiB of nibbles + 7 MiB of scales) baked into
  // 4 sessions, each run once: what each session holds once its model bytes are dropped (ORT keeps the packed form).
  {
    const N = 14336;
    const K = 4096;
    const w = quantize(rng.fillNormal(new Float32Array(N * K), 0.02), N, K, { bits: 4, zeroPoints: false });
    const gc = (globalThis as { gc?: () => void }).gc;
    const rss = (): number => {
      gc?.();
      return process.memoryUsage().rss / 2 ** 20;
    };
    for (const acc of [0, 4]) {
      const r0 = rss();
      const sessions: ort.InferenceSession[] = [];
      for (let i = 0; i < 4; i++) {
        const s = await ort.InferenceSession.create(model(nbitsNode(N, K, acc), [{ name: 'x', type: F, dims: [T, K] }], qTensors(w), ['y', [T, N]]), sessionOpts);
        await s.run({ x: new ort.Tensor('float32', new Float32Array(T * K), [T, K]) });
        sessions.push(s);
      }
      const per = (rss() - r0) / 4;
      for (const s of sessions) await s.release();
      console.log(`memory, int4 [${N}, ${K}] (${((w.qweight.byteLength + w.scales.byteLength) / 2 ** 20).toFixed(1)} MiB ours) baked into a session at accuracy_level ${acc}: ` +
        `+${per.toFixed(1)} MiB per session after a run (${gc === undefined ? 'run with --expose-gc for a settled figure' : 'after gc'})`);
    }
  }
  console.log(`load ${loadAverage()}`);
}

await main();
