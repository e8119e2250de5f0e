// Credentials that stop holding in this process, told as they do: a machine revoked or its token rotated, a
// canvas's tokens revoked. Whatever holds a credential for longer than one request (a stream) listens and
// checks its own again at once; a periodic re-check catches what another replica revoked. Framework-free.

export type Revocation = { kind: 'machine'; machineId: string } | { kind: 'canvas'; canvasId: string };

export type RevocationListener = (revocation: Revocation) => void;

export class Revocations {
  readonly #listeners = new Set<RevocationListener>();

  /** Calls `listener` on every revocation from now on; returns the function that stops it. */
  subscribe(listener: RevocationListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Tells every listener (after the revocation is stored: a listener's re-check reads it). */
  publish(revocation: Revocation): void {
    for (const listener of [...this.#listeners]) listener(revocation);
  }
}
