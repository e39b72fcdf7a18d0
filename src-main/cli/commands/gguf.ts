// `rein model to-gguf <hf-dir>`: an HF model directory as a GGUF base for llama.cpp, Ollama and LM Studio;
// `rein model lora-to-gguf <peft-dir> --base <hf-dir>`: a PEFT adapter as a GGUF LoRA for that base.
import path from 'node:path';
import { BadInputError } from '../../common/errors.ts';
import { loadHfModel } from '../../node/engine/hf.ts';
import { GGUF_OUT_TYPES, hfToGguf } from '../../node/engine/gguf/convert.ts';
import type { GgufOutType } from '../../node/engine/gguf/convert.ts';
import { peftToGguf } from '../../node/engine/gguf/lora.ts';
import { registerCommand } from '../dispatch.ts';
import type { Command } from '../dispatch.ts';

const mib = (n: number): string => `${(n / 2 ** 20).toFixed(1)} MiB`;

export const modelToGgufCommand: Command = {
  name: 'model to-gguf',
  summary: 'Convert an HF model directory (Llama, Qwen2, Qwen3, Mistral) to a GGUF file for llama.cpp.',
  usage: `rein model to-gguf <hf-dir> [--out <file>] [--type ${GGUF_OUT_TYPES.join('|')}]`,
  description:
    'Writes llama.cpp tensor names, hyperparameters and the tokenizer (with its chat template). 2-D weights take ' +
    '--type (quantized as llama.cpp\'s reference quantizers do); norms and biases stay F32. A weight whose rows do not ' +
    'fit the type\'s blocks (256 values for q4_k, 32 for q8_0/q4_0) falls back and is listed. The file is staged and ' +
    'renamed when complete.',
  args: [1, 1],
  options: {
    out: { type: 'string', help: 'output file <path> (default <hf-dir>/<name>-<type>.gguf)' },
    type: { type: 'string', help: `weight type: ${GGUF_OUT_TYPES.join(', ')} (default f32; q4_k is a 4-bit base, q8_0 an 8-bit one)` },
    f16: { type: 'boolean', help: 'the same as --type f16' },
  },
  async run(ctx) {
    const dir = path.resolve(ctx.io.cwd, ctx.args[0]!);
    const typeOpt = ctx.options.type ?? (ctx.options.f16 === true ? 'f16' : 'f32');
    if (typeof typeOpt !== 'string' || !(GGUF_OUT_TYPES as readonly string[]).includes(typeOpt.toLowerCase())) {
      throw new BadInputError(`--type ${String(typeOpt)} is not one of ${GGUF_OUT_TYPES.join(', ')}`, 'type');
    }
    const type = typeOpt.toLowerCase() as GgufOutType;
    if (ctx.options.f16 === true && type !== 'f16') throw new BadInputError(`--f16 and --type ${type} disagree`, 'type');
    const outOpt = ctx.options.out;
    if (outOpt !== undefined && typeof outOpt !== 'string') throw new BadInputError('--out needs a file path', 'out');
    const out = outOpt === undefined ? path.join(dir, `${path.basename(dir)}-${type}.gguf`) : path.resolve(ctx.io.cwd, outOpt);
    let lastPct = -1;
    const r = hfToGguf(dir, out, {
      type,
      onProgress: (p) => {
        const pct = Math.floor((100 * p.bytesWritten) / p.totalBytes);
        if (!ctx.json && (pct >= lastPct + 10 || p.index === p.count - 1)) {
          lastPct = pct;
          ctx.io.stderr(`  ${String(pct).padStart(3)}%  ${p.index + 1}/${p.count} tensors, ${mib(p.bytesWritten)} of ${mib(p.totalBytes)}\n`);
        }
      },
    });
    const fell = r.fallbacks.length === 0 ? '' : `; ${r.fallbacks.length} weight(s) fell back: ${r.fallbacks.map((f) => `${f.tensor} ${f.type}`).join(', ')}`;
    ctx.print(`wrote ${r.architecture} ${type} GGUF (${r.tensors} tensors, ${mib(r.bytes)}) to ${r.path}${fell}`, { ...r, type });
  },
};

export const loraToGgufCommand: Command = {
  name: 'model lora-to-gguf',
  summary: 'Convert a PEFT LoRA adapter directory to a GGUF LoRA for llama.cpp and Ollama.',
  usage: 'rein model lora-to-gguf <peft-dir> --base <hf-dir> [--out <file>]',
  description: 'The adapter is checked against the base model (module names and shapes); tensors are F32.',
  args: [1, 1],
  options: {
    base: { type: 'string', help: 'the base HF model directory <path> (required)' },
    out: { type: 'string', help: 'output file <path> (default <peft-dir>/adapter.gguf)' },
  },
  async run(ctx) {
    const peft = path.resolve(ctx.io.cwd, ctx.args[0]!);
    const base = ctx.options.base;
    if (typeof base !== 'string') throw new BadInputError('--base <hf-dir> is required (the adapter is laid out for that model)', 'base');
    const outOpt = ctx.options.out;
    if (outOpt !== undefined && typeof outOpt !== 'string') throw new BadInputError('--out needs a file path', 'out');
    const out = outOpt === undefined ? path.join(peft, 'adapter.gguf') : path.resolve(ctx.io.cwd, outOpt);
    const m = loadHfModel(path.resolve(ctx.io.cwd, base), { tokenizer: false });
    const config = m.config;
    m.close();
    const r = peftToGguf(peft, config, out, { name: path.basename(peft) });
    ctx.print(`wrote GGUF LoRA (${r.tensors} tensors, ${mib(r.bytes)}) to ${r.path}`, r);
  },
};

registerCommand(modelToGgufCommand);
registerCommand(loraToGgufCommand);
