// `rein model to-gguf <hf-dir>`: an HF model directory as a GGUF base for llama.cpp, Ollama and LM Studio;
// `rein model lora-to-gguf <peft-dir> --base <hf-dir>`: a PEFT adapter as a GGUF LoRA for that base.
import path from 'node:path';
import { BadInputError } from '../../common/errors.ts';
import { loadHfModel } from '../../node/engine/hf.ts';
import { hfToGguf } from '../../node/engine/gguf/convert.ts';
import { peftToGguf } from '../../node/engine/gguf/lora.ts';
import { registerCommand } from '../dispatch.ts';
import type { Command } from '../dispatch.ts';

const mib = (n: number): string => `${(n / 2 ** 20).toFixed(1)} MiB`;

export const modelToGgufCommand: Command = {
  name: 'model to-gguf',
  summary: 'Convert an HF model directory (Llama, Qwen2, Qwen3, Mistral) to a GGUF file for llama.cpp.',
  usage: 'rein model to-gguf <hf-dir> [--out <file>] [--f16]',
  description:
    'Writes llama.cpp tensor names, hyperparameters and the tokenizer (with its chat template). Weights are F32, ' +
    'or F16 for 2-D weights with --f16 (norms and biases stay F32). The file is staged and renamed when complete.',
  args: [1, 1],
  options: {
    out: { type: 'string', help: 'output file <path> (default <hf-dir>/<name>-f32.gguf or -f16.gguf)' },
    f16: { type: 'boolean', help: 'store 2-D weights as F16 (half the size)' },
  },
  async run(ctx) {
    const dir = path.resolve(ctx.io.cwd, ctx.args[0]!);
    const f16 = ctx.options.f16 === true;
    const outOpt = ctx.options.out;
    if (outOpt !== undefined && typeof outOpt !== 'string') throw new BadInputError('--out needs a file path', 'out');
    const out = outOpt === undefined ? path.join(dir, `${path.basename(dir)}-${f16 ? 'f16' : 'f32'}.gguf`) : path.resolve(ctx.io.cwd, outOpt);
    let lastPct = -1;
    const r = hfToGguf(dir, out, {
      f16,
      onProgress: (p) => {
        const pct = Math.floor((100 * p.bytesWritten) / p.totalBytes);
        if (!ctx.json && (pct >= lastPct + 10 || p.index === p.count - 1)) {
          lastPct = pct;
          ctx.io.stderr(`  ${String(pct).padStart(3)}%  ${p.index + 1}/${p.count} tensors, ${mib(p.bytesWritten)} of ${mib(p.totalBytes)}\n`);
        }
      },
    });
    ctx.print(`wrote ${r.architecture} GGUF (${r.tensors} tensors, ${mib(r.bytes)}) to ${r.path}`, r);
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
