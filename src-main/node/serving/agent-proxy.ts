// The proxy's agent endpoints: `POST /v1/messages` (Anthropic Messages, Claude Code) and `POST /v1/responses`
// (OpenAI Responses, Codex), each translated to the upstream's chat completions and back (anthropic.ts,
// responses.ts). The upstream is always asked to stream, with logprobs, so the client's stream is written as the
// model samples and the sampled tokens' μ come with it; a client that did not ask to stream gets the whole reply once
// it has ended. Each agent turn is stored once, when its answer ends (agent-turn.ts), with the tokens and μ of every
// reply of the turn that went through here.
import { createHash } from 'node:crypto';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { CaptureTurnInput } from '../../common/api.ts';
import { ReinError } from '../../common/errors.ts';
import { RedactBudget, redactSecrets } from '../../common/redact.ts';
import type { Core } from '../core/types.ts';
import { isJsonContentType, readRawBody } from '../capture-server/body.ts';
import { agentCwd, agentTurn, isNewPrompt } from './agent-turn.ts';
import type { AgentChat, Segment, SegmentMemory } from './agent-turn.ts';
import { anthropicError, anthropicMessage, AnthropicStream, claudeSession, MessagesRequest, messagesToChat, unsupportedContent } from './anthropic.ts';
import { ChatReplyReader } from './chat-reply.ts';
import type { ReplyEvent, ReplyToolCall } from './chat-reply.ts';
import { SseSplitter, sseData } from './openai.ts';
import type { Producer } from './producer.ts';
import { codexSession, ResponsesRequest, responsesError, ResponsesStream, responsesToChat } from './responses.ts';
import { mapTokens } from './tokens.ts';
import { parseToolCalls } from './toolcalls.ts';
import { CaptureBudget, limitReply, UPSTREAM_MAX_JSON_BYTES } from './upstream-limit.ts';
import type { VocabLike } from './tokens.ts';
import { abortWhenClientLeaves, ADAPTER_VERSION_HEADER, interruptEvidence, MODEL_ID_HEADER, parseSampling, parseWeights, pinnedSampling, PROMPT_TOKENS_HEADER, SAMPLING_HEADER, WEIGHTS_HEADER } from './upstream.ts';
import type { Sampling, Upstream } from './upstream.ts';

export type AgentWire = 'anthropic' | 'responses';

/**
 * The sources agent turns through the proxy are stored under: the agents' own, so `capture.agents` and `/rl` (which
 * rates by session) treat them as the agent's turns. Their hooks store no tokens; these do (training/data.ts).
 */
export const AGENT_SOURCES: Record<AgentWire, string> = { anthropic: 'claude-code', responses: 'codex' };

export interface AgentDeps {
  core: Core;
  upstream: () => Upstream;
  upstreamModel?: (model: string) => string | null;
  vocab: () => VocabLike | null;
  producer: (model: string | null) => Promise<Producer | null>;
  maxBody: number;
  /** The most bytes taken from one upstream reply (upstream-limit.ts); a whole JSON reply, at most UPSTREAM_MAX_JSON_BYTES. */
  maxReplyBytes: number;
  log: (line: string) => void;
  call(up: Upstream, sub: string, headers: OutgoingHttpHeaders, body: Buffer, signal: AbortSignal): Promise<IncomingMessage>;
  enqueue(job: (quietly: () => Promise<void>) => Promise<void>): void;
  segments: SegmentMemory;
}

interface Parsed {
  agent: AgentChat;
  stream: boolean;
  model: string;
  session: string | undefined;
}

/** One client stream, whichever format. */
interface ClientStream {
  /** The stream's first events; `promptTokens` when the upstream named them before its reply (PROMPT_TOKENS_HEADER). */
  start(promptTokens: number | null): string;
  push(ev: ReplyEvent): string;
  /** The closing events, one at a time (a Responses stream's each repeat the whole text: written as the client drains). */
  end(reader: ChatReplyReader): Iterable<string>;
  error(status: number, message: string): string;
  whole(reader: ChatReplyReader): unknown;
  /** The tool-call ids handed out, by upstream call index. */
  ids: Map<number, string>;
}

