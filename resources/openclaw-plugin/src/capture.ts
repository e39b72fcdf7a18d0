// The plugin's logic, free of OpenClaw imports so tests drive it with recorded event sequences.
// - message_received opens a turn for the session (the prompt, who sent it, the channel's message id).
// - agent_end closes it with the whole reply: every assistant text after the last user message (all chunks).
//   Without agent_end (conversation access off), message_sent chunks are gathered and posted after a quiet spell.
// - message_sent ids are mapped to the captured turn, so a reaction on any chunk rates that turn.
// - Only the prompter, or a rater the owner allowlisted, may rate; admin commands need the admins allowlist.
// It talks to Rein only through `post` (the capture server, secret in a header), runs no commands and reads no
// environment: everything comes from the plugin config.
import { parseReactions, reactionValue } from './reactions.ts';

export interface ReinPluginConfig {
  captureUrl: string;
  secret: string;
  raters?: string[];
  admins?: string[];
  flushMs?: number;
}

export type Post = (body: Record<string, unknown>) => Promise<Record<string, unknown>>;
export interface Logger {
  info(msg: string): void;
  warn(msg: string): void;
}

interface Prompt {
  text: string;
  senderId: string | undefined;
  senderName: string | undefined;
  channel: string | undefined;
  at: number;
}
interface CapturedTurn {
  turnId: number;
  senderId: string | undefined;
  senderName: string | undefined;
}

export interface EventCtx {
  sessionKey?: string;
  channelId?: string;
  conversationId?: string;
  senderId?: string;
  messageId?: string;
}

type Obj = Record<string, unknown>;
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : typeof v === 'number' ? String(v) : undefined);

export function validateConfig(raw: unknown): ReinPluginConfig {
  const c = (raw ?? {}) as Obj;
  const url = str(c.captureUrl);
  const secret = str(c.secret);
  if (!url || !/^http:\/\/(127\.0\.0\.1|localhost|\[::1\]):\d+\/?$/.test(url)) {
    throw new Error('rein plugin: config.captureUrl must be Rein\'s loopback address, e.g. http://127.0.0.1:7433');
  }
  if (!secret || secret.length < 32) throw new Error('rein plugin: config.secret must be the Rein token');
  const list = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  return { captureUrl: url.replace(/\/$/, ''), secret, raters: list(c.raters), admins: list(c.admins), flushMs: typeof c.flushMs === 'number' ? c.flushMs : 1500 };
}

