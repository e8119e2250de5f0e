// A data file that cannot be used: the start (or the migrate command) stops, and the file is left as it is.
export class StoreFileError extends Error {
  constructor(readonly file: string, reason: string) {
    super(`${file}: ${reason}. The file was left unchanged; fix or restore it, then start again.`);
    this.name = 'StoreFileError';
  }
}
