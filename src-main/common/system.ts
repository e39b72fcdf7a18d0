// What the setup wizard asks the core about the machine: agents, hardware and local models, and the answers of the
// verbs that connect an agent, pick a model and send a test turn. Pure types and one schema; the node side is
// src-main/node/system/.
import { z } from 'zod';

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
}

export type ModelSource = 'hf-cache' | 'folder' | 'ollama' | 'demo' | 'active';

export interface LocalModel {
  name: string;
  path: string;
  source: ModelSource;
  /** Architecture from config.json (`LlamaForCausalLM`), or the Ollama format. */
  arch: string | null;
  /** Parameter count from config.json through the model's parameter table; null when it cannot be read. */
  params: number | null;
  /** Rein can train it (HF layout with config.json, safetensors weights and tokenizer.json, a supported family). */
  trainable: boolean;
  /** Why not, in words, when it is not trainable. */
  why: string | null;
  bytes: number | null;
}

export interface TestTurnResult {
  turnId: number;
  /** The address the turn was posted to: the capture server agents use. */
  url: string;
  /** Round trip of the POST, ms. */
  ms: number;
}
