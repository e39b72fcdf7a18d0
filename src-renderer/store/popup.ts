// The popup's queue: captured turns that ask for a rating, oldest first, so several turns queue instead of each one
// replacing the last. Which turns raise it follows the settings popup.enabled, popup.agents and capture.paused.
import type { TurnSummary } from '../../src-main/common/domain.ts';
import type { Settings } from '../../src-main/common/config.ts';
import type { ReinClient } from '../services/api.ts';
import { toApiError } from '../services/api.ts';
import { derive } from './derive.ts';
import type { PopupSlice, ReinState, Slice } from './types.ts';

export function raisesPopup(turn: TurnSummary, settings: Settings | null): boolean {
  if (turn.state !== 'unrated') return false;
  if (!settings) return true;
  return settings['popup.enabled'] && !settings['capture.paused'] && settings['popup.agents'].includes(turn.source);
}

export function createPopupSlice(client: ReinClient): Slice<PopupSlice> {
  return (set, get) => ({
    queue: [],
    popupError: null,
    askReasons: {},
    enqueue: (turn) => {
      if (!raisesPopup(turn, get().settings) || get().queue.some((t) => t.id === turn.id)) return;
      if (get().settings?.['reward.ask'] !== 'unsure') {
        set((s) => ({ queue: [...s.queue, turn] }));
        return;
      }
      // Active learning: the reward model decides; a turn it is sure about is not asked and stays unrated.
      void client.rewardAsk({ turnId: turn.id }).then(
        (a) => {
          if (!a.ask || get().queue.some((t) => t.id === turn.id)) return;
          set((s) => ({ queue: [...s.queue, turn], askReasons: { ...s.askReasons, [turn.id]: a.reason } }));
        },
        (e: unknown) => {
          // Asking is the safe side of an error: the user still gets to rate it.
          set((s) => ({ queue: [...s.queue, turn], askReasons: { ...s.askReasons, [turn.id]: `asking: the reward model could not answer (${toApiError(e).message})` } }));
        },
      );
    },
    settle: (turn) => {
      // Rated, ignored or expired elsewhere (the CLI, a hook, the other window): it no longer asks.
      if (turn.state === 'unrated') set((s) => ({ queue: s.queue.map((t) => (t.id === turn.id ? turn : t)) }));
      else set((s) => ({ queue: s.queue.filter((t) => t.id !== turn.id) }));
    },
    drop: (turnId) => set((s) => ({ queue: s.queue.filter((t) => t.id !== turnId) })),
    dismiss: async (turnId) => {
      get().drop(turnId);
      try {
        await client.ignoreTurn({ turnId });
      } catch (e) {
        set({ popupError: toApiError(e) });
      }
    },
    takeWaiting: async () => {
      try {
        // The Rate inbox's turns (rateInbox: Chat and Arena answers are rated on their own screens), oldest first,
        // after what the queue holds.
        const page = await client.listTurns({ state: 'unrated', limit: 1000, rateInbox: true });
        const waiting = [...page.items].sort((a, b) => a.createdAt - b.createdAt || a.id - b.id);
        set((s) => ({ queue: [...s.queue, ...waiting.filter((t) => !s.queue.some((q) => q.id === t.id))], popupError: null }));
      } catch (e) {
        set({ popupError: toApiError(e) });
      }
    },
    requeue: (turn) => set((s) => ({ queue: [turn, ...s.queue.filter((t) => t.id !== turn.id)] })),
  });
}

export const selectPopupTurn = (s: ReinState): TurnSummary | null => s.queue[0] ?? null;
export const selectQueueLength = (s: ReinState) => s.queue.length;
/** Why the popup asks about its current turn (reward.ask unsure), or null. */
export const selectAskReason = (s: ReinState): string | null => (s.queue[0] === undefined ? null : (s.askReasons[s.queue[0].id] ?? null));
/** Answers that still wait for a rating (the status's count), less those already in the popup's queue. */
export const selectWaitingOutside = (s: ReinState): number => Math.max(0, (s.status?.turns.toRate ?? 0) - s.queue.length);
export const selectPopupTimeout = (s: ReinState): number => s.settings?.['popup.timeoutSeconds'] ?? 45;
/** The agents the popup can be limited to: the defaults plus any the user added. */
export const selectPopupAgents = derive([(s) => s.settings], (settings) => settings?.['popup.agents'] ?? []);
