// The InstallEnv the installer tests run `install`/`uninstall` with: a sandboxed user home with nothing on PATH, a
// Rein home of its own, and the hook command and plugin folder laid out as in a checkout under /opt/rein.
import { resolveHome } from '../../home.ts';
import type { InstallEnv } from '../installer.ts';

export const TEST_TOKEN = 'ab'.repeat(32);

/** Installer output silenced, changes written. */
export const QUIET = { dryRun: false, say: (): void => {} };

/** `home` is the user's home; Rein's home is `reinDir`; `env` adds to the environment (CODEX_HOME, …). */
export function installEnv(home: string, reinDir: string, env: Record<string, string> = {}): InstallEnv {
  return {
    userHome: home,
    env: { PATH: '/nonexistent', HOME: home, ...env },
    rein: resolveHome({ REIN_HOME: reinDir }),
    port: 7433,
    token: TEST_TOKEN,
    hookCommand: ['/opt/node24/bin/node', '/opt/rein/src-main/node/integrations/codex/hook-entry.mjs'],
    pluginDir: '/opt/rein/resources/openclaw-plugin',
    options: {},
  };
}
