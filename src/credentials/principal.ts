// Who is calling: the authenticated principal every route and core operation works with.

export type Principal =
  | { kind: 'owner' }
  /** A provider: `huabu` (the host) or an enrolled Agentlet machine. */
  | { kind: 'provider'; provider: string }
  /** An agent's canvas token: bound to one canvas and one Agentlet machine. */
  | { kind: 'canvas'; canvasId: string; agentletId: string; expiresAt: number };

/** How a principal appears in the audit log: a role and an ID, never a credential. */
export function actorOf(principal: Principal): string {
  switch (principal.kind) {
    case 'owner':
      return 'owner';
    case 'provider':
      return `provider:${principal.provider}`;
    case 'canvas':
      return `canvas:${principal.canvasId}@${principal.agentletId}`;
  }
}
