/**
 * Where commands write. Results (tables, JSON lines, records, summaries) go to stdout; errors, warnings and
 * progress go to stderr, so `fulfilment dlq list --json | jq` only ever sees data. Commands take an Output
 * instead of touching process streams, so tests capture it in memory.
 */
export interface Output {
  /** Writes text to stdout as is. */
  write(text: string): void;
  /** Writes text to stderr as is. */
  writeErr(text: string): void;
  /** stderr when it is an interactive terminal: progress bars draw on it. Undefined → plain progress lines. */
  tty?: NodeJS.WriteStream;
}

/** Prints one line of results to stdout. */
export function println(out: Output, line = ''): void {
  out.write(`${line}\n`);
}

/** Prints one line of diagnostics to stderr. */
export function eprintln(out: Output, line = ''): void {
  out.writeErr(`${line}\n`);
}

export function processOutput(): Output {
  return {
    write: (text) => void process.stdout.write(text),
    writeErr: (text) => void process.stderr.write(text),
    tty: process.stderr.isTTY ? process.stderr : undefined,
  };
}

/** An Output that keeps everything in memory (tests, and callers that post-process results). */
export interface MemoryOutput extends Output {
  stdout: string;
  stderr: string;
  /** stdout split into lines, without the trailing empty one. */
  lines(): string[];
}

export function memoryOutput(): MemoryOutput {
  const mem: MemoryOutput = {
    stdout: '',
    stderr: '',
    write: (text) => void (mem.stdout += text),
    writeErr: (text) => void (mem.stderr += text),
    lines: () => mem.stdout.split('\n').filter((l, i, all) => !(l === '' && i === all.length - 1)),
  };
  return mem;
}
