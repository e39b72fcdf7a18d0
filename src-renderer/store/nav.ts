import type { NavSlice, ReinState, Slice, View } from './types.ts';

export const VIEWS: { id: View; label: string }[] = [
  { id: 'rate', label: 'Rate' },
  { id: 'chat', label: 'Chat' },
  { id: 'arena', label: 'Arena' },
  { id: 'training', label: 'Training' },
  { id: 'versions', label: 'Versions' },
  { id: 'ratings', label: 'Ratings' },
  { id: 'setup', label: 'Setup' },
  { id: 'settings', label: 'Settings' },
];

export function createNavSlice(initial: View): Slice<NavSlice> {
  return (set) => ({
    view: initial,
    setView: (view) => set({ view }),
  });
}

export const selectView = (s: ReinState) => s.view;