interface Wire {
  parse(body: unknown, req: IncomingMessage): Parsed | string;
  errorBody(status: number, message: string): string;
  /** A prompt longer than the model's context, in the form the client compacts on: [status, body, content type]. */
  overflow(o: Overflow, p: Parsed): [number, string, string];
  client(p: Parsed): ClientStream;
}

/** An upstream's answer that the prompt does not fit its context, with the two sizes when it names them. */
export interface Overflow {
  tokens: number | null;
  max: number | null;
  message: string;
}

/**
 * Whether an upstream error says the prompt is longer than the context: OpenAI's (and vLLM's) code
 * `context_length_exceeded` or message "maximum context length is M tokens. However, you requested N tokens",
 * llama-server's `exceed_context_size_error` with `n_prompt_tokens` and `n_ctx`, Rein's own model server's
 * "prompt is too long: N tokens > M maximum" (embedded.ts).
 */
export function overflowOf(raw: string): Overflow | null {
  let e: Record<string, unknown> = {};
  try {
    const v = JSON.parse(raw) as { error?: unknown };
    if (v.error !== null && typeof v.error === 'object') e = v.error as Record<string, unknown>;
  } catch {
    // not JSON
  }
  const message = typeof e.message === 'string' ? e.message : raw.slice(0, 2000);
  const num = (v: unknown) => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : null);
  if (e.type === 'exceed_context_size_error') return { tokens: num(e.n_prompt_tokens), max: num(e.n_ctx), message };
  const rein = /prompt is too long: (\d+) tokens > (\d+) maximum/i.exec(message);
  if (rein !== null) return { tokens: Number(rein[1]), max: Number(rein[2]), message };
  const openai = /maximum context length is (\d+) tokens\. However, you requested (\d+) tokens/i.exec(message);
  if (openai !== null) return { tokens: Number(openai[2]), max: Number(openai[1]), message };
  if (e.code === 'context_length_exceeded') return { tokens: null, max: null, message };
  return null;
}

const header = (req: IncomingMessage, name: string): string | undefined => {
  const v = req.headers[name];
  return typeof v === 'string' ? v : undefined;
};

function issue(e: { issues: { path: PropertyKey[]; message: string }[] }): string {
  const i = e.issues[0]!;
  return `${i.path.map(String).join('.') || 'body'}: ${i.message}`;
}

const WIRES: Record<AgentWire, Wire> = {
  anthropic: {
    parse(body, req) {
      const r = MessagesRequest.safeParse(body);
      if (!r.success) return issue(r.error);
      const unsupported = unsupportedContent(r.data);
      if (unsupported !== null) return unsupported;
      return { agent: messagesToChat(r.data), stream: r.data.stream === true, model: r.data.model, session: claudeSession(r.data, header(req, 'x-claude-code-session-id')) };
    },
    errorBody: anthropicError,
    // Anthropic's own message for it, which Claude Code reads (with its two numbers) to compact the conversation.
    overflow: (o) => [400, anthropicError(400, o.tokens !== null && o.max !== null ? `prompt is too long: ${o.tokens} tokens > ${o.max} maximum` : `prompt is too long: ${o.message}`), 'application/json; charset=utf-8'],
    client(p) {
      const s = new AnthropicStream(p.model);
      return {
        start: (n) => s.start(n ?? 0),
        push: (ev) => s.push(ev),
        end: (r) => [s.end(r)],
        error: (status, m) => s.error(status, m),
        whole: (r) => anthropicMessage(r, p.model, s.toolIds, r.promptTokens ?? 0),
        ids: s.toolIds,
      };
    },
  },
  responses: {
    parse(body, req) {
      const r = ResponsesRequest.safeParse(body);
      if (!r.success) return issue(r.error);
      return { agent: responsesToChat(r.data), stream: r.data.stream === true, model: r.data.model, session: codexSession(r.data, header(req, 'session_id') ?? header(req, 'conversation_id')) };
    },
    errorBody: responsesError,
    // OpenAI's code for it. A stream gets it as response.failed, where Codex reads the code and compacts.
    overflow(o, p) {
      if (!p.stream) return [400, responsesError(400, o.message, 'context_length_exceeded'), 'application/json; charset=utf-8'];
      const s = new ResponsesStream(p.model);
      return [200, s.start() + s.error(o.message, 'context_length_exceeded'), 'text/event-stream; charset=utf-8'];
    },
    client(p) {
      const s = new ResponsesStream(p.model);
      return { start: () => s.start(), push: (ev) => s.push(ev), end: (r) => s.end(r), error: (_status, m) => s.error(m), whole: (r) => s.whole(r), ids: s.callIds };
    },
  },
};

