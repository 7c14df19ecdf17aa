/** Everything that must die on a forced exit (second Ctrl-C): killers registered while alive. */
export class Reaper {
  private readonly killers = new Set<() => void>();

  /** Registers a synchronous killer; call the returned function once the thing is gone. */
  add(kill: () => void): () => void {
    this.killers.add(kill);
    return () => this.killers.delete(kill);
  }

  killAll(): void {
    for (const kill of this.killers) kill();
    this.killers.clear();
  }
}
