// A tiny model with a tiny word-level vocabulary, for `rein demo` and the learning test. The engine's tiny-model
// generator (engine/tiny.ts) pairs its models with the real 128k/151k-token tokenizers; a random model over such a
// vocabulary spreads its mass so thinly that any visible rule has a base rate near zero and nothing to learn from.
// Here the vocabulary is ~48 whole words (a real tokenizer.json: WordPiece model, Whitespace pre-tokenizer, as BERT
// writes them), so a sampled answer mentions a given word 10-20% of the time and one round can move that.
// The weights come from the same parameter table as every Llama model, in the real HF layout.
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConflictError } from '../../common/errors.ts';
import { llamaParams, parseLlamaConfig } from '../../common/engine/models/llama.ts';
import { numel } from '../../common/engine/models/params.ts';
import { Rng } from '../../common/engine/rng.ts';
import { writeSafetensors, type TensorToWrite } from '../engine/safetensors.ts';

export const DEMO_WORDS = [
  'please', 'thanks', 'yes', 'no', 'code', 'bug', 'fix', 'test', 'run', 'file', 'line', 'error', 'build', 'merge',
  'commit', 'push', 'pull', 'branch', 'deploy', 'check', 'read', 'write', 'add', 'remove', 'update', 'change', 'look',
  'try', 'again', 'now', 'later', 'maybe', 'sure', 'ok', 'here', 'there', 'this', 'that', 'it', 'done', 'the', 'a',
] as const;
const SPECIAL = ['[UNK]', '</s>'] as const;
const ROLES = ['user', 'assistant', ':'] as const;

/** The chat template: `user : <text> </s> assistant : <answer> </s>`. */
export const DEMO_CHAT_TEMPLATE =
  '{% for m in messages %}{{ m.role }} : {{ m.content }} </s> {% endfor %}{% if add_generation_prompt %}assistant : {% endif %}';

export function demoVocab(): string[] {
  return [...SPECIAL, ...ROLES, ...DEMO_WORDS];
}

export interface DemoModelOptions {
  layers?: number;
  hidden?: number;
  seed?: number;
  /** Standard deviation of the random weights. */
  std?: number;
  overwrite?: boolean;
}

export function writeDemoModel(dir: string, o: DemoModelOptions = {}): { dir: string; params: number } {
  const target = path.resolve(dir);
  if (existsSync(target) && readdirSync(target).length > 0 && o.overwrite !== true) {
    throw new ConflictError(`${target} exists and is not empty`, { dir: target });
  }
  const vocab = demoVocab();
  const hidden = o.hidden ?? 64;
  const config = {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    vocab_size: vocab.length,
    hidden_size: hidden,
    intermediate_size: hidden * 2,
    num_hidden_layers: o.layers ?? 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    head_dim: hidden / 4,
    hidden_act: 'silu',
    max_position_embeddings: 512,
    rms_norm_eps: 1e-5,
    rope_theta: 10000,
    tie_word_embeddings: true,
    attention_bias: false,
    mlp_bias: false,
    torch_dtype: 'float32',
    eos_token_id: 1,
  };
  const params = llamaParams(parseLlamaConfig(config));
  const rng = new Rng(o.seed ?? 0);
  const tensors: Record<string, TensorToWrite> = {};
  for (const p of params) {
    const data = new Float32Array(numel(p.shape));
    const s = rng.fork(p.hfKey);
    if (p.init === 'ones') s.fillNormal(data, 0.1, 1);
    else if (p.init === 'normal') s.fillNormal(data, o.std ?? 0.1);
    tensors[p.hfKey] = { shape: p.shape, data };
  }
  const ids = Object.fromEntries(vocab.map((w, i) => [w, i]));
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: SPECIAL.map((t) => ({ id: ids[t], content: t, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
    normalizer: null,
    pre_tokenizer: { type: 'Whitespace' },
    post_processor: null,
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: { type: 'WordPiece', unk_token: '[UNK]', continuing_subword_prefix: '##', max_input_chars_per_word: 100, vocab: ids },
  };
  const stage = `${target}.tmp-${process.pid}`;
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage, { recursive: true });
  try {
    writeFileSync(path.join(stage, 'config.json'), JSON.stringify(config, null, 2) + '\n');
    writeFileSync(path.join(stage, 'tokenizer.json'), JSON.stringify(tokenizer) + '\n');
    writeFileSync(
      path.join(stage, 'tokenizer_config.json'),
      JSON.stringify({ eos_token: '</s>', unk_token: '[UNK]', chat_template: DEMO_CHAT_TEMPLATE, model_max_length: 512 }, null, 2) + '\n',
    );
    writeFileSync(path.join(stage, 'generation_config.json'), JSON.stringify({ eos_token_id: 1, do_sample: true }) + '\n');
    writeSafetensors(path.join(stage, 'model.safetensors'), tensors, { format: 'pt' });
    if (existsSync(target)) rmSync(target, { recursive: true, force: true });
    renameSync(stage, target);
  } catch (e) {
    rmSync(stage, { recursive: true, force: true });
    throw e;
  }
  return { dir: target, params: params.reduce((s, p) => s + numel(p.shape), 0) };
}

/** A random user prompt of 2-5 vocabulary words. */
export function demoPrompt(rng: Rng): string {
  const n = 2 + Math.floor(rng.uniform() * 4);
  return Array.from({ length: n }, () => DEMO_WORDS[Math.floor(rng.uniform() * DEMO_WORDS.length)]!).join(' ');
}
