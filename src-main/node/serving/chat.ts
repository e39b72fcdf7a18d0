// The chat and the arena's answers: a chat request to the capture proxy in front of Rein's own model server (or the
// configured upstream), exactly as any OpenAI client's, so the proxy stores the answer the one way it stores every
// on-policy turn (tokens, μ of the sampled distribution, the producing version from the server's headers). The
// request names its source (chat or arena) and event id, so the stored turn is found again and handed back to rate.
// The serve stack (serving/stack.ts) starts on the first chat and restarts when the model or upstream settings change.
import { randomUUID } from 'node:crypto';
import type { ChatAnswer } from '../../common/api.ts';
import { versionModelName } from '../../common/chat/arena.ts';
import { NotAvailableError, ReinError } from '../../common/errors.ts';
import type { AnswerRequest, ChatDeps, ChatService } from '../core/core.ts';
import { readOrCreateToken } from '../home.ts';
import { SseSplitter, sseData } from './openai.ts';
import { SERVE_STACK_KEYS } from './serve-model-info.ts';
import type { ServeStack } from './stack.ts';



export function createChatService(deps: ChatDeps): ChatService {
  const log = deps.log ?? ((line: string) => process.stderr.write(line + '\n'));
  let stack: Promise<ServeStack> | null = null;
  const stop = async (): Promise<void> => {
    const s = stack;
    stack = null;
    if (s !== null) await (await s.catch(() => null))?.close();
  };

  function stackNow(): Promise<ServeStack> {
    if (stack === null) {
      const token = readOrCreateToken(deps.home);
      // Loaded on the first chat: the stack brings llama.cpp, which a CLI command that never chats should not load.
      stack = import('./stack.ts').then(({ startServeStack }) => startServeStack({ core: deps.core(), token, port: 0, log }));
      // A failed start (no model yet) is tried again by the next chat.
      stack.catch(() => (stack = null));
    }
    return stack;
  }

  /** The model name to ask the server for: a version of Rein's own, or the name the upstream serves it under. */
  function modelName(st: ServeStack, version: number | undefined): string {
    if (st.model !== null) return version === undefined ? 'rein' : versionModelName(version);
    const s = deps.settings();
    const adapters = deps.store.adapters.list(deps.modelId());
    const wanted = version === undefined ? (adapters.find((a) => a.status === 'active')?.version ?? 0) : version;
    if (wanted === 0) {
      if (s['proxy.baseModelName'] !== null) return s['proxy.baseModelName'];
      throw new NotAvailableError('chat', `the upstream ${st.upstream.baseUrl} serves the base model under a name Rein does not know: set proxy.baseModelName`);
    }
    const published = Object.values(adapters.find((a) => a.version === wanted)?.publish ?? {}).find((r) => r.ok && r.model !== undefined)?.model;
    if (published === undefined) throw new NotAvailableError('chat', `v${wanted} is not published to the upstream ${st.upstream.baseUrl}: publish it (rein publish), or set proxy.upstream to null to use Rein's own model server`);
    return published;
  }

  async function answer(req: AnswerRequest): Promise<ChatAnswer> {
    let st: ServeStack;
    try {
      st = await stackNow();
    } catch (e) {
      if (e instanceof ReinError) throw e;
      throw new NotAvailableError('chat', `the model server did not start: ${(e as Error).message}`);
    }
    const model = modelName(st, req.version);
    const eventId = `${req.source}-${randomUUID()}`;
    // Temperature 1 and top_p 1 (and top_k, min_p off on llama.cpp-family and vLLM upstreams): the sampler is the
    // identity, so the logprobs any upstream reports are μ and the answer trains on-policy (proxy.ts pinnedSampling).
    const pin = st.model !== null || st.upstream.kind === 'openai' ? {} : { top_k: 0, min_p: 0 };
    const token = readOrCreateToken(deps.home);
    const res = await fetch(`${st.url}/chat/completions`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${token}`,
        'x-rein-source': req.source,
        'x-rein-event-id': eventId,
        'x-rein-session': req.session,
      },
      body: JSON.stringify({ model, messages: req.messages, stream: true, max_tokens: req.maxTokens, temperature: 1, top_p: 1, ...pin }),
    });
    if (!res.ok || res.body === null) {
      const text = await res.text();
      let message = text.slice(0, 500);
      try {
        message = (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? message;
      } catch {
        // Not JSON: the text as it came.
      }
      throw new ReinError(res.status === 404 ? 'not_found' : 'not_available', `chat: the model server answered ${res.status}: ${message}`, { field: res.status === 404 ? 'version' : undefined });
    }
    const split = new SseSplitter();
    let text = '';
    const read = (data: string | null) => {
      if (data === null || data === '[DONE]') return;
      let delta: string | undefined;
      try {
        delta = (JSON.parse(data) as { choices?: { delta?: { content?: unknown } }[] }).choices?.[0]?.delta?.content as string | undefined;
      } catch {
        return;
      }
      if (typeof delta !== 'string' || delta === '') return;
      text += delta;
      if (req.streamId !== undefined) deps.emit(req.streamId, delta);
    };
    for await (const chunk of res.body) for (const ev of split.push(Buffer.from(chunk as Uint8Array))) read(sseData(ev));
    read(sseData(split.rest()));
    const header = res.headers.get('x-rein-adapter-version');
    await st.proxy.idle();
    const turnId = deps.store.arena.turnId(req.source, eventId);
    const turn = turnId === null ? null : deps.store.turnSummary(turnId);
    const version = header !== null && /^\d+$/.test(header) ? Number(header) : req.version ?? null;
    let note: string | null = null;
    if (turn === null || turn === undefined) note = deps.settings()['capture.paused'] ? 'not stored: capture is paused' : 'not stored (see the Rein log)';
    else if (!turn.onPolicy) note = 'stored as text only (off-policy): the server gave no usable logprobs';
    return { turnId: turn?.id ?? null, text, version, onPolicy: turn?.onPolicy ?? false, note };
  }

  return {
    answer,
    settingsChanged(changed) {
      if (Object.keys(changed).some((k) => (SERVE_STACK_KEYS as readonly string[]).includes(k))) void stop();
    },
    close: stop,
  };
}
