// The tray popup: a small frameless window over the renderer's `?window=popup`, shown with showInactive() so it
// never takes focus from the editor or terminal the user is typing in. The main process keeps its own copy of the
// popup's queue from the core's events (the preload stays verbs-only): a captured turn from a source in
// popup.agents adds one (with reward.ask unsure, only one the core's rewardAsk says to ask about), and a rating, an ignore (the popup's timeout), or a delete removes one; an empty queue hides it.
import type { Settings } from '../common/config.ts';
import type { Core } from '../node/core/types.ts';

export interface PopupWindow {
  showInactive(): void;
  hide(): void;
}

type PopupSettings = Pick<Settings, 'popup.enabled' | 'popup.agents' | 'capture.paused' | 'reward.ask'>;

export class PopupQueue {
  private readonly pending = new Set<number>();
  private settings: PopupSettings;
  private readonly offs: (() => void)[];
  private readonly win: PopupWindow;

  constructor(core: Core, win: PopupWindow, settings: PopupSettings) {
    this.win = win;
    this.settings = { 'popup.enabled': settings['popup.enabled'], 'popup.agents': settings['popup.agents'], 'capture.paused': settings['capture.paused'], 'reward.ask': settings['reward.ask'] };
    this.offs = [
      core.on('turnCaptured', (t) => {
        if (t.state !== 'unrated' || !this.wanted(t.source)) return;
        if (this.settings['reward.ask'] !== 'unsure') return this.add(t.id);
        // Active learning: a turn the reward model is sure about raises nothing and stays unrated; an error asks.
        core.call('rewardAsk', { turnId: t.id }, 'ipc').then(
          (a) => {
            if (a.ask) this.add(t.id);
          },
          () => this.add(t.id),
        );
      }),
      core.on('ratingAdded', ({ rating }) => this.remove(rating.turnId)),
      core.on('turnUpdated', (t) => {
        if (t.state !== 'unrated') this.remove(t.id);
      }),
      core.on('turnDeleted', ({ turnId }) => this.remove(turnId)),
      core.on('settingsChanged', (changed) => {
        for (const k of ['popup.enabled', 'popup.agents', 'capture.paused', 'reward.ask'] as const) {
          if (changed[k] !== undefined) (this.settings as Record<string, unknown>)[k] = changed[k];
        }
        // Do not disturb, or the popup switched off: it goes away now; its turns stay unrated in the store.
        if (!this.settings['popup.enabled'] || this.settings['capture.paused']) this.win.hide();
      }),
    ];
  }

  get size(): number {
    return this.pending.size;
  }

  private wanted(source: string): boolean {
    const s = this.settings;
    return s['popup.enabled'] && !s['capture.paused'] && s['popup.agents'].includes(source);
  }

  private add(turnId: number): void {
    if (this.disposed) return;
    this.pending.add(turnId);
    this.win.showInactive();
  }

  private remove(turnId: number): void {
    if (!this.pending.delete(turnId)) return;
    if (this.pending.size === 0) this.win.hide();
  }

  private disposed = false;

  dispose(): void {
    this.disposed = true;
    for (const off of this.offs) off();
  }
}
