/**
 * `percolator oracle --port P [--host H] [--mark FILE]`: a standalone timestamp oracle server.
 * `percolator bench oracle --seconds S [--clients N] [--callers N] [--json]`: its benchmark.
 *
 * The server prints one JSON line `{"listening":{"host","port"},"mark":…}` once it accepts
 * connections and runs until SIGINT / SIGTERM, then closes cleanly (connections dropped, a mark
 * save in flight finished, the mark lock released) and, as `percolator serve` does, says so: a
 * line on stderr at the signal, then `{"stopped":true,"signal",…}` on stdout. A port that cannot be
 * bound is LISTEN_FAILED, as for `serve`, and leaves nothing behind: no `--mark` file (the port is
 * bound before the mark is loaded), no `--store file:DIR` it created (taken back).
 */
import { writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { MarkStore } from '../../oracle/mark-store.js';
import type { NewStoreDir } from '../../store/embedded/new-store-dir.js';
import { fileStoreDir, openStore } from '../../store/open-store.js';
import type { Store } from '../../store/store.js';
import { commandGroup, parsePortNumber, parsePositiveInteger, parseTimerSeconds, printResult } from '../parent-command.js';
import { UsageError } from '../usage-error.js';

/** Finds or creates the shared `bench` command group. */
export function benchCommand(program: Command): Command {
  return commandGroup(program, 'bench');
}

export function register(program: Command): void {
  program
    .command('oracle')
    .description('run the timestamp oracle as a network service (lean framed TCP protocol; see docs/oracle.md)')
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--port <port>', 'TCP port (0 = pick one)', parsePortNumber('port', 0), 8088)
    .option('--mark <file>', 'durable high-water mark file', './percolator-oracle.mark')
    .option('--store <url>', 'keep the mark in this store (table _percolator_oracle) instead of --mark')
    .action(async (opts: { host: string; port: number; mark: string; store?: string }, command: Command) => {
      // --mark has a default: only one given on the command line is a second mark, which would go unused.
      if (opts.store !== undefined && command.getOptionValueSource('mark') === 'cli')
        throw new UsageError(`--mark ${opts.mark} and --store ${opts.store} name two marks: give one`);
      const [{ FileMarkStore, StoreMarkStore }, { startOracleServer }, { noteNewStoreDir }] = await Promise.all([
        import('../../oracle/mark-store.js'),
        import('../../oracle/server.js'),
        import('../../store/embedded/new-store-dir.js'),
      ]);
      let store: Store | undefined;
      let markStore: MarkStore;
      /** A `file:` store this start creates, taken back if the start fails (new-store-dir.ts). */
      let fresh: NewStoreDir | null = null;
      if (opts.store !== undefined) {
        const dir = fileStoreDir(opts.store);
        if (dir !== null) fresh = await noteNewStoreDir(dir);
        store = await openStore(opts.store);
        markStore = new StoreMarkStore(store);
      } else {
        // Nothing on disk yet: the server binds its port before the mark is loaded (oracle/server.ts).
        markStore = new FileMarkStore(opts.mark);
      }
      let started = false;
      try {
        const server = await startOracleServer({ host: opts.host, port: opts.port, markStore });
        started = true;
        // Listening for the signals before saying it listens: whoever reads that line may signal at once.
        const stop = new Promise<string>((resolve) => {
          process.once('SIGINT', () => resolve('SIGINT'));
          process.once('SIGTERM', () => resolve('SIGTERM'));
        });
        process.stdout.write(
          `${JSON.stringify({
            listening: { host: server.host, port: server.port },
            mark: markStore.description,
            loadedMark: server.oracle.stats().loadedMark,
          })}\n`,
        );
        const signal = await stop;
        process.stderr.write(`percolator oracle: ${signal}: stopping\n`);
        await server.close();
        const st = server.stats();
        const o = server.oracle.stats();
        process.stdout.write(
          `${JSON.stringify({ stopped: true, signal, requests: st.requests, timestamps: st.timestamps, persistedMark: o.persisted })}\n`,
        );
      } finally {
        await store?.close();
        if (!started) await fresh?.undo();
      }
    });

  benchCommand(program)
    .command('oracle')
    .description('timestamps/s from an oracle server over loopback with several client processes (and in-process)')
    .option('--seconds <s>', 'seconds of measurement', parseTimerSeconds('seconds'), 5)
    .option('--clients <n>', 'client processes', parsePositiveInteger('clients'), 2)
    .option('--callers <n>', 'concurrent callers per client process', parsePositiveInteger('callers'), 2000)
    .option('--server-process', 'run the server in its own process (default: in this one)')
    .option('--json', 'print one JSON object')
    .option('--svg <file>', 'also write a bar chart to this SVG file')
    .action(async (opts: { seconds: number; clients: number; callers: number; serverProcess?: boolean; json?: boolean; svg?: string }) => {
      const { oracleSvg, runOracleBench } = await import('../../bench/oracle-bench.js');
      const result = await runOracleBench({
        seconds: opts.seconds,
        clients: opts.clients,
        callers: opts.callers,
        serverProcess: opts.serverProcess === true,
      });
      if (opts.svg !== undefined) writeFileSync(opts.svg, oracleSvg(result));
      printResult(result, opts.json === true);
    });
}
