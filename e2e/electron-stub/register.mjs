// `node --import ./e2e/electron-stub/register.mjs out/main/index.js` runs the built Electron main under plain Node,
// with the 'electron' import resolved to the stand-in beside this file (the Electron binary cannot run here).
import { register } from 'node:module';

register('./hooks.mjs', import.meta.url);
