// Where the tray popup goes, per OS. Pure geometry (no electron import) so it is tested under plain Node.
// macOS: under the menu-bar icon. Windows: in the work area's corner beside the taskbar, wherever the taskbar is
// docked. Linux: near the tray icon when the desktop reports its bounds (many report zeros), else top-right.

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

const GAP = 8;

const known = (r: Rect | null): r is Rect => r !== null && r.width > 0 && r.height > 0;

function clamp(p: { x: number; y: number }, size: { width: number; height: number }, area: Rect): { x: number; y: number } {
  const x = Math.min(Math.max(p.x, area.x), area.x + area.width - size.width);
  const y = Math.min(Math.max(p.y, area.y), area.y + area.height - size.height);
  return { x: Math.round(x), y: Math.round(y) };
}

/** Below the icon, or above it when the icon sits in the lower half of the display (a bottom panel). */
function nearTray(tray: Rect, size: { width: number; height: number }, display: Rect): { x: number; y: number } {
  const x = tray.x + tray.width / 2 - size.width / 2;
  const below = tray.y + tray.height / 2 < display.y + display.height / 2;
  return { x, y: below ? tray.y + tray.height + GAP / 2 : tray.y - size.height - GAP / 2 };
}

/** Which edge the taskbar is docked to: the side where the work area stops short of the display. */
export function taskbarEdge(workArea: Rect, display: Rect): 'top' | 'bottom' | 'left' | 'right' {
  if (workArea.y > display.y) return 'top';
  if (workArea.x > display.x) return 'left';
  if (workArea.width < display.width) return 'right';
  return 'bottom';
}

export function popupPosition(
  platform: string,
  size: { width: number; height: number },
  tray: Rect | null,
  workArea: Rect,
  display: Rect,
): { x: number; y: number } {
  const right = workArea.x + workArea.width - size.width - GAP;
  const bottom = workArea.y + workArea.height - size.height - GAP;
  if (platform === 'darwin') {
    if (known(tray)) return clamp({ x: tray.x + tray.width / 2 - size.width / 2, y: tray.y + tray.height + GAP / 2 }, size, workArea);
    return clamp({ x: right, y: workArea.y + GAP / 2 }, size, workArea);
  }
  if (platform === 'win32') {
    const edge = taskbarEdge(workArea, display);
    if (edge === 'top') return clamp({ x: right, y: workArea.y + GAP }, size, workArea);
    if (edge === 'left') return clamp({ x: workArea.x + GAP, y: bottom }, size, workArea);
    return clamp({ x: right, y: bottom }, size, workArea);
  }
  if (known(tray)) return clamp(nearTray(tray, size, display), size, workArea);
  return clamp({ x: right, y: workArea.y + GAP }, size, workArea);
}
