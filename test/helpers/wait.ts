// Waiting for a condition instead of for a time: a test that needs something to have happened (an audit line
// appended after its answer, a background compaction, a process ready) polls for exactly that, so a slow or
// loaded machine makes it wait longer, never fail.

/** What `until` returns: the first value the probe gave that is not false, 0, '', null or undefined. */
type Found<T> = Exclude<T, false | 0 | '' | null | undefined>;

/**
 * Calls `probe` until it returns a truthy value, and returns that value; after `within` ms it throws an error
 * naming `what`.
 */
export async function until<T>(
  what: string,
  probe: () => T | Promise<T>,
  { within = 20_000, every = 20 }: { within?: number; every?: number } = {},
): Promise<Found<T>> {
  const deadline = Date.now() + within;
  for (;;) {
    const value = await probe();
    if (value) return value as Found<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${within} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, every));
  }
}

/** How many event-loop turns went by until `done` resolved (a chain of immediates counts them). */
export async function turnsUntil(done: Promise<unknown>): Promise<number> {
  let turns = 0;
  let counting = true;
  const count = () => {
    if (!counting) return;
    turns++;
    setImmediate(count);
  };
  setImmediate(count);
  await done;
  counting = false;
  return turns;
}

/** Whether a process of this ID is still running (signal 0 checks without sending anything). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
