import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Vitest's default (one worker fewer than the cores) runs the files one at a time on a 2-core
    // machine. Most of the suite's time is crash tests waiting on child processes, so two files
    // at once take ~5.7–6.2 minutes instead of ~8 there (2026-11-30, three runs of the whole suite).
    maxWorkers: Math.max(2, availableParallelism()),
  },
});
