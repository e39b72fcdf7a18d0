// npm run bench:gpu-step — the round's step (bench/harness.ts roundStep: the reference forward, then the policy step
// with MIS-PO and the LoRA backward) on a Qwen2-0.5B-shaped random model at seq 512, LoRA r = 16 on all 7 projections,
// under each GPU provider that passes its probe (node/engine/device.ts: WebGPU through Dawn, CUDA where ORT's CUDA
// provider libraries are installed), against the same step on the CPU and PyTorch's (bench/reference/train_step.py) on
// the same GPU. Printed per device: seconds per step, tokens/s, the ratio to the CPU step and to PyTorch, and the
// numeric check of the GPU step against the CPU step on the same inputs (log-probs within 1e-3, LoRA gradients within
// 1e-2 of each tensor's scale), the bytes that crossed between host and device per step (runtime.ts Traffic: the
// first step uploads the frozen weights; under WebGPU later steps move only their inputs, the LoRA tensors, the last
// layer's output and what the host reads back), and each provider's op listing (op-probe.ts: the ONNX op types of the
// training graphs it lacks, which run as compositions of other ops).
//
// WebGPU via Vulkan on Linux needs the Vulkan loader and the GPU's Vulkan driver on the machine, not in node_modules:
//   Debian/Ubuntu:  apt-get install libvulkan1 mesa-vulkan-drivers   (AMD/Intel; NVIDIA's driver ships its own ICD,
//                   /usr/share/vulkan/icd.d/nvidia_icd.json, with the nvidia-driver package)
//   check:          vulkaninfo --summary   (package vulkan-tools) lists the device Dawn will see
//   a machine image without them: carry the .deb files (apt-get download libvulkan1 mesa-vulkan-drivers) and
//                   dpkg -i them there; VK_ICD_FILENAMES=<icd json> picks one driver when several are installed.
// Dawn refuses Mesa 22's lavapipe (a CPU Vulkan); Chromium's SwiftShader ICD (/usr/lib/chromium/vk_swiftshader_icd.json)
// works but is a CPU too: timings on it say nothing about a GPU.
// CUDA: rerun onnxruntime-node's install script with ONNXRUNTIME_NODE_INSTALL=cuda12 (needs CUDA 12 and cuDNN 9).
// PyTorch on the GPU: REIN_PYTHON=<a python with CUDA torch>.
// Without the libvulkan1 package, Chromium's loader serves: LD_LIBRARY_PATH=/usr/lib/chromium.
//   flags: --rounds N (3)  --seq T (512)  --layers N (24)  --devices webgpu,cuda  --no-cpu  --no-torch  --check-layers N (2)
//          --small (a Qwen2 of the same shape family at hidden 128, FFN 384, vocab 2048, 4/2 heads: for a software
//          adapter, where the 0.5B step takes hours)
import { Engine } from '../src-main/node/engine/engine.ts';
import type { ExecutionProvider } from '../src-main/node/engine/runtime.ts';
import { GRAD_REL_TOLERANCE, LOGPROB_TOLERANCE, type GpuProvider, maxAbsDiff, maxRelDiff, probeProvider } from '../src-main/node/engine/device.ts';
import { ObjectiveRunner } from '../src-main/node/training/objective-runner.ts';
import { presetConfig } from '../src-main/common/training/presets.ts';
import { Rng } from '../src-main/common/engine/rng.ts';
import type { LlamaConfig } from '../src-main/common/engine/families/llama.ts';
import path from 'node:path';
import { parseLlamaConfig } from '../src-main/common/engine/families/llama.ts';
import { formatOpProbe } from '../src-main/node/engine/op-probe.ts';
import type { Traffic } from '../src-main/node/engine/runtime.ts';
import { PyServer, generateWeights, median, qwen2HalfBConfig, roundStep, timed } from './harness.ts';
import { benchArgs } from './args.ts';

