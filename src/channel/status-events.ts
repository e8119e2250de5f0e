// How a machine's channel status reaches the change log: at most one event per machine per window, the
// latest state always last. A machine that opens and drops its channel in a loop would otherwise write an
// event per connection and flush the log's retention (every mirror's cursor then answered 410). The first
// change after a quiet window is written at once; changes inside a window wait for its end, and only the
// state the machine is in then is written (none when it is the state last written). Framework-free.
import type { MachineChannelStatus } from './machine-channels.js';

/** The default window: a machine's status events are at least this far apart. */
export const STATUS_EVENT_WINDOW_MS = 10_000;

interface MachineState {
  written?: MachineChannelStatus;
  writtenAt: number;
  pending?: MachineChannelStatus;
  timer?: NodeJS.Timeout;
}

export class StatusEvents {
  readonly #machines = new Map<string, MachineState>();

  constructor(
    private readonly write: (machineId: string, status: MachineChannelStatus) => void,
    private readonly windowMs: number = STATUS_EVENT_WINDOW_MS,
  ) {}

  /** The machine's channel status changed: written now, or at the end of its window. */
  changed(machineId: string, status: MachineChannelStatus): void {
    const state = this.#machines.get(machineId) ?? { writtenAt: -Infinity };
    this.#machines.set(machineId, state);
    const wait = state.writtenAt + this.windowMs - performance.now();
    if (state.timer === undefined && wait <= 0) {
      state.pending = status;
      return this.#settle(machineId, state);
    }
    state.pending = status;
    if (state.timer === undefined) {
      state.timer = setTimeout(() => this.#settle(machineId, state), wait);
      // The service's close writes what is pending (flush); the timer holds nothing open.
      state.timer.unref();
    }
  }

  /** Writes every machine's pending state now (the service is closing). */
  flush(): void {
    for (const [machineId, state] of this.#machines) this.#settle(machineId, state);
  }

  #settle(machineId: string, state: MachineState): void {
    clearTimeout(state.timer);
    state.timer = undefined;
    const status = state.pending;
    state.pending = undefined;
    if (status === undefined || status === state.written) return;
    state.written = status;
    state.writtenAt = performance.now();
    this.write(machineId, status);
  }
}
