// Writes the tray icons beside this file (`node resources/icons/make-icons.mjs`): a ring with a dot (capturing) and
// the ring alone (paused), at 16 and 32 px (`@2x`, Electron's scale-factor suffix). `*Template.png` are black with
// alpha, which macOS recolours for light and dark menu bars (Electron: "Template Image"); the others are coloured for
// the Windows and Linux trays. Drawn here from a distance function with 4x4 supersampling, so nothing is downloaded.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { deflateSync } from 'node:zlib';

const here = import.meta.dirname;

// CRC-32 as the PNG spec defines it (ISO 3309, polynomial 0xEDB88320), over chunk type and data.
const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type, data) {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'ascii');
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}
/** PNG (RFC 2083): 8-bit RGBA, filter type 0 on every row. */
function png(size, rgba) {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(size, 0);
  ihdr.writeUInt32BE(size, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 6; // colour type RGBA
  const raw = Buffer.alloc(size * (size * 4 + 1));
  for (let y = 0; y < size; y++) rgba.copy(raw, y * (size * 4 + 1) + 1, y * size * 4, (y + 1) * size * 4);
  const sig = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([sig, chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}

/** Coverage in [0,1] of the shape at (x, y) in a unit square centred at 0.5. */
function inside(x, y, withDot) {
  const r = Math.hypot(x - 0.5, y - 0.5);
  const ring = r <= 0.46 && r >= 0.33;
  const dot = withDot && r <= 0.17;
  return ring || dot;
}

function draw(size, [red, green, blue], withDot) {
  const px = Buffer.alloc(size * size * 4);
  const S = 4;
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      let hit = 0;
      for (let sy = 0; sy < S; sy++) for (let sx = 0; sx < S; sx++) if (inside((x + (sx + 0.5) / S) / size, (y + (sy + 0.5) / S) / size, withDot)) hit++;
      const i = (y * size + x) * 4;
      px[i] = red;
      px[i + 1] = green;
      px[i + 2] = blue;
      px[i + 3] = Math.round((255 * hit) / (S * S));
    }
  }
  return png(size, px);
}

const COLOUR = [0x2b, 0x8a, 0x7e];
const BLACK = [0, 0, 0];
for (const [name, colour] of [
  ['tray', COLOUR],
  ['trayTemplate', BLACK],
]) {
  for (const [suffix, size] of [
    ['', 16],
    ['@2x', 32],
  ]) {
    writeFileSync(path.join(here, `${name}${suffix}.png`), draw(size, colour, true));
    writeFileSync(path.join(here, `${name.replace('tray', 'trayPaused')}${suffix}.png`), draw(size, colour, false));
  }
}