const args = benchArgs();
const ROUNDS = args.num('rounds', 3);
const SEQ = args.num('seq', 512);
const LAYERS = args.num('layers', 24);
const CHECK_LAYERS = args.num('check-layers', 2);
const RANK = 16;
const ALPHA = 32;
const THREADS = 2;
const DEVICES = args.str('devices', 'webgpu,cuda').split(',').filter((d) => d !== '') as GpuProvider[];
const SMALL = args.has('small');

function benchConfig(layers: number): LlamaConfig {
  if (!SMALL) return qwen2HalfBConfig(layers);
  return parseLlamaConfig({
    architectures: ['Qwen2ForCausalLM'],
    vocab_size: 2048,
    hidden_size: 128,
    intermediate_size: 384,
    num_hidden_layers: layers,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    rms_norm_eps: 1e-6,
    rope_theta: 1000000,
    tie_word_embeddings: true,
  });
}

const mib = (b: number): string => `${(b / 2 ** 20).toFixed(2)} MiB`;
function trafficLine(t: Traffic): string {
  return `${mib(t.toDevice)} to the device (${mib(t.resident)} of it resident values: weights, tables, LoRA), ${mib(t.toHost)} to the host`;
}

/** The op types each GPU provider's probe found missing (lowered as compositions, as a round would). */
const missingOps = new Map<ExecutionProvider, readonly string[]>();

function engineFor(config: LlamaConfig, weights: Map<string, Float32Array>, provider: ExecutionProvider): Engine {
  return Engine.fromWeights(config, (k) => weights.get(k)!, { dtype: 'float32', threads: THREADS, recomputeAbove: SEQ, headChunk: 128, provider, missingOps: missingOps.get(provider) ?? [] });
}

function adapterOf(engine: Engine) {
  const a = engine.newAdapter({ r: RANK, alpha: ALPHA }, 1);
  const rng = new Rng(2);
  for (const p of a.pairs) rng.fork(p.baseKey).fillNormal(p.b, 0.01); // nonzero B: every gradient is real work
  return a;
}

const objectives = new ObjectiveRunner(presetConfig('balanced', { activeParams: 0.5e9, totalParams: 0.5e9, moe: false }));
const tokensFor = (V: number, T: number, seed: number): number[] => {
  const r = new Rng(seed);
  return Array.from({ length: T }, () => Math.floor(r.uniform() * V));
};

/** The GPU step against the CPU step on the same inputs, on a shallower model of the same width (it runs both). */
async function numericCheck(provider: GpuProvider): Promise<string> {
  const config = benchConfig(CHECK_LAYERS);
  const weights = generateWeights(config, 0);
  const tokens = tokensFor(config.vocabSize, SEQ, 9);
  const out: { logp: Float64Array; grads: Float64Array[] }[] = [];
  for (const p of ['cpu', provider] as const) {
    const e = engineFor(config, weights, p);
    const a = adapterOf(e);
    const logp = await e.logprobs(tokens, { adapter: a });
    const g = await roundStep(e, a, objectives, tokens);
    out.push({ logp, grads: g.grads });
    await e.close();
  }
  const lp = maxAbsDiff(out[1]!.logp, out[0]!.logp);
  const gr = maxRelDiff(out[1]!.grads, out[0]!.grads);
  const ok = lp <= LOGPROB_TOLERANCE && gr <= GRAD_REL_TOLERANCE;
  return `${ok ? 'PASS' : 'FAIL'}: ${CHECK_LAYERS}-layer model at seq ${SEQ}, max |Δlogp| ${lp.toExponential(2)} (≤ ${LOGPROB_TOLERANCE}), max rel Δgrad ${gr.toExponential(2)} (≤ ${GRAD_REL_TOLERANCE})`;
}

