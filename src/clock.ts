// The clock core services read the time from; tests substitute their own.

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