/** Writes a stream's closing events one at a time, each once the client has drained the one before, and ends it. */
async function endStream(res: ServerResponse, events: Iterable<string>): Promise<void> {
  for (const ev of events) {
    if (res.destroyed) return;
    if (!res.write(ev)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
    }
  }
  res.end();
}

function sendJson(res: ServerResponse, status: number, body: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(body);
}

/** The message of an upstream's error body (OpenAI's `{error: {message}}`), or its text. */
function upstreamMessage(raw: string): string {
  try {
    const v = JSON.parse(raw) as { error?: { message?: unknown } | string; message?: unknown };
    if (typeof v.error === 'string') return v.error;
    if (typeof v.error?.message === 'string') return v.error.message;
    if (typeof v.message === 'string') return v.message;
  } catch {
    // not JSON
  }
  return raw.slice(0, 2000);
}

export async function agentRequest(d: AgentDeps, wireName: AgentWire, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const wire = WIRES[wireName];
  const fail = (status: number, message: string) => sendJson(res, status, wire.errorBody(status, message));
  if (!isJsonContentType(req.headers['content-type'])) return fail(415, 'Content-Type must be application/json');
  let body: unknown;
  try {
    const raw = await readRawBody(req, d.maxBody);
    body = JSON.parse(raw.toString('utf8'));
  } catch (e) {
    const tooBig = e instanceof ReinError && e.code === 'too_large';
    return fail(tooBig ? 413 : 400, tooBig ? (e as Error).message : `the body is not valid JSON: ${(e as Error).message}`);
  }
  const p = wire.parse(body, req);
  if (typeof p === 'string') return fail(400, p);
  if (p.session !== undefined && isNewPrompt(p.agent)) await prompted(d, wireName, p.session);
  const up = d.upstream();
  const mapped = d.upstreamModel?.(p.model) ?? null;
  // Both APIs sample at temperature 1 with no truncation unless asked (Anthropic's and OpenAI's references give those
  // defaults). Said explicitly, so an upstream's own defaults (llama.cpp: top_k 40, min_p 0.05) do not apply, and
  // its logprobs are μ (proxy.ts pinnedSampling).
  const identity: Record<string, unknown> = { temperature: 1, top_p: 1, ...(up.kind === 'openai' ? {} : { top_k: 0, min_p: 0 }) };
  const sent: Record<string, unknown> = { ...identity, ...p.agent.chat, model: mapped ?? p.model, stream: true, stream_options: { include_usage: true }, logprobs: true };
  if (up.kind === 'vllm') sent.return_tokens_as_token_ids = true;
  // Rein's own model server reports the ids it consumed (the agent's system prompt, tools, history and tool results
  // rendered by the model's template): stored with the turn, they are the context a round trains its reply under.
  if (up.kind === 'rein') sent.return_token_ids = true;

  const abort = abortWhenClientLeaves(res);
  let upRes: IncomingMessage;
  try {
    upRes = await d.call(up, '/chat/completions', { 'content-type': 'application/json', accept: 'text/event-stream' }, Buffer.from(JSON.stringify(sent)), abort.signal);
  } catch (e) {
    if (abort.signal.aborted) return;
    return fail(502, `the upstream model server at ${up.baseUrl} is not reachable: ${(e as Error).message}`);
  }
  abort.signal.addEventListener('abort', () => upRes.destroy());
  const status = upRes.statusCode ?? 502;
  if (status < 200 || status >= 300) {
    const chunks: Buffer[] = [];
    limitReply(upRes, Math.min(d.maxReplyBytes, UPSTREAM_MAX_JSON_BYTES));
    upRes.on('data', (c: Buffer) => chunks.push(c));
    await new Promise<void>((r) => {
      upRes.on('end', r);
      upRes.on('close', r);
    });
    const raw = Buffer.concat(chunks).toString('utf8');
    const over = status === 400 || status === 413 ? overflowOf(raw) : null;
    if (over !== null) {
      const [code, out, type] = wire.overflow(over, p);
      res.writeHead(code, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(out);
      return;
    }
    return fail(status >= 500 ? 502 : status, `the upstream model server answered ${status}: ${upstreamMessage(raw)}`);
  }

  const reader = new ChatReplyReader();
  // A streamed reply is read here only to be translated; what stores its turn is a copy of its bytes, capped and read
  // once the reply has ended, as on the chat route (proxy.ts keep, upstream-limit.ts CaptureBudget).
  const copy: ReplyBytes | null = p.stream ? { raw: [], kept: new CaptureBudget() } : null;
  if (copy !== null) reader.keeping = false;
  const client = wire.client(p);
  const isSse = (upRes.headers['content-type'] ?? '').startsWith('text/event-stream');
  if (p.stream) {
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    const n = Number(upRes.headers[PROMPT_TOKENS_HEADER]);
    res.write(client.start(Number.isInteger(n) && n > 0 ? n : null));
  }
  const emit = (events: ReplyEvent[]) => {
    if (!p.stream) return;
    let out = '';
    for (const ev of events) out += client.push(ev);
    if (out !== '' && !res.write(out)) {
      upRes.pause();
      res.once('drain', () => upRes.resume());
    }
  };
  const split = new SseSplitter();
  const whole: Buffer[] = [];
  const onEvent = (ev: string) => {
    const data = sseData(ev);
    if (data === null || data === '[DONE]') return;
    try {
      emit(reader.chunk(JSON.parse(data)));
    } catch {
      // not JSON: nothing to translate
    }
  };
  // A client that did not ask to stream gets the whole reply, built in memory: held to the limit of a whole JSON
  // reply. A streamed one gets every byte, and what is kept to store the turn is capped as on the chat route.
  const tooBig = limitReply(upRes, isSse && p.stream ? d.maxReplyBytes : Math.min(d.maxReplyBytes, UPSTREAM_MAX_JSON_BYTES));
  upRes.on('data', (chunk: Buffer) => {
    if (!isSse) return void whole.push(chunk);
    if (copy !== null) keepBytes(copy, chunk);
    for (const ev of split.push(chunk)) onEvent(ev);
  });
  const ended = await new Promise<boolean>((resolve) => {
    upRes.on('end', () => resolve(true));
    upRes.on('error', () => resolve(false));
    upRes.on('close', () => resolve(false));
  });
  const facts = (): ReplyFacts => {
    const version = ((v) => (typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : null))(upRes.headers[ADAPTER_VERSION_HEADER]);
    const modelHeader = upRes.headers[MODEL_ID_HEADER];
    const own = up.kind === 'rein' && version !== null && typeof modelHeader === 'string' && modelHeader !== '';
    const weights = parseWeights(upRes.headers[WEIGHTS_HEADER]);
    return {
      wire: wireName,
      parsed: p,
      sent,
      kind: up.kind,
      reader: copy === null ? reader : null,
      copy,
      ids: [...client.ids.entries()].sort((a, b) => a[0] - b[0]).map(([, id]) => id),
      headerProducer: own ? { modelId: modelHeader, version: version!, ...(weights === null ? {} : { weights }) } : null,
      headerSampling: own ? parseSampling(upRes.headers[SAMPLING_HEADER]) : null,
      upstreamModel: mapped,
    };
  };
  if (abort.signal.aborted) {
    // The user stopped the answer as it streamed (Esc in Claude Code or Codex): stored as far as it had come, with an
    // `interrupt` signal (proxy.ts `interrupted`). A reply not streamed was shown nothing.
    if (copy !== null && isSse && copy.raw.length > 0) {
      const r = facts();
      d.enqueue((quietly) => captureAgent(d, r, quietly, true));
    }
    return;
  }
  if (!ended) {
    const why = tooBig()?.message ?? 'the upstream model server closed the connection before its reply ended';
    if (p.stream) res.end(client.error(502, why));
    else fail(502, why);
    return;
  }
  if (isSse) {
    const rest = split.rest();
    if (rest.length > 0) onEvent(rest);
  } else {
    try {
      emit(reader.reply(JSON.parse(Buffer.concat(whole).toString('utf8'))));
    } catch {
      return fail(502, 'the upstream model server sent a reply that is neither an event stream nor JSON');
    }
  }
  if (p.stream) await endStream(res, client.end(reader));
  else sendJson(res, 200, JSON.stringify(client.whole(reader)));

  const reply = facts();
  d.enqueue((quietly) => captureAgent(d, reply, quietly));
}

interface ReplyFacts {
  wire: AgentWire;
  parsed: Parsed;
  sent: Record<string, unknown>;
  kind: Upstream['kind'];
  /** The reply as read whole (a client that did not stream), or null: then `copy` is read at capture (readCopy). */
  reader: ChatReplyReader | null;
  copy: ReplyBytes | null;
  ids: string[];
  headerProducer: Producer | null;
  headerSampling: Sampling | null;
  upstreamModel: string | null;
}

/** The reply's tokens and μ, or why it has none that train it on-policy. */
/** What one streamed reply keeps of its bytes to store its turn (at most COPY_MAX_BYTES). */
interface ReplyBytes {
  raw: Buffer[];
  kept: CaptureBudget;
}

function keepBytes(copy: ReplyBytes, chunk: Buffer): void {
  const k = copy.kept.take(chunk.length);
  if (k > 0) copy.raw.push(k < chunk.length ? chunk.subarray(0, k) : chunk);
}

/** The kept bytes of a streamed reply, read as its chunks (an event cut at the cap is not JSON, and is left out). */
function readCopy(copy: ReplyBytes): ChatReplyReader {
  const reader = new ChatReplyReader();
  const split = new SseSplitter();
  const read = (data: string | null) => {
    if (data === null || data === '[DONE]') return;
    try {
      reader.chunk(JSON.parse(data));
    } catch {
      // not JSON
    }
  };
  // Read once, then let go: the reply's facts were still reachable after its turn was stored, and the kept bytes
  // (up to COPY_MAX_BYTES) with them (arrayBuffers stayed at 33 MB after a full GC; 1 MB once they are dropped here).
  const raw = copy.raw;
  copy.raw = [];
  for (const c of raw) for (const ev of split.push(c)) read(sseData(ev));
  read(sseData(split.rest()));
  return reader;
}

async function segmentOf(d: AgentDeps, r: ReplyFacts & { reader: ChatReplyReader }, quietly: () => Promise<void>): Promise<{ seg: Segment; producer: Producer | null; sampling: Sampling | null }> {
  const sampling = r.headerSampling ?? pinnedSampling(r.sent, r.kind);
  let producer = r.headerProducer;
  if (producer === null) {
    await quietly();
    producer = await d.producer(r.upstreamModel ?? r.parsed.model);
  }
  const off = (why: string) => ({ seg: { offPolicy: why }, producer, sampling: 'reason' in sampling ? null : sampling });
  if (producer === null) return off(`which adapter produced model ${JSON.stringify(r.parsed.model)} is unknown`);
  if ('reason' in sampling) return off(sampling.reason);
  if (!r.reader.logprobsComplete) return off('the upstream did not return logprobs for every chunk');
  // A reply with calls: the upstream parsed them out of the sampled text, which its logprobs still spell.
  const text = r.reader.toolCalls.size > 0 ? r.reader.entries.map((e) => e.token).join('') : r.reader.content;
  const m = mapTokens(r.reader.entries, text, d.vocab());
  if (!m.ok) return off(m.reason);
  if (r.reader.toolCalls.size > 0 && !spellsCalls(text, r.reader.calls())) return off('the logprobs do not spell the tool calls the upstream returned');
  const lps = r.reader.entries.map((e) => (e.logprob > 0 && e.logprob < 1e-4 ? 0 : e.logprob));
  if (lps.some((x) => !Number.isFinite(x) || x > 0)) return off('the upstream returned a logprob above 0');
  return { seg: { tokens: m.ids, logprobs: lps }, producer, sampling };
}

const sameJson = (a: string, b: string): boolean => {
  try {
    return JSON.stringify(JSON.parse(a)) === JSON.stringify(JSON.parse(b));
  } catch {
    return false;
  }
};

/** Whether the sampled text holds exactly the calls the upstream parsed out of it (so its tokens are the whole reply). */
function spellsCalls(text: string, calls: readonly ReplyToolCall[]): boolean {
  const parsed = parseToolCalls(text, null).calls;
  return parsed.length === calls.length && parsed.every((c, i) => c.name === calls[i]!.name && sameJson(c.arguments, calls[i]!.arguments || '{}'));
}

/**
 * Why a request's prompt ids must not be stored, or null. The ids spell the request as the model read it, where
 * the turn's text is redacted at capture (store/scrub.ts): a request holding a secret the redaction would replace
 * keeps its text only (and trains as text).
 */
function secretsIn(sent: Record<string, unknown>): string | null {
  try {
    const found = Object.keys(redactSecrets(JSON.stringify([sent.messages ?? null, sent.tools ?? null]), new RedactBudget()).found);
    return found.length === 0 ? null : `its request holds secrets (${found.join(', ')}) that the ids would keep`;
  } catch (e) {
    return `its request could not be checked for secrets: ${(e as Error).message}`;
  }
}

/**
 * A new prompt of a session: the files its last turn edited are checked for a revert now, before the model (and then
 * the agent) acts on the prompt (core verb sessionPrompted). Never fails the request.
 */
async function prompted(d: AgentDeps, wire: AgentWire, session: string): Promise<void> {
  try {
    await d.core.call('sessionPrompted', { source: AGENT_SOURCES[wire], session }, 'proxy');
  } catch (e) {
    d.log(`rein proxy: could not check the previous turn's edits for a revert: ${(e as Error).message}`);
  }
}

/** `interrupted`: the client left while the answer streamed; it is stored as far as it had come. */
async function captureAgent(d: AgentDeps, facts: ReplyFacts, quietly: () => Promise<void>, interrupted = false): Promise<void> {
  await quietly();
  const r = { ...facts, reader: facts.reader ?? readCopy(facts.copy!) };
  // A call the client was handed before it left is a step of a turn not yet answered; a step never became a turn.
  if (interrupted && (r.ids.length > 0 || r.reader.content === '')) return;
  const { seg, producer, sampling } = await segmentOf(d, r, quietly);
  if (r.ids.length > 0) {
    // A step: kept for the answer that ends the turn.
    d.segments.set(r.ids, seg);
    return;
  }
  const turn = agentTurn(r.parsed.agent, (id) => d.segments.get(id));
  if (turn === null) return;
  const session = r.parsed.session;
  const eventId = `proxy-agent-${createHash('sha256').update(JSON.stringify([session ?? null, r.parsed.agent.promptAt, turn.prompt, turn.context.length])).digest('hex').slice(0, 32)}`;
  const input: CaptureTurnInput = {
    source: AGENT_SOURCES[r.wire],
    eventId,
    prompt: turn.prompt,
    context: turn.context,
    response: r.reader.content,
    model: r.reader.model ?? r.parsed.model,
    ...(session === undefined ? {} : { session }),
    ...(interrupted ? { interrupted: interruptEvidence(r.reader.entries.length || null) } : {}),
  };
  // The agent's working directory lets the core watch the files the turn's edits changed, for a revert.
  const cwd = agentCwd(r.parsed.agent);
  if (cwd !== undefined) input.cwd = cwd;
  if ('tokens' in seg && producer !== null && sampling !== null) {
    input.tokens = seg.tokens;
    input.logprobs = seg.logprobs;
    input.adapterVersion = producer.version;
    input.policy = { modelId: producer.modelId, ...sampling, ...(producer.weights === undefined ? {} : { weights: producer.weights }) };
    if (r.reader.promptIds !== null) {
      const secrets = secretsIn(r.sent);
      if (secrets === null) input.promptIds = r.reader.promptIds;
      else d.log(`rein proxy: the agent turn is stored without its prompt ids: ${secrets}`);
    }
  } else d.log(`rein proxy: the agent's answer is stored as off-policy text: ${'offPolicy' in seg ? seg.offPolicy : 'no producer'}`);
  if (turn.stepsOffPolicy !== null) d.log(`rein proxy: a step of the agent turn has no tokens: ${turn.stepsOffPolicy}`);
  await quietly();
  try {
    await d.core.call('captureTurn', input, 'proxy');
  } catch (e) {
    d.log(`rein proxy: the agent turn was not stored: ${(e as Error).message}`);
  }
}
