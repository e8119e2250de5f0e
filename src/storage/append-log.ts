// An append-only JSON-lines file (the audit log). Concurrent appends are batched into one write + fdatasync.
// A crash mid-append can leave a torn last line (no final newline): at open it is ended with a newline, so
// it stays as it was, on a line of its own, and every later line parses.
import * as fsp from 'node:fs/promises';
import { FILE_MODE } from './durable-file.js';

export class AppendLog {
  #handle: fsp.FileHandle | undefined;
  #pending: { lines: string; resolve: () => void; reject: (err: unknown) => void }[] = [];
  #flushing = false;

  private constructor(readonly file: string) {}

  static async open(file: string): Promise<AppendLog> {
    const log = new AppendLog(file);
    const handle = await fsp.open(file, 'a+', FILE_MODE);
    try {
      const { size } = await handle.stat();
      if (size > 0) {
        const last = Buffer.alloc(1);
        await handle.read(last, 0, 1, size - 1);
        if (last[0] !== 0x0a) {
          await handle.write('\n');
          await handle.datasync();
        }
      }
    } catch (err) {
      await handle.close();
      throw err;
    }
    log.#handle = handle;
    return log;
  }

  append(records: readonly unknown[]): Promise<void> {
    if (records.length === 0) return Promise.resolve();
    const lines = records.map((r) => JSON.stringify(r) + '\n').join('');
    return new Promise((resolve, reject) => {
      this.#pending.push({ lines, resolve, reject });
      if (!this.#flushing) void this.#flush();
    });
  }

  async #flush(): Promise<void> {
    this.#flushing = true;
    try {
      while (this.#pending.length > 0) {
        const batch = this.#pending;
        this.#pending = [];
        try {
          const handle = this.#handle;
          if (!handle) throw new Error(`${this.file} is closed`);
          await handle.write(batch.map((p) => p.lines).join(''));
          await handle.datasync();
          for (const p of batch) p.resolve();
        } catch (err) {
          for (const p of batch) p.reject(err);
        }
      }
    } finally {
      this.#flushing = false;
    }
  }

  async close(): Promise<void> {
    while (this.#flushing || this.#pending.length > 0) await new Promise((r) => setImmediate(r));
    await this.#handle?.close();
    this.#handle = undefined;
  }
}
