// The tray icon and its menu. Every item is one call into the core (or the shell's own window/quit actions); the
// tooltip and the first, disabled line show the pending ratings against training.threshold.
import { Menu, Tray } from 'electron';
import type { MenuItemConstructorOptions, Rectangle } from 'electron';
import type { Status } from '../common/domain.ts';
import type { Core } from '../node/core/types.ts';
import type { Notify } from './notify.ts';

export interface TrayOptions {
  core: Core;
  /** Icon files for capturing and paused (16 px with an `@2x` beside it). */
  icon: string;
  pausedIcon: string;
  openDashboard: () => void;
  quit: () => void;
  notify: Notify;
}

export function statusLine(s: Status): string {
  const training = s.training.state === 'running' ? ' · training…' : '';
  const paused = s.capture.paused ? ' · capture paused' : '';
  return `${s.pending} of ${s.threshold} ratings pending${training}${paused}`;
}

export function createTray(o: TrayOptions): { dispose: () => void; bounds: () => Rectangle | null } {
  const tray = new Tray(o.icon);
  let disposed = false;
  const fail = (what: string) => (e: unknown) => o.notify(what, e instanceof Error ? e.message : String(e));

  const render = (s: Status) => {
    if (disposed) return;
    const items: MenuItemConstructorOptions[] = [
      { label: statusLine(s), enabled: false },
      { type: 'separator' },
      { label: 'Open dashboard', click: () => o.openDashboard() },
      {
        label: 'Pause capture',
        type: 'checkbox',
        checked: s.capture.paused,
        click: (item) => {
          o.core.call('setSettings', { values: { 'capture.paused': item.checked } }, 'ipc').catch(fail('Capture setting not changed'));
        },
      },
      {
        label: 'Train now',
        enabled: s.training.state !== 'running',
        click: () => {
          o.core.call('startTraining', {}, 'ipc').catch(fail('Training did not start'));
        },
      },
      { type: 'separator' },
      { label: 'Quit Rein', click: () => o.quit() },
    ];
    tray.setContextMenu(Menu.buildFromTemplate(items));
    tray.setToolTip(`Rein: ${statusLine(s)}`);
    tray.setImage(s.capture.paused ? o.pausedIcon : o.icon);
  };
  const refresh = () => {
    o.core.call('status', {}, 'system').then(render, (e: unknown) => console.error(`rein: tray status: ${(e as Error).message}`));
  };

  const withStatus = ({ status }: { status: Status }) => render(status);
  const offs = [
    o.core.on('ratingAdded', withStatus),
    o.core.on('ratingUndone', withStatus),
    o.core.on('ratingDeleted', withStatus),
    o.core.on('turnDeleted', withStatus),
    o.core.on('settingsChanged', refresh),
    o.core.on('adapterChanged', refresh),
    o.core.on('trainingProgress', (p) => {
      // Progress comes many times a second; the menu changes only when a round starts or ends.
      if (p.phase !== 'training') refresh();
    }),
  ];
  refresh();
  return {
    dispose: () => {
      disposed = true;
      for (const off of offs) off();
      tray.destroy();
    },
    // Windows and macOS report where the icon is; most Linux trays report zeros (position.ts handles both).
    bounds: () => (disposed ? null : tray.getBounds()),
  };
}
