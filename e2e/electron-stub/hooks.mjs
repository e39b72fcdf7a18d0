// Module resolve hook (node:module register): 'electron' -> ./electron.mjs; everything else as usual.
export async function resolve(specifier, context, next) {
  if (specifier === 'electron') return { url: new URL('./electron.mjs', import.meta.url).href, shortCircuit: true };
  return next(specifier, context);
}
