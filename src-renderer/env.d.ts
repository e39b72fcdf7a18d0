/// <reference types="vite/client" />
// `window.rein` is what src-preload/index.ts exposes inside Electron; in a plain browser it is absent.
import type { ReinApi, Subscribe } from '../src-main/common/api.ts';

declare global {
  interface Window {
    rein?: ReinApi & { on: Subscribe };
  }
}

export {};
