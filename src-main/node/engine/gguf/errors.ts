// A GGUF file that cannot be read or written as asked, named by its path where there is one.
import { ReinError } from '../../../common/errors.ts';

export class GgufError extends ReinError {
  readonly path: string | null;
  constructor(message: string, path: string | null = null, detail?: Record<string, unknown>) {
    super('bad_input', path === null ? message : `${path}: ${message}`, { detail: { path, ...detail } });
    this.name = 'GgufError';
    this.path = path;
  }
}
