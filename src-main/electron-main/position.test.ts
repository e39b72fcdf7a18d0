import { describe, expect, it } from 'vitest';
import { popupPosition, taskbarEdge } from './position.ts';

const size = { width: 360, height: 240 };
const display = { x: 0, y: 0, width: 1920, height: 1080 };

describe('popupPosition', () => {
  it('puts the popup under the macOS menu-bar icon, centred, and inside the work area', () => {
    const workArea = { x: 0, y: 25, width: 1920, height: 1055 };
    expect(popupPosition('darwin', size, { x: 1500, y: 0, width: 22, height: 24 }, workArea, display)).toEqual({ x: 1331, y: 28 });
    // An icon at the far right would push the popup off screen: it is pulled back in.
    expect(popupPosition('darwin', size, { x: 1900, y: 0, width: 22, height: 24 }, workArea, display).x).toBe(1920 - 360);
  });

  it('finds the Windows taskbar on any edge and uses the corner beside it', () => {
    const bottom = { x: 0, y: 0, width: 1920, height: 1040 };
    const top = { x: 0, y: 40, width: 1920, height: 1040 };
    const left = { x: 60, y: 0, width: 1860, height: 1080 };
    const right = { x: 0, y: 0, width: 1860, height: 1080 };
    expect([bottom, top, left, right].map((w) => taskbarEdge(w, display))).toEqual(['bottom', 'top', 'left', 'right']);
    expect(popupPosition('win32', size, null, bottom, display)).toEqual({ x: 1552, y: 792 });
    expect(popupPosition('win32', size, null, top, display)).toEqual({ x: 1552, y: 48 });
    expect(popupPosition('win32', size, null, left, display)).toEqual({ x: 68, y: 832 });
    expect(popupPosition('win32', size, null, right, display)).toEqual({ x: 1492, y: 832 });
  });

  it('on Linux uses the tray bounds when the desktop gives them, above a bottom panel, else the top-right corner', () => {
    const workArea = { x: 0, y: 0, width: 1920, height: 1050 };
    expect(popupPosition('linux', size, { x: 1800, y: 1052, width: 24, height: 24 }, workArea, display)).toEqual({ x: 1560, y: 808 });
    expect(popupPosition('linux', size, { x: 1000, y: 2, width: 24, height: 24 }, workArea, display)).toEqual({ x: 832, y: 30 });
    expect(popupPosition('linux', size, { x: 0, y: 0, width: 0, height: 0 }, workArea, display)).toEqual({ x: 1552, y: 8 });
    expect(popupPosition('linux', size, null, workArea, display)).toEqual({ x: 1552, y: 8 });
  });
});
