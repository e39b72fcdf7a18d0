// One typed settings table: each entry has its schema, default and help text. It drives validation
// (store, HTTP, CLI), the `rein settings` output and the UI forms (which receive `describeSettings()`).
import { z } from 'zod';
import { CustomTrainingSchema } from './training/presets.ts';
import { DEFAULT_SCHEDULE, ScheduleSchema } from './training/schedule.ts';

interface SettingDef<S extends z.ZodType> {
  schema: S;
  default: z.infer<S>;
  help: string;
  group: 'capture' | 'training' | 'popup' | 'server' | 'adapters' | 'model' | 'app' | 'reward';
}

function def<S extends z.ZodType>(schema: S, dflt: z.infer<S>, group: SettingDef<S>['group'], help: string): SettingDef<S> {
  return { schema, default: dflt, group, help };
}

/** vLLM's allowed --max-lora-rank values (vllm/config/lora.py, MaxLoRARanks); it refuses any other at start. */
export const VLLM_MAX_LORA_RANKS = [1, 8, 16, 32, 64, 128, 256, 320, 512] as const;

/** The `training.device` choices: auto, or one ONNX Runtime execution provider (node/engine/device.ts). */
export const TRAINING_DEVICES = ['auto', 'cpu', 'webgpu', 'cuda', 'dml'] as const;
export type TrainingDevice = (typeof TRAINING_DEVICES)[number];

