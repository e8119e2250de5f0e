// A data file that cannot be used: the start (or the migrate command) stops, and the file is left as it is.
export class StoreFileError extends Error {
  constructor(
    readonly file: string,
    reason: string,
  ) {
    super(`${file}: ${reason}. The file was left unchanged; fix or restore it, then start again.`);
    this.name = 'StoreFileError';
  }
}

/** DATA_DIR itself cannot be used (a file, not writable): the start stops with this one-line message. */
export class DataDirError extends Error {
  constructor(
    readonly dataDir: string,
    reason: string,
  ) {
    super(`DATA_DIR ${dataDir}: ${reason}.`);
    this.name = 'DataDirError';
  }
}
