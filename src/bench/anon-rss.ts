/**
 * Anonymous resident memory: what a process's RSS holds beyond file pages. The embedded store
 * maps its tables (mmap-ballast.ts), and every page of them a read touched counts in RSS though
 * the kernel can drop it at will; memory a benchmark reports as used is this part.
 */
import { readFileSync } from 'node:fs';

/** RssAnon of /proc/self/status (Linux), bytes; null elsewhere. */
export function anonRss(): number | null {
  try {
    const m = /RssAnon:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    return m === null ? null : Number(m[1]) * 1024;
  } catch {
    return null;
  }
}
