/** Callers that take turns, in the order they ask: each waits until the turn before its own has ended. */
export interface Turns {
  /** Resolves when the caller's turn has come, with the function that ends it. */
  take(): Promise<() => void>;
}

export function createTurns(): Turns {
  let last: Promise<void> = Promise.resolve();
  return {
    async take() {
      const before = last;
      let end!: () => void;
      last = new Promise<void>((resolve) => (end = resolve));
      await before;
      return end;
    },
  };
}