/** The HTTP transport to `POST /hooks/openclaw`. */
export function httpPost(config: ReinPluginConfig, timeoutMs = 5_000): Post {
  return async (body) => {
    const res = await fetch(`${config.captureUrl}/hooks/openclaw`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${config.secret}` },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const out = (await res.json().catch(() => ({}))) as Obj;
    if (!res.ok) throw new Error(`Rein answered ${res.status}: ${String(out.message ?? out.error ?? '')}`);
    return out;
  };
}

/** Text of an agent_end message's content (a string or text blocks). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((b) => (b && typeof b === 'object' && (b as Obj).type === 'text' && typeof (b as Obj).text === 'string' ? ((b as Obj).text as string) : ''))
      .filter((t) => t !== '')
      .join('\n');
  }
  return '';
}

export function createReinPlugin(opts: { config: ReinPluginConfig; post: Post; log: Logger; now?: () => number }) {
  const { config, post, log } = opts;
  const now = opts.now ?? Date.now;
  const prompts = new Map<string, Prompt>();
  const turnsBySession = new Map<string, CapturedTurn[]>();
  const turnByMessage = new Map<string, CapturedTurn>();
  // The turn captured at agent_end for a session, until its next message: its chunks' ids map to it.
  const lastCaptured = new Map<string, CapturedTurn>();
  const chunks = new Map<string, { parts: string[]; ids: string[]; timer: ReturnType<typeof setTimeout> | null }>();
  const seenReactions = new Set<string>();
  const pending = new Set<Promise<unknown>>();
  let runCounter = 0;

  const track = <T>(p: Promise<T>): Promise<T> => {
    pending.add(p);
    void p.finally(() => pending.delete(p)).catch(() => {});
    return p;
  };
  const sessionOf = (event: Obj, ctx: EventCtx) => str(ctx.sessionKey) ?? str(event.sessionKey);
  const allowedRater = (who: string[]) => who.some((w) => config.raters?.includes(w));

  async function capture(sessionKey: string, runId: string, response: string, messageIds: string[], fallback?: Prompt): Promise<CapturedTurn | null> {
    const p = prompts.get(sessionKey) ?? fallback;
    if (!p || response.trim() === '') return null;
    prompts.delete(sessionKey);
    try {
      const r = await post({ kind: 'turn', sessionKey, runId, prompt: p.text, response, ...(p.channel ? { channel: p.channel } : {}), ...(p.senderId ? { senderId: p.senderId } : {}) });
      if (typeof r.turnId !== 'number') throw new Error(String(r.error ?? 'no turn id'));
      const t: CapturedTurn = { turnId: r.turnId, senderId: p.senderId, senderName: p.senderName };
      const list = turnsBySession.get(sessionKey) ?? [];
      list.push(t);
      if (list.length > 200) list.shift();
      turnsBySession.set(sessionKey, list);
      for (const id of messageIds) turnByMessage.set(id, t);
      return t;
    } catch (e) {
      log.warn(`rein: could not capture a turn: ${(e as Error).message}`);
      return null;
    }
  }

  async function flushChunks(sessionKey: string): Promise<void> {
    const c = chunks.get(sessionKey);
    if (!c) return;
    chunks.delete(sessionKey);
    if (c.timer) clearTimeout(c.timer);
    await capture(sessionKey, `sent-${now()}-${++runCounter}`, c.parts.join('\n'), c.ids);
  }

  async function onReactionText(text: string, sessionKey: string | undefined): Promise<void> {
    for (const r of parseReactions(text)) {
      const value = reactionValue(r.emoji);
      if (!r.added || value === null) continue;
      const dedupe = `${r.channel}\0${r.messageId}\0${r.by}\0${r.emoji}`;
      if (seenReactions.has(dedupe)) continue;
      seenReactions.add(dedupe);
      const turn = turnByMessage.get(r.messageId);
      if (!turn) {
        log.info(`rein: reaction on msg ${r.messageId} is not on a captured reply${sessionKey ? ` (session ${sessionKey})` : ''}`);
        continue;
      }
      if (r.by !== turn.senderName && r.by !== turn.senderId && !allowedRater([r.by])) {
        log.info(`rein: ${r.by} reacted to a reply to someone else; not a rating`);
        continue;
      }
      await track(post({ kind: 'rate', turnId: turn.turnId, value, rater: `openclaw:${r.by}` })).catch((e: Error) => log.warn(`rein: rating failed: ${e.message}`));
    }
  }

  return {
    async onMessageReceived(event: Obj, ctx: EventCtx): Promise<void> {
      const sessionKey = sessionOf(event, ctx);
      const content = str(event.content) ?? '';
      if (!sessionKey) return;
      if (parseReactions(content).length > 0) return onReactionText(content, sessionKey);
      if (/^\s*\/rl(\s|$)/.test(content)) return; // the command handler takes it
      await flushChunks(sessionKey);
      lastCaptured.delete(sessionKey);
      prompts.set(sessionKey, {
        text: content,
        senderId: str(ctx.senderId) ?? str(event.senderId),
        senderName: str(event.from),
        channel: str(ctx.channelId) ?? str((event.metadata as Obj | undefined)?.provider),
        at: now(),
      });
    },

    /** System events (reactions) are prepended to the next prompt the model sees. */
    async onPromptText(text: string, ctx: EventCtx): Promise<void> {
      await onReactionText(text, str(ctx.sessionKey));
    },

    async onAgentEnd(event: Obj, ctx: EventCtx): Promise<void> {
      const sessionKey = sessionOf(event, ctx);
      if (!sessionKey || event.success === false) return;
      const messages = Array.isArray(event.messages) ? (event.messages as Obj[]) : [];
      const lastUser = messages.findLastIndex((m) => m?.role === 'user');
      // The gateway (message_received) and the agent run (agent_end) may be separate plugin instances, so this
      // instance may hold no prompt for the session (seen with OpenClaw 2026.9 through chat.send): agent_end's own
      // last user message is the prompt then.
      const userText = lastUser >= 0 ? textOf(messages[lastUser]!.content) : '';
      const fallback: Prompt | undefined =
        userText.trim() === '' ? undefined : { text: userText, senderId: str(ctx.senderId), senderName: undefined, channel: str(ctx.channelId), at: now() };
      const reply = messages
        .slice(lastUser + 1)
        .filter((m) => m?.role === 'assistant')
        .map((m) => textOf(m.content))
        .filter((t) => t !== '')
        .join('\n');
      const c = chunks.get(sessionKey);
      chunks.delete(sessionKey);
      if (c?.timer) clearTimeout(c.timer);
      const t = await track(capture(sessionKey, str(event.runId) ?? `run-${now()}-${++runCounter}`, reply, c?.ids ?? [], fallback));
      if (t) lastCaptured.set(sessionKey, t);
    },

    async onMessageSent(event: Obj, ctx: EventCtx): Promise<void> {
      const sessionKey = sessionOf(event, ctx);
      if (!sessionKey || event.success === false) return;
      const id = str(event.messageId) ?? str(ctx.messageId);
      const t = lastCaptured.get(sessionKey);
      if (t) {
        // The reply was captured at agent_end; its chunks are delivered after, each with its own message id.
        if (id) turnByMessage.set(id, t);
        return;
      }
      if (!prompts.has(sessionKey)) return;
      const c = chunks.get(sessionKey) ?? { parts: [], ids: [], timer: null };
      const text = str(event.content);
      if (text) c.parts.push(text);
      if (id) c.ids.push(id);
      if (c.timer) clearTimeout(c.timer);
      c.timer = setTimeout(() => void track(flushChunks(sessionKey)), config.flushMs ?? 1500);
      chunks.set(sessionKey, c);
    },

    /** `/rl …` registered with api.registerCommand; the answer is the chat reply. */
    async onCommand(ctx: Obj): Promise<{ text: string }> {
      const sessionKey = str(ctx.sessionKey);
      const sender = str(ctx.senderId) ?? 'unknown';
      if (!sessionKey) return { text: 'Rein: /rl works inside a chat session.' };
      const args = str(ctx.args) ?? '';
      const raterAllowed = allowedRater([sender]);
      let turnId: number | undefined;
      const known = turnsBySession.get(sessionKey) ?? [];
      // An instance that captured nothing in this session (the command runs in the gateway, the capture in the
      // agent run) leaves the choice to Rein: the newest unrated turn of the session.
      if (!raterAllowed && known.length > 0) {
        // Group chats: a sender rates their own newest reply, never someone else's.
        const mine = known.filter((t) => t.senderId === sender).at(-1);
        turnId = mine?.turnId;
        const rating = /^\s*(good|bad|fix|[1-5]|\u{1F44D}|\u{1F44E})/iu.test(args);
        if (rating && turnId === undefined) return { text: 'Rein: there is no reply to a message of yours here to rate.' };
      }
      try {
        const r = await track(
          post({ kind: 'command', sessionKey, args, rater: `openclaw:${sender}`, ...(turnId !== undefined ? { turnId } : {}), adminAllowed: config.admins?.includes(sender) === true }),
        );
        return { text: typeof r.text === 'string' ? r.text : `Rein: ${String(r.error ?? 'no answer')}` };
      } catch (e) {
        return { text: `Rein is not reachable: ${(e as Error).message}` };
      }
    },

    /** Wait for posts in flight (tests, shutdown). */
    async idle(): Promise<void> {
      while (pending.size > 0) await Promise.allSettled([...pending]);
    },
  };
}
