// OS notifications for what happens while the user looks elsewhere: a trained version went live or the eval gate
// rejected it (with the gate's stored reason).
import type { Core } from '../node/core/types.ts';

export type Notify = (title: string, body: string, onClick?: () => void) => void;

export function notifyAdapterChanges(core: Core, notify: Notify, openVersions: () => void): () => void {
  return core.on('adapterChanged', (ev) => {
    if (ev.status === 'active') {
      notify(`Adapter v${ev.version} activated`, `Your model now answers with version ${ev.version}.`, openVersions);
    } else if (ev.status === 'rejected') {
      core
        .call('listAdapters', {}, 'system')
        .then((all) => all.find((a) => a.version === ev.version && a.modelId === ev.modelId)?.reason ?? null)
        .catch(() => null)
        .then((reason) =>
          notify(`Adapter v${ev.version} rejected`, reason ?? 'The eval gate rejected it; the active version stays as it was.', openVersions),
        );
    }
  });
}
