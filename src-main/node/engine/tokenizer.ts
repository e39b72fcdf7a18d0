// A model's tokenizer and chat template: tokenizer.json through @huggingface/tokenizers, the chat template
// (tokenizer_config.json "chat_template", or a chat_template.jinja file beside it, as newer transformers
// write) through @huggingface/jinja, with the same variables transformers' apply_chat_template passes
// (messages, add_generation_prompt, bos_token, eos_token; raise_exception is built into the jinja runtime).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Template } from '@huggingface/jinja';
import { Tokenizer } from '@huggingface/tokenizers';
import { ReinError } from '../../common/errors.ts';
import type { ContextMessage } from '../../common/domain.ts';

export class TokenizerError extends ReinError {
  constructor(message: string, detail?: unknown) {
    super('bad_input', message, { detail });
    this.name = 'TokenizerError';
  }
}

export type ChatMessage = ContextMessage;

/** Token ids for one rated turn: the chat-formatted prompt up to the assistant header, then the response. */
export interface EncodedTurn {
  promptIds: number[];
  responseIds: number[];
}

/**
 * Token ids for an agent turn: the prompt, then everything the agent did up to its answer's end-of-turn token. The
 * mask has one entry per response token: 1 on the assistant's own tokens (each step's text and tool calls, and the
 * answer, each through its end-of-turn token), 0 on the tool results and the template's wrapper around them.
 */
export interface EncodedAgentTurn extends EncodedTurn {
  mask: number[];
}

/** A tool call as chat templates read it (transformers' "tool_calls": {type, function: {name, arguments}}). */
interface TemplateToolCall {
  type: 'function';
  function: { name: string; arguments: unknown };
}

interface TemplateMessage {
  role: string;
  content: string;
  tool_calls?: TemplateToolCall[];
}

/**
 * An agent's steps as chat-template messages. The Claude transcript (integrations/claude/transcript.ts) stores one
 * message per content block: assistant text, an assistant `type: 'tool_use'` whose content is the call's JSON input,
 * and a `role: 'tool'` result. One assistant message of the model holds its text and then its calls, so a run of
 * assistant blocks between two results becomes one message with `tool_calls` (in the template's own call format,
 * which is what the model would emit); a call's input that is not a JSON object (cut at TOOL_TEXT_MAX) stays text.
 */
function templateSteps(steps: readonly ChatMessage[]): TemplateMessage[] {
  const out: TemplateMessage[] = [];
  for (const m of steps) {
    if (m.role !== 'assistant') {
      out.push({ role: m.role, content: m.content });
      continue;
    }
    let cur = out.at(-1);
    if (cur?.role !== 'assistant') {
      cur = { role: 'assistant', content: '' };
      out.push(cur);
    }
    if (m.type === 'tool_use') {
      let args: unknown = m.content;
      try {
        const v: unknown = JSON.parse(m.content);
        if (v !== null && typeof v === 'object' && !Array.isArray(v)) args = v;
      } catch {
        // Not JSON: the template prints the string as it is.
      }
      (cur.tool_calls ??= []).push({ type: 'function', function: { name: m.name ?? 'tool', arguments: args } });
    } else cur.content = cur.content === '' ? m.content : `${cur.content}\n\n${m.content}`;
  }
  return out;
}

interface TokenizerJson {
  model?: { vocab?: Record<string, number> | [string, number][] };
  added_tokens?: { id: number; content: string; special?: boolean }[];
}

/** One more than the largest id in a parsed tokenizer.json (model vocab and added tokens); 0 when empty. */
export function tokenizerJsonSize(tokenizerJson: unknown): number {
  const tj = tokenizerJson as TokenizerJson;
  const vocab = tj?.model?.vocab;
  let maxId = -1;
  if (Array.isArray(vocab)) maxId = vocab.length - 1; // Unigram: [piece, score] pairs, id = index
  else if (vocab !== undefined && typeof vocab === 'object' && vocab !== null) for (const id of Object.values(vocab)) maxId = Math.max(maxId, id);
  for (const t of tj?.added_tokens ?? []) maxId = Math.max(maxId, t.id);
  return maxId + 1;
}

function readJson(file: string, what: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new TokenizerError(`cannot read ${what} ${file}: ${(e as Error).message}`, { path: file });
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new TokenizerError(`${what} ${file} is not valid JSON: ${(e as Error).message}`, { path: file });
  }
}

