import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Vitest's default (one worker fewer than the cores) runs the files one at a time on a 2-core
    // machine. Most of the suite's time is crash tests waiting on child processes, so two files
    // at once take ~5.7–6.2 minutes instead of ~8 there (2026-11-30, three runs of the whole suite).
    maxWorkers: Math.max(2, availableParallelism()),
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts'],
          // The unit tests share a process, file after file: a fresh process and module graph for
          // each of ~100 files cost more CPU than the tests (src/ alone: 157 → 89 s of CPU, 91 → 56 s
          // of wall time, 2026-12-02). They may leave no process-wide state behind (a spy restored,
          // an environment variable put back); the integration tests under test/ keep isolation.
          isolate: false,
        },
      },
      { extends: true, test: { name: 'integration', include: ['test/**/*.test.ts'] } },
    ],
  },
});
