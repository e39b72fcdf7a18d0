// The Chat and Arena screens: a conversation with one version (system prompt, streamed answers, inline ratings), a
// blind pair of answers to vote on, and each version's arena record for the Versions screen. Answers stream as the
// core's chatToken events, named by a stream id this slice picks before it calls.
import type { ChatMessage } from '../../src-main/common/chat/conversation.ts';
import type { ReinClient } from '../services/api.ts';
import { toApiError } from '../services/api.ts';
import type { ChatEntry, ChatSlice, ReinState, Slice } from './types.ts';

let streams = 0;
const newStreamId = (kind: string) => `${kind}-${Date.now().toString(36)}-${++streams}`;
const newSession = () => `app-chat-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;

/** What is kept of an entry: not its live rating (that stays on the turn) nor a stream still running. */
const kept = (e: ChatEntry): ChatMessage => ({
  role: e.role,
  content: e.content,
  ...(e.role === 'assistant' ? { turnId: e.turnId ?? null, version: e.version ?? null, onPolicy: e.onPolicy ?? false, note: e.note ?? null } : {}),
});

/** How long the system prompt waits after a keystroke before it is kept. */
const SYSTEM_SAVE_MS = 400;

export function createChatSlice(client: ReinClient): Slice<ChatSlice> {
  return (set, get) => {
    const patchLast = (fn: (e: ChatEntry) => ChatEntry) =>
      set((s) => ({ chat: s.chat.map((e, i) => (i === s.chat.length - 1 ? fn(e) : e)) }));
    let systemTimer: ReturnType<typeof setTimeout> | null = null;
    /** Keeps the open conversation (once it has a question or a system prompt) and refreshes the list. */
    const save = async () => {
      if (systemTimer !== null) clearTimeout(systemTimer);
      systemTimer = null;
      const s = get();
      const messages = s.chat.filter((e) => !e.streaming).map(kept);
      if (messages.length === 0 && s.chatSystem.trim() === '') return;
      try {
        const summary = await client.saveChat({ id: s.chatSession, system: s.chatSystem, version: s.chatVersion, messages });
        set((st) => ({ chats: [summary, ...st.chats.filter((c) => c.id !== summary.id)] }));
      } catch (e) {
        set({ chatError: toApiError(e) });
      }
    };
    return {
      chat: [],
      chatSystem: '',
      chatVersion: null,
      chatSession: newSession(),
      chatBusy: false,
      chatError: null,
      sendChat: async (text) => {
        const s = get();
        if (s.chatBusy || text.trim() === '') return;
        const history = s.chat.filter((e) => !e.streaming).map((e) => ({ role: e.role, content: e.content }));
        const messages = [...(s.chatSystem.trim() === '' ? [] : [{ role: 'system' as const, content: s.chatSystem }]), ...history, { role: 'user' as const, content: text }];
        const streamId = newStreamId('chat');
        set({ chat: [...s.chat, { role: 'user', content: text }, { role: 'assistant', content: '', streaming: true }], chatBusy: true, chatError: null });
        const off = client.on('chatToken', (e) => {
          if (e.streamId === streamId) patchLast((x) => ({ ...x, content: x.content + e.text }));
        });
        try {
          const a = await client.chat({ messages, session: s.chatSession, streamId, ...(s.chatVersion === null ? {} : { version: s.chatVersion }) });
          patchLast(() => ({ role: 'assistant', content: a.text, turnId: a.turnId, version: a.version, onPolicy: a.onPolicy, note: a.note, rating: null }));
        } catch (e) {
          // The question stays (to edit and send again); the empty answer goes.
          set((st) => ({ chat: st.chat.slice(0, -1), chatError: toApiError(e) }));
        } finally {
          off();
          set({ chatBusy: false });
        }
        await save();
      },
      setChatSystem: (text) => {
        set({ chatSystem: text });
        if (systemTimer !== null) clearTimeout(systemTimer);
        systemTimer = setTimeout(() => void save(), SYSTEM_SAVE_MS);
      },
      setChatVersion: (version) => {
        set({ chatVersion: version });
        if (get().chat.length > 0) void save();
      },
      newChat: () => {
        if (systemTimer !== null) void save();
        // The system prompt stays: it is the person's standing instruction, not part of one conversation.
        set({ chat: [], chatSession: newSession(), chatError: null });
      },
      chats: [],
      chatsLoaded: false,
      loadChats: async () => {
        try {
          const chats = await client.listChats({});
          const first = !get().chatsLoaded;
          set({ chats, chatsLoaded: true });
          const newest = chats[0];
          // A reload reopens where the person was, unless they began something here already.
          if (first && newest !== undefined && get().chat.length === 0 && !get().chatBusy) await get().openChat(newest.id);
        } catch (e) {
          set({ chatError: toApiError(e), chatsLoaded: true });
        }
      },
      openChat: async (id) => {
        if (get().chatBusy) return;
        if (systemTimer !== null) await save();
        try {
          const c = await client.getChat({ id });
          set({ chat: c.messages.map((m) => ({ ...m })), chatSystem: c.system, chatVersion: c.version, chatSession: c.id, chatError: null });
        } catch (e) {
          set({ chatError: toApiError(e) });
        }
      },
      deleteChat: async (id) => {
        try {
          await client.deleteChat({ id });
          set((st) => ({ chats: st.chats.filter((c) => c.id !== id) }));
          if (get().chatSession === id) set({ chat: [], chatSystem: '', chatSession: newSession(), chatError: null });
        } catch (e) {
          set({ chatError: toApiError(e) });
        }
      },

      arenaPair: null,
      arenaMatch: null,
      arenaStream: { a: '', b: '' },
      arenaBusy: false,
      arenaError: null,
      arenaVoted: null,
      setArenaPair: (pair) => set({ arenaPair: pair }),
      startArena: async (prompt, system) => {
        if (get().arenaBusy || prompt.trim() === '') return;
        const streamId = newStreamId('arena');
        set({ arenaBusy: true, arenaError: null, arenaMatch: null, arenaVoted: null, arenaStream: { a: '', b: '' } });
        const off = client.on('chatToken', (e) => {
          if (!e.streamId.startsWith(`${streamId}:`)) return;
          const side = e.streamId.endsWith(':a') ? 'a' : 'b';
          set((s) => ({ arenaStream: { ...s.arenaStream, [side]: s.arenaStream[side] + e.text } }));
        });
        try {
          const pair = get().arenaPair;
          const m = await client.arenaStart({ prompt, streamId, ...(system ? { system } : {}), ...(pair === null ? {} : { versions: pair }) });
          set({ arenaMatch: m });
        } catch (e) {
          set({ arenaError: toApiError(e) });
        } finally {
          off();
          set({ arenaBusy: false });
        }
      },
      voteArena: async (vote) => {
        const m = get().arenaMatch;
        if (m === null || get().arenaVoted !== null) return;
        set({ arenaBusy: true, arenaError: null });
        try {
          const r = await client.arenaVote({ matchId: m.id, vote });
          set({ arenaVoted: r, arenaMatch: r.match });
          void get().loadVersionStats();
        } catch (e) {
          set({ arenaError: toApiError(e) });
        } finally {
          set({ arenaBusy: false });
        }
      },

      versionStats: [],
      versionStatsError: null,
      loadVersionStats: async () => {
        try {
          set({ versionStats: await client.versionStats({}), versionStatsError: null });
        } catch (e) {
          set({ versionStatsError: toApiError(e) });
        }
      },
    };
  };
}

/** The versions a picker offers: the base and every version that still has its files (not rejected ones). */
export const versionChoices = (adapters: ReinState['adapters']): { version: number; label: string }[] => [
  { version: 0, label: 'base (no adapter)' },
  ...adapters
    .filter((a) => a.status !== 'rejected' && a.status !== 'candidate')
    .map((a) => ({ version: a.version, label: `v${a.version}${a.status === 'active' ? ' (active)' : ''}` })),
];
