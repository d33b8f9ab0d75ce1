/**
 * Progress of a long command on stderr: a bar (done/total, rate, ETA) when stderr is a terminal, otherwise a
 * plain line every few seconds and one at the end, so logs of scripted runs stay readable.
 */
import { SingleBar } from 'cli-progress';
import { eprintln, type Output } from './output.js';

export interface Progress {
  tick(n?: number): void;
  /** Stops the bar / prints the final line. Idempotent. */
  done(): void;
}

export interface ProgressOptions {
  /** Plain-line interval, ms. Default 5000. */
  everyMs?: number;
  now?: () => number;
}

/** Seconds as `45s`, `3m05s`, `2h03m`. */
export function formatDuration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '?';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

export function startProgress(out: Output, label: string, total: number, opts: ProgressOptions = {}): Progress {
  const now = opts.now ?? Date.now;
  const started = now();
  let done = 0;
  let finished = false;
  const rate = () => done / Math.max(0.001, (now() - started) / 1000);

  if (out.tty) {
    const bar = new SingleBar({
      stream: out.tty,
      format: `${label} [{bar}] {value}/{total} | {rate}/s | ETA {eta_formatted}`,
      hideCursor: true,
      etaBuffer: 50,
      barsize: 30,
    });
    bar.start(total, 0, { rate: '0.0' });
    return {
      tick(n = 1) {
        done += n;
        bar.update(done, { rate: rate().toFixed(1) });
      },
      done() {
        if (finished) return;
        finished = true;
        bar.update(done, { rate: rate().toFixed(1) });
        bar.stop();
      },
    };
  }

  const everyMs = opts.everyMs ?? 5000;
  let lastPrint = started;
  const line = () => {
    const r = rate();
    const eta = r > 0 ? formatDuration((total - done) / r) : '?';
    return `${label}: ${done}/${total} records (${r.toFixed(1)}/s, ETA ${eta})`;
  };
  return {
    tick(n = 1) {
      done += n;
      if (now() - lastPrint >= everyMs) {
        lastPrint = now();
        eprintln(out, line());
      }
    },
    done() {
      if (finished) return;
      finished = true;
      eprintln(
        out,
        `${label}: ${done}/${total} records in ${formatDuration((now() - started) / 1000)} (${rate().toFixed(1)}/s)`,
      );
    },
  };
}