/** tokenizer_config.json writes special tokens as a string or as an AddedToken object {content, …}. */
function tokenText(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (v !== null && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string') return (v as { content: string }).content;
  return null;
}

export class ReinTokenizer {
  readonly dir: string;
  /** One more than the largest token id (vocab and added tokens): the embedding must have at least this many rows. */
  readonly size: number;
  readonly bosToken: string | null;
  readonly eosToken: string | null;
  readonly bosId: number | null;
  /** End-of-turn ids: the config's eos_token plus any generation_config eos ids passed in. */
  readonly eosIds: number[];
  readonly chatTemplate: string | null;
  private readonly tok: Tokenizer;
  private readonly template: Template | null;

  constructor(dir: string, tokenizerJson: unknown, config: Record<string, unknown>, chatTemplate: string | null, extraEos: number[] = []) {
    this.dir = dir;
    this.size = tokenizerJsonSize(tokenizerJson);
    if (this.size === 0) throw new TokenizerError(`tokenizer.json in ${dir} has no vocabulary`, { dir });
    try {
      this.tok = new Tokenizer(tokenizerJson as object, config);
    } catch (e) {
      throw new TokenizerError(`tokenizer.json in ${dir} could not be loaded: ${(e as Error).message}`, { dir });
    }
    this.bosToken = tokenText(config.bos_token);
    this.eosToken = tokenText(config.eos_token);
    this.bosId = this.bosToken === null ? null : (this.tok.token_to_id(this.bosToken) ?? null);
    const eos = this.eosToken === null ? undefined : this.tok.token_to_id(this.eosToken);
    this.eosIds = [...new Set([...(eos === undefined ? [] : [eos]), ...extraEos])];
    this.chatTemplate = chatTemplate;
    try {
      this.template = chatTemplate === null ? null : new Template(chatTemplate);
    } catch (e) {
      throw new TokenizerError(`the chat template in ${dir} does not parse: ${(e as Error).message}`, { dir });
    }
  }

  /** Token ids of plain text. Chat-formatted text already holds its special tokens, so none are added by default. */
  encode(text: string, opts: { addSpecialTokens?: boolean } = {}): number[] {
    return this.tok.encode(text, { add_special_tokens: opts.addSpecialTokens ?? false }).ids;
  }

  decode(ids: readonly number[], opts: { skipSpecialTokens?: boolean } = {}): string {
    for (const id of ids) {
      if (!Number.isInteger(id) || id < 0 || id >= this.size) throw new TokenizerError(`token id ${id} is outside the vocabulary (size ${this.size})`);
    }
    // No ids is no text (tokenizers.js refuses an empty array: a reply that is only its end-of-turn token, which a
    // trained adapter can learn, answered 500 from the model server).
    if (ids.length === 0) return '';
    return this.tok.decode([...ids], { skip_special_tokens: opts.skipSpecialTokens ?? false });
  }

  tokenToId(token: string): number | null {
    return this.tok.token_to_id(token) ?? null;
  }

  /** The chat template rendered to text. */
  /** `tools`: function declarations (OpenAI's `{type: 'function', function: {…}}`), rendered as the template renders them. */
  renderChat(messages: readonly ChatMessage[], opts: { addGenerationPrompt: boolean; tools?: readonly unknown[] }): string {
    if (this.template === null) throw new TokenizerError(`the tokenizer in ${this.dir} has no chat template`, { dir: this.dir });
    if (messages.length === 0) throw new TokenizerError('a chat needs at least one message');
    try {
      return this.template.render({
        messages,
        add_generation_prompt: opts.addGenerationPrompt,
        bos_token: this.bosToken ?? '',
        eos_token: this.eosToken ?? '',
        ...(opts.tools !== undefined && opts.tools.length > 0 ? { tools: opts.tools } : {}),
      });
    } catch (e) {
      // Also what a template's own raise_exception (a jinja built-in) lands in.
      throw new TokenizerError(`the chat template failed to render: ${(e as Error).message}`, { dir: this.dir });
    }
  }

  encodeChat(messages: readonly ChatMessage[], opts: { addGenerationPrompt: boolean; tools?: readonly unknown[] }): number[] {
    return this.encode(this.renderChat(messages, opts));
  }

  /**
   * Token ids for training on one turn. The prompt is the chat rendered with add_generation_prompt (exactly
   * what the model saw before it answered). The response is the rest of the chat rendered with the
   * assistant message appended, tokenised on its own (so the prompt ids are a true prefix, as at sampling
   * time), and cut after its first end-of-turn token: text a template adds after that (Qwen's trailing
   * "\n") is formatting, not the answer.
   */
  encodeTurn(prompt: string | readonly ChatMessage[], response: string): EncodedTurn {
    const context: ChatMessage[] = typeof prompt === 'string' ? [{ role: 'user', content: prompt }] : [...prompt];
    const promptText = this.renderChat(context, { addGenerationPrompt: true });
    const fullText = this.renderChat([...context, { role: 'assistant', content: response }], { addGenerationPrompt: false });
    if (!fullText.startsWith(promptText)) {
      throw new TokenizerError(
        'the chat template renders the prompt differently once the answer is added, so the answer tokens cannot be separated',
        { dir: this.dir },
      );
    }
    const promptIds = this.encode(promptText);
    let responseIds = this.encode(fullText.slice(promptText.length));
    const end = responseIds.findIndex((id) => this.eosIds.includes(id));
    if (end >= 0) responseIds = responseIds.slice(0, end + 1);
    if (responseIds.length === 0) throw new TokenizerError('the response encodes to no tokens');
    return { promptIds, responseIds };
  }

  /**
   * Token ids for training on an agent turn: `prompt` (the chat up to the human prompt), then the turn's own `steps`
   * (assistant text and tool calls, tool results) in the order they happened, then `answer`. Each assistant message
   * starts where the chat before it, rendered with add_generation_prompt, ends: exactly what the agent saw before
   * it wrote that step. Each piece between two such starts is tokenised on its own and masked 1 through its first
   * end-of-turn token (the step), 0 after it (the tool results and the next header); the answer ends at its
   * end-of-turn token, as in encodeTurn. A template that renders an earlier step differently once later messages
   * follow (one that drops or rewrites past reasoning, say), or that drops a tool call, cannot place the steps,
   * and is refused with a TokenizerError.
   */
  encodeAgentTurn(prompt: string | readonly ChatMessage[], steps: readonly ChatMessage[], answer: string): EncodedAgentTurn {
    const context: ChatMessage[] = typeof prompt === 'string' ? [{ role: 'user', content: prompt }] : [...prompt];
    const msgs: TemplateMessage[] = [...context, ...templateSteps(steps)];
    const last = msgs.at(-1)!;
    if (last.role === 'assistant' && last.tool_calls !== undefined) {
      throw new TokenizerError(`the turn ends with a call to ${last.tool_calls.map((c) => c.function.name).join(', ')} that has no result`, { dir: this.dir });
    }
    // A last step that is assistant text runs on into the answer: one message, as the model wrote it.
    if (last.role === 'assistant' && msgs.length > context.length) last.content = `${last.content}\n\n${answer}`;
    else msgs.push({ role: 'assistant', content: answer });
    const full = this.renderChat(msgs as ChatMessage[], { addGenerationPrompt: false });
    const starts: { at: number; calls: string[] }[] = [];
    for (let i = context.length; i < msgs.length; i++) {
      const m = msgs[i]!;
      if (m.role !== 'assistant') continue;
      const before = this.renderChat(msgs.slice(0, i) as ChatMessage[], { addGenerationPrompt: true });
      if (!full.startsWith(before)) {
        throw new TokenizerError(
          `the chat template renders the turn's earlier messages differently once message ${i} (${m.role}) follows them, so its steps cannot be trained in place`,
          { dir: this.dir },
        );
      }
      starts.push({ at: before.length, calls: (m.tool_calls ?? []).map((c) => c.function.name) });
    }
    const promptIds = this.encode(full.slice(0, starts[0]!.at));
    const responseIds: number[] = [];
    const mask: number[] = [];
    for (const [k, s] of starts.entries()) {
      const isAnswer = k === starts.length - 1;
      const ids = this.encode(full.slice(s.at, isAnswer ? full.length : starts[k + 1]!.at));
      const eot = ids.findIndex((id) => this.eosIds.includes(id));
      if (!isAnswer && eot < 0) throw new TokenizerError(`the chat template does not end step ${k + 1} with an end-of-turn token`, { dir: this.dir });
      const own = eot < 0 ? ids : ids.slice(0, eot + 1);
      const text = this.decode(own);
      const dropped = s.calls.find((name) => !text.includes(name));
      if (dropped !== undefined) throw new TokenizerError(`the chat template does not render the tool call to ${dropped}`, { dir: this.dir });
      responseIds.push(...(isAnswer ? own : ids));
      for (let j = 0; j < (isAnswer ? own.length : ids.length); j++) mask.push(j < own.length ? 1 : 0);
    }
    if (responseIds.length === 0) throw new TokenizerError('the response encodes to no tokens');
    return { promptIds, responseIds, mask };
  }
}

/** Load tokenizer.json (+ tokenizer_config.json, chat_template.jinja) from a model directory. */
export function loadTokenizer(dir: string, opts: { extraEosIds?: number[] } = {}): ReinTokenizer {
  const tjPath = path.join(dir, 'tokenizer.json');
  if (!existsSync(tjPath)) throw new TokenizerError(`no tokenizer.json in ${dir}`, { path: tjPath });
  const tokenizerJson = readJson(tjPath, 'tokenizer file');
  const cfgPath = path.join(dir, 'tokenizer_config.json');
  const config = existsSync(cfgPath) ? readJson(cfgPath, 'tokenizer config') : {};
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    throw new TokenizerError(`tokenizer_config.json in ${dir} is not a JSON object`, { path: cfgPath });
  }
  const cfg = config as Record<string, unknown>;
  let chatTemplate: string | null = null;
  const jinjaPath = path.join(dir, 'chat_template.jinja');
  if (existsSync(jinjaPath)) chatTemplate = readFileSync(jinjaPath, 'utf8');
  else if (typeof cfg.chat_template === 'string') chatTemplate = cfg.chat_template;
  else if (Array.isArray(cfg.chat_template)) {
    // Several named templates: transformers uses the one named "default".
    const named = cfg.chat_template as { name?: unknown; template?: unknown }[];
    const t = named.find((x) => x.name === 'default')?.template;
    if (typeof t === 'string') chatTemplate = t;
  }
  return new ReinTokenizer(dir, tokenizerJson, cfg, chatTemplate, opts.extraEosIds ?? []);
}
