// The Chat and Arena screens: a conversation with one version (system prompt, streamed answers, inline ratings), a
// blind pair of answers to vote on, and each version's arena record for the Versions screen. Answers stream as the
// core's chatToken events, named by a stream id this slice picks before it calls.
import type { ReinClient } from '../services/api.ts';
import { toApiError } from '../services/api.ts';
import type { ChatEntry, ChatSlice, ReinState, Slice } from './types.ts';

let streams = 0;
const newStreamId = (kind: string) => `${kind}-${Date.now().toString(36)}-${++streams}`;
const newSession = () => `app-chat-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;

export function createChatSlice(client: ReinClient): Slice<ChatSlice> {
  return (set, get) => {
    const patchLast = (fn: (e: ChatEntry) => ChatEntry) =>
      set((s) => ({ chat: s.chat.map((e, i) => (i === s.chat.length - 1 ? fn(e) : e)) }));
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
      },
      setChatSystem: (text) => set({ chatSystem: text }),
      setChatVersion: (version) => set({ chatVersion: version }),
      newChat: () => set({ chat: [], chatSession: newSession(), chatError: null }),

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
