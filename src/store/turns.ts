/** A place in a queue of turns: `ready` once every earlier turn is done; `done` lets the next one go. */
export interface Turn {
  readonly ready: Promise<void>;
  done(): void;
}

/**
 * Calls that must reach storage in the order they were made, though each awaits: each takes a turn
 * when it is made, waits for `ready`, and calls `done` once it has issued what must stay in order
 * (a later call may then go on while this one's reply is still on its way).
 */
export class TurnQueue {
  #tail: Promise<void> = Promise.resolve();

  take(): Turn {
    const ready = this.#tail;
    let done!: () => void;
    this.#tail = new Promise<void>((resolve) => {
      done = resolve;
    });
    return { ready, done };
  }
}
