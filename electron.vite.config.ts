// electron-vite with the project's folder names (shared/notes/TOOLCHAIN.md): main from src-main/electron-main,
// the preload from src-preload, the renderer from src-renderer. Output goes to out/{main,preload,renderer}.
import path from 'node:path';
import { defineConfig } from 'electron-vite';
import react from '@vitejs/plugin-react';

const root = import.meta.dirname;
// Native addons are loaded from node_modules at run time, never bundled.
const NATIVE = ['better-sqlite3', 'onnxruntime-node', 'node-llama-cpp'];

export default defineConfig({
  main: {
    build: {
      outDir: path.join(root, 'out/main'),
      externalizeDeps: true,
      rollupOptions: {
        // The trainer worker is a second entry: the scheduler forks it (out/main/worker.js) with Electron's binary
        // as Node, since the bundle has no worker.ts beside it.
        // The Codex hook entry is a third: Codex runs it as a file (the installer writes its absolute path, next to
        // the bundle as out/main/hook-entry.mjs), and as its own module its `import.meta.main` stays false inside
        // the app; inlined, it was the bundle's own, and the app ran the hook on Electron's argv at start.
        input: {
          index: path.join(root, 'src-main/electron-main/index.ts'),
          worker: path.join(root, 'src-main/node/training/worker.ts'),
          'hook-entry': path.join(root, 'src-main/node/integrations/codex/hook-entry.mjs'),
        },
        output: { entryFileNames: (chunk) => (chunk.name === 'hook-entry' ? '[name].mjs' : '[name].js') },
        external: NATIVE,
      },
    },
  },
  preload: {
    build: {
      outDir: path.join(root, 'out/preload'),
      // A sandboxed preload can require only `electron` and a few builtins, so its dependencies (zod, through the
      // verb list in common/api.ts) are bundled in, and it is CommonJS: an ESM preload cannot run sandboxed.
      externalizeDeps: false,
      rollupOptions: {
        input: { index: path.join(root, 'src-preload/index.ts') },
        output: { format: 'cjs', entryFileNames: '[name].cjs' },
      },
    },
  },
  renderer: {
    root: path.join(root, 'src-renderer'),
    plugins: [react()],
    build: {
      outDir: path.join(root, 'out/renderer'),
      rollupOptions: { input: { index: path.join(root, 'src-renderer/index.html') } },
    },
  },
});
