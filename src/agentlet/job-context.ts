// What a job of `agentlet-resources serve` is given besides its payload: the machine, its resource root, a
// way to publish, and the machine's secret scanner.
import type { MachineProblem } from '../schemas/machine.js';
import type { SecretScanner } from '../secrets/secret-scanner.js';
import type { ReconcileResponse } from './registry-client.js';

export interface JobContext {
  machineId: string;
  /** The resource root, absolute. */
  root: string;
  /**
   * Publishes the root's valid receipts now and returns what changed, with `problems` naming the receipts
   * left out (absent when none).
   */
  publish(): Promise<ReconcileResponse & { problems?: MachineProblem[] }>;
  /**
   * Publishes what changed of the receipt `id` alone (written or removed by a skill job), or the whole set
   * when that is what it takes (`serve`'s publisher decides); absent: `publish` is used.
   */
  publishReceipt?(id: string): Promise<void>;
  /** The secret scanner of this machine (it knows the machine's own token). */
  readonly scanner: SecretScanner;
}