async function stepTimes(config: LlamaConfig, weights: Map<string, Float32Array>, provider: ExecutionProvider): Promise<number[]> {
  const e = engineFor(config, weights, provider);
  const a = adapterOf(e);
  e.resetTraffic();
  const warm = await timed(() => roundStep(e, a, objectives, tokensFor(config.vocabSize, SEQ, 100)));
  const moved = provider === 'cpu' ? '' : `; ${trafficLine(e.resetTraffic())}`;
  console.log(`  ${provider}: first step (session creation included) ${warm.wallS.toFixed(2)} s${moved}`);
  const t: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const s = await timed(() => roundStep(e, a, objectives, tokensFor(config.vocabSize, SEQ, r)));
    t.push(s.wallS);
    console.log(`  ${provider} round ${r + 1}: ${s.wallS.toFixed(2)} s, loss ${s.value.loss.toFixed(4)}${provider === 'cpu' ? '' : `; ${trafficLine(e.resetTraffic())}`}`);
  }
  await e.close();
  return t;
}

async function torchTimes(config: LlamaConfig, device: string): Promise<number[] | string> {
  let torch: PyServer;
  try {
    torch = new PyServer(path.join(import.meta.dirname, 'reference', 'train_step.py'), {
      hidden: config.hiddenSize, ffn: config.intermediateSize, vocab: config.vocabSize, heads: config.numHeads, kv_heads: config.numKvHeads,
      layers: config.numLayers, rank: RANK, alpha: ALPHA, rope_theta: config.ropeTheta, eps: config.rmsNormEps, threads: THREADS, device,
    });
    await torch.call({ cmd: 'build' });
  } catch (e) {
    return `PyTorch on ${device} did not start: ${e instanceof Error ? e.message.slice(-300) : String(e)}`;
  }
  const t: number[] = [];
  await torch.call({ cmd: 'step', T: SEQ, seed: 100 });
  for (let r = 0; r < ROUNDS; r++) t.push(((await torch.call({ cmd: 'step', T: SEQ, seed: r })) as { wall_s: number }).wall_s);
  await torch.close();
  return t;
}

async function main(): Promise<void> {
  const config = benchConfig(LAYERS);
  const shape = SMALL ? `small Qwen2 (hidden ${config.hiddenSize}, vocab ${config.vocabSize}` : `Qwen2-0.5B shape (`;
  console.log(`gpu-step bench: ${shape}, ${LAYERS} layers), seq ${SEQ}, LoRA r=${RANK} on 7 projections; devices ${DEVICES.join(', ')}`);
  const usable: { provider: GpuProvider; adapter: string }[] = [];
  for (const d of DEVICES) {
    const p = await probeProvider(d);
    console.log(`probe ${d}: ${p.ok ? `ok on ${p.adapter} (${p.seconds.toFixed(1)} s)` : `FAILED: ${p.error}`}`);
    if (p.ops !== null && p.ops.checked.some((c) => c.ok)) console.log(`op listing, ${formatOpProbe(p.ops)}`);
    if (p.ok) usable.push({ provider: d, adapter: p.adapter });
    missingOps.set(d, p.ops?.missing ?? []);
  }
  const weights = generateWeights(config, 0);
  const tps = (s: number): string => `${(SEQ / s).toFixed(0)} tokens/s`;
  let cpu: number | null = null;
  if (!args.has('no-cpu')) {
    cpu = median(await stepTimes(config, weights, 'cpu'));
    console.log(`cpu: median ${cpu.toFixed(2)} s/step, ${tps(cpu)}`);
  }
  for (const u of usable) {
    console.log(`${u.provider} numeric check against the CPU: ${await numericCheck(u.provider)}`);
    const g = median(await stepTimes(config, weights, u.provider));
    let line = `${u.provider} (${u.adapter}): median ${g.toFixed(2)} s/step, ${tps(g)}`;
    if (cpu !== null) line += `; ${(cpu / g).toFixed(2)}× the CPU step`;
    if (!args.has('no-torch')) {
      const t = await torchTimes(config, 'cuda');
      line += typeof t === 'string' ? `; ${t}` : `; PyTorch cuda ${median(t).toFixed(3)} s/step, ${tps(median(t))}, ours/torch ${(g / median(t)).toFixed(2)}`;
    }
    console.log(line);
  }
  if (usable.length === 0) console.log('no GPU provider passed its probe: nothing to compare (see the probe lines above)');
  await objectives.dispose();
}

await main();