export const SETTINGS = {
  'capture.paused': def(z.boolean(), false, 'capture', 'Stop storing new turns (do not disturb). Ratings still work.'),
  'capture.maxTextChars': def(
    z.number().int().min(1_000).max(5_000_000),
    200_000,
    'capture',
    'Longest prompt, response or context text stored; longer text is cut with a visible marker.',
  ),
  'capture.expireHours': def(
    z.number().min(0).max(24 * 365),
    72,
    'capture',
    'Hours after which an unrated turn can no longer be rated by `/rl` or `rein good` (0 = never).',
  ),
  'capture.agents': def(
    z.array(z.string().min(1).max(64)).max(32),
    ['claude-code', 'codex', 'openclaw', 'proxy', 'api'],
    'capture',
    'Sources whose turns are stored.',
  ),
  'training.threshold': def(
    z.number().int().min(1).max(10_000),
    32,
    'training',
    'Pending ratings that start a training round automatically (when training.schedule mode is threshold).',
  ),
  'training.auto': def(z.boolean(), true, 'training', 'Train automatically, when training.schedule says a round is due.'),
  'training.schedule': def(
    ScheduleSchema,
    DEFAULT_SCHEDULE,
    'training',
    'When automatic rounds start. `threshold`: as soon as training.threshold ratings are pending. `interval`: at most once every `everyMinutes` minutes, when at least `minPending` ratings are pending. `nightly`: once a night, within 6 hours after the local time `at` (HH:MM), when at least `minPending` ratings are pending and the computer is idle.',
  ),
  'training.preset': def(
    z.enum(['careful', 'balanced', 'aggressive', 'custom']),
    'balanced',
    'training',
    'How hard each round pushes the model: careful, balanced, aggressive, or custom.',
  ),
  'training.replayRatio': def(
    z.number().min(0).max(4),
    0.25,
    'training',
    'Older, already-trained ratings mixed into each round, as a fraction of the pending ones.',
  ),
  'training.custom': def(
    CustomTrainingSchema,
    {},
    'training',
    'Fields that override the balanced preset when training.preset is custom (see `rein presets` or describePresets for each field).',
  ),
  'training.rewardMapper': def(
    z.string().max(10_000).nullable(),
    null,
    'training',
    'Your own reward mapping: a JavaScript function (rating, turn) => reward from -1 to 1, with rating.kind, score, reward (the default), tags, comment, correction and turn.source, length. It runs sandboxed and is tried on your recent ratings before it is saved; without one (null), the default applies: Good +1, Bad -1, a score s as (s-3)/2.',
  ),
  'training.implicit': def(
    z.enum(['off', 'confirm-only', 'weighted']),
    'confirm-only',
    'training',
    'Weak labels: what Rein reads from your reaction to an answer (your next message in the session, a re-ask, Esc), offered on the card and the popup to confirm (Y), flip (F) or dismiss (D). `off`: no label is read, offered or trained (ratings you made earlier by confirming one stay ratings). `confirm-only`: a label trains only once you confirm or flip it, as the rating you gave. `weighted`: also, each round trains the unconfirmed labels the card would offer, at the label\'s confidence × 0.5 of a rating\'s weight (at most half a click), until a round that trained it goes live; they do not count toward training.threshold, never override a rating of the same answer, and are never held out: the eval gate and every held-out figure use your ratings only.',
  ),
  'training.onlyWhenIdle': def(z.boolean(), false, 'training', 'Wait until the computer is idle before training.'),
  'training.matchLlamaCpp': def(
    z.boolean(),
    true,
    'training',
    'On a GGUF base, train on what llama.cpp computes from that file: each frozen layer rounds its input as llama.cpp\'s CPU kernels do for the weight type (8-bit blocks for Q8_0/Q4_0/K-quant weights, fp16 for F16), so the trained model is the served one. Off: exact f32 products with the dequantized weights.',
  ),
  'training.keepQuantized': def(
    z.boolean(),
    true,
    'training',
    'On a GGUF base with 4- or 8-bit weights (Q4_0, Q4_1, Q4_K, Q8_0), keep those weights block-quantized in memory while training: 5 to 9 bits per weight instead of 32, for a step that takes about as long. Off: dequantize them to f32 (the same results, several times the memory).',
  ),
  'training.device': def(
    z.enum(TRAINING_DEVICES),
    'auto',
    'training',
    'Where training runs. `auto`: on a GPU when a probe runs a small training step on it and gets the CPU\'s answer (CUDA, then DirectML, then WebGPU), else on the CPU, with the reason in the run\'s metrics. `cpu`, `webgpu`, `cuda`, `dml`: that one only; a round fails with the provider\'s probe error if it cannot run there. CUDA needs onnxruntime-node\'s CUDA provider libraries (CUDA 12, cuDNN 9); DirectML is Windows only.',
  ),
  'popup.enabled': def(z.boolean(), true, 'popup', 'Ask Good / Bad after each captured answer.'),
  'popup.timeoutSeconds': def(
    z.number().int().min(0).max(3600),
    45,
    'popup',
    'Seconds before an unanswered popup closes and the turn counts as ignored (0 = never).',
  ),
  'popup.agents': def(
    z.array(z.string().min(1).max(64)).max(32),
    ['claude-code', 'codex', 'openclaw', 'proxy', 'api'],
    'popup',
    'Sources whose turns raise the popup.',
  ),
  'reward.ask': def(
    z.enum(['always', 'unsure']),
    'always',
    'reward',
    'Active learning. `always`: the popup asks about every answer. `unsure`: it asks only when the reward model (trained on your ratings after each round) is unsure, |p - 0.5| below reward.unsureMargin, and says so; an answer it does not ask about stays unrated and trains nothing.',
  ),
  'reward.unsureMargin': def(
    z.number().min(0.01).max(0.5),
    0.4,
    'reward',
    'With reward.ask unsure: ask when the reward model\'s p(good) is within this of 0.5. 0.4 asks unless it is at least 90% sure either way; 0.5 asks always.',
  ),
  'reward.gateBlocks': def(
    z.boolean(),
    false,
    'reward',
    'The eval gate reports the reward model\'s mean score of the candidate\'s answers against its parent\'s on held-out prompts; with true, a candidate whose difference is below 0 with 95% confidence is rejected.',
  ),
  'reward.gatePrompts': def(
    z.number().int().min(0).max(64),
    8,
    'reward',
    'Held-out prompts on which the eval gate samples one answer from the candidate and one from its parent for the reward model to score (2 sampled answers of at most 48 tokens each per prompt; 0 turns the reward metric off).',
  ),
  'reward.pseudoLabelWeight': def(
    z.number().min(0).max(0.5),
    0,
    'reward',
    'Weight of the reward model\'s own verdict on answers the popup did not ask about, as training labels next to your ratings (weight 1). 0: its predictions never train (the default).',
  ),
  'server.port': def(
    z.number().int().min(1024).max(65535),
    7433,
    'server',
    'Loopback port of the capture server and the API.',
  ),
  'server.rateLimitPerMinute': def(
    z.number().int().min(10).max(1_000_000),
    6_000,
    'server',
    'Requests per minute the capture server accepts before answering 429.',
  ),
  'adapters.keepInactive': def(
    z.number().int().min(0).max(1000),
    5,
    'adapters',
    'Inactive adapter versions kept on disk; older ones are deleted (rejected ones are kept for inspection).',
  ),
  'proxy.port': def(
    z.number().int().min(1024).max(65535),
    7434,
    'server',
    'Loopback port of the OpenAI-compatible capture proxy (`rein serve-model`); point an OpenAI client at http://127.0.0.1:PORT/v1 with the Rein token as its API key.',
  ),
  'proxy.upstream': def(
    z.url({ protocol: /^https?$/ }).max(2048).nullable(),
    null,
    'server',
    'Where the proxy forwards chat requests: an OpenAI-compatible base URL (Ollama http://127.0.0.1:11434/v1, vLLM, llama-server, LM Studio), or null for Rein\'s own model server.',
  ),
  'proxy.upstreamKind': def(
    z.enum(['openai', 'ollama', 'vllm', 'llama-server', 'lmstudio']),
    'openai',
    'server',
    'What the upstream is; vllm lets the proxy ask for token ids (return_tokens_as_token_ids) when the client did not ask for logprobs.',
  ),
  'proxy.upstreamApiKey': def(
    z.string().min(1).max(1024).regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces (it is sent in an HTTP header)').nullable(),
    null,
    'server',
    'API key the proxy sends to the upstream as `Authorization: Bearer <key>` (vLLM started with --api-key, a remote LM Studio), or null for none. The Rein token is never sent upstream.',
  ),
  'proxy.baseModelName': def(
    z.string().min(1).max(256).nullable(),
    null,
    'server',
    'The upstream\'s name for the base model without an adapter: its answers are stored as on-policy turns of version 0.',
  ),
  'serving.modelGguf': def(
    z.string().min(1).max(4096).nullable(),
    null,
    'model',
    'The base model as a GGUF file for Rein\'s own model server (null: converted once from the HF weights of model.active).',
  ),
  'serving.contextSize': def(z.number().int().min(256).max(1_048_576), 4096, 'model', 'Context length of Rein\'s own model server, in tokens: an agent\'s prompt must fit (`rein setup <agent> --local-model` raises it to 32768 for Claude Code or Codex). A running `rein serve-model` reads it at start: restart it after a change (the app\'s own chat picks it up by itself).'),
  'publish.ollama': def(
    z.strictObject({
      enabled: z.boolean(),
      url: z.url({ protocol: /^https?$/ }).max(2048),
      base: z.string().min(1).max(256).nullable(),
    }),
    { enabled: false, url: 'http://127.0.0.1:11434', base: null },
    'adapters',
    'Publish each activated version to Ollama as <base>-rein:vN and the alias <base>-rein (base: the Ollama model the adapter was trained for).',
  ),
  'publish.vllm': def(
    z.strictObject({
      enabled: z.boolean(),
      url: z.url({ protocol: /^https?$/ }).max(2048),
      name: z.string().min(1).max(256),
      apiKey: z.string().max(1024).nullable(),
      maxLoraRank: z.number().int().refine((n) => (VLLM_MAX_LORA_RANKS as readonly number[]).includes(n), { message: `vLLM's --max-lora-rank is one of ${VLLM_MAX_LORA_RANKS.join(', ')}` }),
    }),
    { enabled: false, url: 'http://127.0.0.1:8000', name: 'rein', apiKey: null, maxLoraRank: 16 },
    'adapters',
    'Load each activated version into a running vLLM (runtime LoRA) as <name>-v<N> (the proxy maps <name> to the active one); vLLM needs --enable-lora, --max-lora-rank (one of 1, 8, 16, 32, 64, 128, 256, 320, 512; default 16) at least the adapter\'s rank, and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True.',
  ),
  'publish.llamaServer': def(
    z.strictObject({
      enabled: z.boolean(),
      url: z.url({ protocol: /^https?$/ }).max(2048).nullable(),
    }),
    { enabled: false, url: null },
    'adapters',
    'Write llama-server --lora launch arguments for each version; with a url, switch preloaded versions by scale (POST /lora-adapters).',
  ),
  'publish.lmStudio': def(
    z.strictObject({
      enabled: z.boolean(),
      modelsDir: z.string().min(1).max(4096).nullable(),
    }),
    { enabled: false, modelsDir: null },
    'adapters',
    'Write a merged GGUF (base + adapter) per version into LM Studio\'s models folder (null: ~/.lmstudio/models).',
  ),
  'app.startAtLogin': def(z.boolean(), false, 'app', 'Start the Rein app (tray only, no window) when you log in.'),
  'models.folders': def(
    z.array(z.string().min(1).max(4096).refine((f) => f.startsWith('/') || f.startsWith('~/') || /^[A-Za-z]:[\\/]/.test(f), { message: 'an absolute path (or ~/…)' })).max(32),
    [],
    'model',
    'Folders Rein searches for models (HF model folders and .gguf files, one level down), besides the Hugging Face cache, Ollama and LM Studio.',
  ),
  'model.active': def(
    z.string().min(1).max(4096).nullable(),
    null,
    'model',
    'The model being trained: an id from `rein model list` (ollama:<name>:<tag>, or a path), or the absolute path of an HF model directory or a .gguf file.',
  ),
} as const;

export type SettingKey = keyof typeof SETTINGS;
export type Settings = { [K in SettingKey]: z.infer<(typeof SETTINGS)[K]['schema']> };

export const SETTING_KEYS = Object.keys(SETTINGS) as SettingKey[];

export function defaultSettings(): Settings {
  const out: Record<string, unknown> = {};
  for (const k of SETTING_KEYS) out[k] = structuredClone(SETTINGS[k].default);
  return out as Settings;
}

export function isSettingKey(k: string): k is SettingKey {
  return Object.hasOwn(SETTINGS, k);
}

export interface SettingDescription {
  key: SettingKey;
  group: string;
  help: string;
  default: unknown;
  jsonSchema: unknown;
}

export function describeSettings(): SettingDescription[] {
  return SETTING_KEYS.map((key) => ({
    key,
    group: SETTINGS[key].group,
    help: SETTINGS[key].help,
    default: SETTINGS[key].default,
    jsonSchema: z.toJSONSchema(SETTINGS[key].schema),
  }));
}
