// node bench/webgpu-io.ts — what onnxruntime-node 1.30's binding does with WebGPU device tensors, run on the adapter
// Dawn finds (VK_ICD_FILENAMES picks a Vulkan ICD; where the Vulkan loader is not installed, Chromium's copy serves:
// LD_LIBRARY_PATH=/usr/lib/chromium VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json). runtime.ts relies on
// each line it prints:
//   1. a session created with preferredOutputLocation { y: 'gpu-buffer', z: 'cpu' } returns y on the device and z on
//      the host;
//   2. the device tensor feeds another run (and another session) without passing through the host;
//   3. a device value reaches the host only as a 'cpu' output of a session that reads it;
//   4. a disposed device tensor is refused as a feed;
//   5. getData() on a device tensor aborts the whole process (the binding's download throws a C string, "not
//      implemented"), shown in a child process so this one survives.
import { spawnSync } from 'node:child_process';
import ort from 'onnxruntime-node';
import { Graph } from '../src-main/common/engine/ir.ts';
import * as op from '../src-main/common/engine/ops.ts';
import { toOnnx } from '../src-main/node/engine/onnx.ts';

const g = new Graph('webgpu_io');
const x = g.input('x', 'float32', [4]);
const w = g.input('w', 'float32', [4]);
g.output('y', op.add(op.mul(x, w), x)); // [4] x·w + x
g.output('z', op.mul(x, w)); // [4] x·w
const model = toOnnx(g);
const session = (loc: ort.InferenceSession.SessionOptions['preferredOutputLocation']): Promise<ort.InferenceSession> =>
  ort.InferenceSession.create(model, { executionProviders: ['webgpu'], preferredOutputLocation: loc, extra: { session: { disable_cpu_ep_fallback: '1' } } });
const host = (a: number[]): ort.Tensor => new ort.Tensor('float32', Float32Array.from(a), [4]);

if (process.argv[2] === '--get-data') {
  const r = await (await session('gpu-buffer')).run({ x: host([1, 2, 3, 4]), w: host([2, 2, 2, 2]) });
  console.log('getData() returned', await r['y']!.getData());
  process.exit(0);
}

const mixed = await session({ y: 'gpu-buffer', z: 'cpu' });
const r1 = await mixed.run({ x: host([1, 2, 3, 4]), w: host([2, 2, 2, 2]) });
console.log(`1. y.location ${r1['y']!.location}, z.location ${r1['z']!.location}, z = [${String(r1['z']!.data)}] (want 2,4,6,8)`);
const r2 = await mixed.run({ x: r1['y']!, w: host([2, 2, 2, 2]) });
console.log(`2. fed y back: z = [${String(r2['z']!.data)}] (want 6,12,18,24), y.location ${r2['y']!.location}`);
const toHost = await session('cpu');
const r3 = await toHost.run({ x: r2['y']!, w: r1['y']! });
console.log(`3. two device tensors into a 'cpu' session: z = [${String(r3['z']!.data)}] (want 27,108,243,432)`);
r1['y']!.dispose();
try {
  await mixed.run({ x: r1['y']!, w: host([2, 2, 2, 2]) });
  console.log('4. a disposed device tensor was accepted');
} catch (e) {
  console.log(`4. a disposed device tensor is refused: ${e instanceof Error ? e.message : String(e)}`);
}
const child = spawnSync(process.execPath, [import.meta.filename, '--get-data'], { encoding: 'utf8' });
console.log(`5. getData() on a device tensor: exit ${child.status ?? child.signal}, ${JSON.stringify((child.stdout + child.stderr).trim().split('\n').slice(-2).join(' | '))}`);
