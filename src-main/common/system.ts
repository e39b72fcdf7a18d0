// What the setup wizard asks the core about the machine: agents, hardware and local models, and the answers of the
// verbs that connect an agent, pick a model and send a test turn. Pure types and one schema; the node side is
// src-main/node/system/.
import { z } from 'zod';
import type { TrainingDevice } from './config.ts';

export const AgentId = z.enum(['claude', 'codex', 'openclaw']);
export type AgentId = z.infer<typeof AgentId>;

export interface AgentInfo {
  agent: AgentId;
  /** The product's name as people know it. */
  name: string;
  installed: boolean;
  /** Why we think so: a binary on PATH, a config directory. */
  evidence: string[];
  /** Rein's entries are already in its config (a dry run of the installer changes nothing). */
  connected: boolean;
  /** Set when the dry run itself failed (an unreadable or corrupt config): the reason, shown as is. */
  error: string | null;
}

export interface FileChangeView {
  action: 'create' | 'modify' | 'delete';
  path: string;
  summary: string;
  /** Octal file mode after the change, e.g. "0600"; null for a deletion. */
  mode: string | null;
}

export interface AgentPlan {
  agent: AgentId;
  changes: FileChangeView[];
  /** Where the files' prior bytes go before anything is written. */
  backupsDir: string;
}

export interface AgentConnectResult {
  agent: AgentId;
  changes: FileChangeView[];
  backupDir: string | null;
  notes: string[];
}

export interface GpuInfo {
  vendor: string;
  /** Where it was seen (a sysfs path, a driver file). */
  evidence: string;
}

/** The device a training round ran on (node/engine/device.ts chooseDevice), recorded in the run's metrics. */
export interface DeviceChoice {
  /** The `training.device` setting. */
  requested: TrainingDevice;
  /** The ONNX Runtime execution provider the layer graphs, the head and the backward ran on. */
  provider: 'cpu' | 'webgpu' | 'cuda' | 'dml';
  adapter: string;
  /** With `auto` on the CPU: each GPU provider's probe failure. */
  reason: string | null;
  /**
   * On a GPU provider: the ONNX op types of the training graphs its op probe found missing, which the graphs compute
   * by compositions of other ops instead (node/engine/op-probe.ts, common/engine/substitutes.ts).
   */
  missingOps?: readonly string[];
}

export interface HardwareInfo {
  platform: string;
  arch: string;
  cpuModel: string;
  cpuCores: number;
  memoryBytes: number;
  freeMemoryBytes: number;
  gpus: GpuInfo[];
  /** ONNX Runtime execution providers of this build: `bundled` ones run as installed, the others need an install step. */
  providers: { name: string; bundled: boolean }[];
  /** Where `training.device` auto would train: the first GPU provider whose probe passes, else the CPU and why. */
  device: DeviceChoice;
}

/** Where a model was found: the HF cache, a folder the user picked, Ollama's store, LM Studio's models folder, Rein's
 * own list (`rein model add`), the demo model, or the active setting. */
export type ModelSource = 'hf-cache' | 'folder' | 'ollama' | 'lmstudio' | 'added' | 'demo' | 'active';

export interface LocalModel {
  /** What `rein model use|remove` and the `useModel` verb take: `ollama:<name>:<tag>` for Ollama, else the path. */
  id: string;
  name: string;
  /** The HF directory, or the GGUF file (for Ollama, the blob the manifest points to). */
  path: string;
  source: ModelSource;
  /** `hf`: a directory with config.json; `gguf`: one GGUF file. */
  format: 'hf' | 'gguf';
  /** Architecture: config.json's (`LlamaForCausalLM`) or the GGUF's general.architecture (`qwen2`). */
  arch: string | null;
  /** The weights' type: the GGUF file type (`Q4_K_M`, `Q8_0`, `F16`) or config.json's torch_dtype (`BF16`). */
  type: string | null;
  /** Parameter count from config.json through the model's parameter table, or the GGUF's tensor shapes. */
  params: number | null;
  /** Rein can train it (a supported family, with weights and a tokenizer it reads). */
  trainable: boolean;
  /** Why not, in words, when it is not trainable. */
  why: string | null;
  bytes: number | null;
  /** In Rein's own list of models (`rein model add`); only these can be removed. */
  added: boolean;
  /** The model being trained (setting model.active). */
  active: boolean;
}

export interface TestTurnResult {
  turnId: number;
  /** The address the turn was posted to: the capture server agents use. */
  url: string;
  /** Round trip of the POST, ms. */
  ms: number;
}
