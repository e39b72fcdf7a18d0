// React bindings for the vanilla store: a provider, a selector hook and the event connection's lifetime.
import { createContext, useContext, useEffect } from 'react';
import type { ReactNode } from 'react';
import { useStore } from 'zustand';
import type { ReinClient } from '../services/api.ts';
import { connectEvents } from './index.ts';
import type { ReinState, ReinStore } from './index.ts';

const StoreContext = createContext<ReinStore | null>(null);

export function StoreProvider(props: { store: ReinStore; client: ReinClient; children: ReactNode }) {
  const { store, client } = props;
  useEffect(() => {
    // Subscribe first, then load, so nothing that happens in between is missed.
    const off = connectEvents(store, client);
    void store.getState().init();
    return off;
  }, [store, client]);
  return <StoreContext.Provider value={store}>{props.children}</StoreContext.Provider>;
}

export function useRein<T>(selector: (s: ReinState) => T): T {
  const store = useContext(StoreContext);
  if (!store) throw new Error('useRein outside <StoreProvider>');
  return useStore(store, selector);
}

/** The store itself, for an event handler that must read the state as it is when the event fires (not as of the last render). */
export function useReinStore(): ReinStore {
  const store = useContext(StoreContext);
  if (!store) throw new Error('useReinStore outside <StoreProvider>');
  return store;
}
