/**
 * Anonymous resident memory: what a process's RSS holds beyond file-backed pages (node's binary and
 * libraries, and LevelDB's tables where a store maps them: without the mmap ballast,
 * mmap-ballast.ts), which the kernel can drop at will; the memory a benchmark uses is this part.
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
