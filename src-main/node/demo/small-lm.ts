// The small LM's files in the Hugging Face layout: config.json (a Llama from the engine's parameter table),
// tokenizer.json (byte-level BPE trained on the corpus by bpe.ts), tokenizer_config.json with a ChatML chat
// template, generation_config.json, and model.safetensors. writeSmallLm writes the seeded initial weights (the same
// init as every Llama in the table); pretrain.ts trains them. Two corpora: 'styles' (corpus.ts, whose answers do not
// depend on the prompt; the committed model until the prompted one replaces it) and 'prompted' (prompted.ts).
import { cpSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConflictError } from '../../common/errors.ts';
import { llamaParams, parseLlamaConfig } from '../../common/engine/families/llama.ts';
import { numel } from '../../common/engine/families/params.ts';
import { Rng } from '../../common/engine/rng.ts';
import { writeSafetensors, type TensorToWrite } from '../engine/safetensors.ts';
import { tokenizerJson, trainBpe, type BpeModel } from './bpe.ts';
import { corpus as stylesCorpus } from './corpus.ts';
import { corpus as promptedCorpus } from './prompted.ts';
import { resourceDir } from '../resources.ts';

// ChatML, as Qwen2 writes it; <|im_end|> ends a turn.
export const SPECIAL_TOKENS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'] as const;
export const CHAT_TEMPLATE =
  "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

/** The committed, pretrained small LM (npm run build:small-lm writes it; BUILD.json records the build). */
export const SMALL_LM_DIR = resourceDir('small-lm');

/** Copies the committed small LM to `dir` (staged, then renamed into place), e.g. into a Rein home for the wizard. */
export function installSmallLm(dir: string): string {
  const target = path.resolve(dir);
  if (!existsSync(path.join(SMALL_LM_DIR, 'model.safetensors'))) {
    throw new ConflictError(`the small LM is missing from ${SMALL_LM_DIR} (npm run build:small-lm writes it)`, { dir: SMALL_LM_DIR });
  }
  const stage = `${target}.tmp-${process.pid}`;
  rmSync(stage, { recursive: true, force: true });
  try {
    cpSync(SMALL_LM_DIR, stage, { recursive: true });
    if (existsSync(target)) rmSync(target, { recursive: true, force: true });
    renameSync(stage, target);
  } catch (e) {
    rmSync(stage, { recursive: true, force: true });
    throw e;
  }
  return target;
}

export const CORPORA = ['styles', 'prompted'] as const;
export type CorpusName = (typeof CORPORA)[number];

/** `n` dialogues of a corpus from `seed` (for 'prompted', of its training compositions). */
export function corpusDialogues(name: CorpusName, n: number, seed: number): { prompt: string; answer: string }[] {
  return name === 'styles' ? stylesCorpus(n, seed) : promptedCorpus(n, seed);
}

/** One dialogue as the chat template renders it (the text the tokenizer and the model are trained on). */
export function renderDialogue(d: { prompt: string; answer: string }): string {
  return `<|im_start|>user\n${d.prompt}<|im_end|>\n<|im_start|>assistant\n${d.answer}<|im_end|>\n`;
}

export interface SmallLmOptions {
  seed?: number;
  /** The corpus the tokenizer (and pretraining) reads (default 'styles', the committed model's). */
  corpus?: CorpusName;
  /** How model.safetensors stores the weights (default F32); config.json's torch_dtype says which. */
  dtype?: 'F32' | 'F16';
  /** Most BPE tokens before the special tokens (default 1024 − 3; the corpus runs out of repeated pairs at about 715). */
  bpeSize?: number;
  /** Dialogues the tokenizer is trained on (default 4000). */
  tokenizerDialogues?: number;
  hidden?: number;
  layers?: number;
  overwrite?: boolean;
}

/** The tokenizer trained on `n` corpus dialogues from `seed`; special tokens are not in its text. */
export function trainTokenizer(seed: number, n: number, bpeSize: number, name: CorpusName = 'styles'): BpeModel {
  const texts = corpusDialogues(name, n, seed).flatMap((d) => [d.prompt, d.answer, 'user\n', 'assistant\n']);
  return trainBpe(texts, bpeSize);
}

export function smallLmConfig(vocabSize: number, hidden: number, layers: number, dtype: 'F32' | 'F16' = 'F32'): Record<string, unknown> {
  const eos = vocabSize - SPECIAL_TOKENS.length + SPECIAL_TOKENS.indexOf('<|im_end|>');
  return {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    vocab_size: vocabSize,
    hidden_size: hidden,
    intermediate_size: hidden * 3,
    num_hidden_layers: layers,
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
    torch_dtype: dtype === 'F16' ? 'float16' : 'float32',
    eos_token_id: eos,
  };
}

/** Writes the model directory (atomically: a staging directory renamed into place). */
export function writeSmallLm(dir: string, o: SmallLmOptions = {}): { dir: string; params: number; vocabSize: number } {
  const target = path.resolve(dir);
  if (existsSync(target) && readdirSync(target).length > 0 && o.overwrite !== true) {
    throw new ConflictError(`${target} exists and is not empty`, { dir: target });
  }
  const seed = o.seed ?? 0;
  const bpe = trainTokenizer(seed, o.tokenizerDialogues ?? 4000, o.bpeSize ?? 1024 - SPECIAL_TOKENS.length, o.corpus);
  const vocabSize = bpe.vocab.size + SPECIAL_TOKENS.length;
  const dtype = o.dtype ?? 'F32';
  const config = smallLmConfig(vocabSize, o.hidden ?? 128, o.layers ?? 4, dtype);
  const params = llamaParams(parseLlamaConfig(config));
  const rng = new Rng(seed);
  const tensors: Record<string, TensorToWrite> = {};
  for (const p of params) {
    const data = new Float32Array(numel(p.shape));
    const s = rng.fork(p.hfKey);
    if (p.init === 'ones') data.fill(1);
    else if (p.init === 'normal') s.fillNormal(data, 0.02);
    tensors[p.hfKey] = { shape: p.shape, data, dtype };
  }
  const stage = `${target}.tmp-${process.pid}`;
  rmSync(stage, { recursive: true, force: true });
  mkdirSync(stage, { recursive: true });
  try {
    writeFileSync(path.join(stage, 'config.json'), JSON.stringify(config, null, 2) + '\n');
    writeFileSync(path.join(stage, 'tokenizer.json'), JSON.stringify(tokenizerJson(bpe, SPECIAL_TOKENS)) + '\n');
    writeFileSync(
      path.join(stage, 'tokenizer_config.json'),
      JSON.stringify(
        { eos_token: '<|im_end|>', pad_token: '<|endoftext|>', add_bos_token: false, chat_template: CHAT_TEMPLATE, model_max_length: 512 },
        null,
        2,
      ) + '\n',
    );
    writeFileSync(path.join(stage, 'generation_config.json'), JSON.stringify({ eos_token_id: config.eos_token_id, do_sample: true }) + '\n');
    writeSafetensors(path.join(stage, 'model.safetensors'), tensors, { format: 'pt' });
    if (existsSync(target)) rmSync(target, { recursive: true, force: true });
    renameSync(stage, target);
  } catch (e) {
    rmSync(stage, { recursive: true, force: true });
    throw e;
  }
  return { dir: target, params: params.reduce((s, p) => s + numel(p.shape), 0), vocabSize };
}
