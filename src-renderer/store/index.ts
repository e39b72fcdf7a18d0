// One store built from slices (house style rule 12; zustand's slices pattern). Middleware, if any, goes here
// on the combined store only. Components read it through named selectors.
import { createStore } from 'zustand/vanilla';
import type { StoreApi } from 'zustand/vanilla';
import type { ReinClient } from '../services/api.ts';
import { createAdaptersSlice } from './adapters.ts';
import { createChatSlice } from './chat.ts';
import { createNavSlice } from './nav.ts';
import { createPopupSlice } from './popup.ts';
import { createRatingSlice } from './rating.ts';
import { createRatingsSlice } from './ratings.ts';
import { createSettingsSlice } from './settings.ts';
import { createStatusSlice } from './status.ts';
import { createTrainingSlice } from './training.ts';
import { createTurnsSlice } from './turns.ts';
import { createWizardSlice } from './wizard.ts';
import { createWeakSlice } from './weak.ts';
import type { ReinState, View } from './types.ts';

export type ReinStore = StoreApi<ReinState>;

export function createReinStore(client: ReinClient, opts: { view?: View } = {}): ReinStore {
  return createStore<ReinState>()((...a) => ({
    ...createStatusSlice(client)(...a),
    ...createTurnsSlice(client)(...a),
    ...createRatingSlice(client)(...a),
    ...createSettingsSlice(client)(...a),
    ...createTrainingSlice(client)(...a),
    ...createNavSlice(opts.view ?? 'rate')(...a),
    ...createPopupSlice(client)(...a),
    ...createRatingsSlice(client)(...a),
    ...createAdaptersSlice(client)(...a),
    ...createWizardSlice(client)(...a),
    ...createChatSlice(client)(...a),
    ...createWeakSlice(client)(...a),
    init: async () => {
      const s = a[1]();
      await Promise.all([s.loadStatus(), s.loadTurns(), s.loadSettings(), s.loadRuns(), s.loadAdapters(), s.loadEma()]);
    },
  }));
}

/**
 * Keep the store current from the core's events. Returns one disposer for every subscription.
 * Events that carry a status replace it; a captured turn changes the counts, so the status is reloaded.
 */
export function connectEvents(store: ReinStore, client: ReinClient): () => void {
  const s = () => store.getState();
  const offs = [
    client.on('turnCaptured', (turn) => {
      s().applyTurn(turn);
      s().enqueue(turn);
      s().reloadWeakBefore(turn);
      void s().loadStatus();
    }),
    client.on('turnUpdated', (turn) => {
      s().applyTurn(turn);
      s().settle(turn);
    }),
    client.on('ratingAdded', ({ rating, status }) => {
      s().applyRating(rating);
      s().setStatus(status);
    }),
    client.on('ratingUndone', ({ rating, status }) => {
      s().applyRating(rating);
      s().setStatus(status);
    }),
    client.on('ratingDeleted', ({ status }) => {
      s().setStatus(status);
      void s().loadTurns();
    }),
    client.on('turnDeleted', ({ turnId, status }) => {
      s().removeTurn(turnId);
      s().drop(turnId);
      s().setStatus(status);
    }),
    client.on('trainingProgress', (p) => s().setProgress(p)),
    client.on('adapterChanged', () => {
      void s().loadStatus();
      void s().loadRunsAndAdapters();
      void s().loadEma();
    }),
    client.on('settingsChanged', (changed) => {
      s().applySettings(changed);
      // training.implicit off reads no label (core/implicit.ts): the labels on screen are read again.
      if ('training.implicit' in changed) for (const id of Object.keys(s().weak)) void s().loadWeak(Number(id));
      void s().loadStatus();
    }),
  ];
  if (client.onConnection) {
    offs.push(
      client.onConnection((up) => {
        s().setConnected(up);
        if (up) void s().init();
      }),
    );
  }
  return () => {
    for (const off of offs) off();
  };
}

export type { ReinState } from './types.ts';
