/**
 * The web index survives `kill -9` of the process that runs it. Generations of a child process
 * (src/check/webindex-crash-child.ts) each crawl the whole corpus — random versions, deletions —
 * with every observer running, and are killed at a random point: while loading, while the
 * pipeline catches up after the last fetch, or once it is quiet. The test keeps the crawl's truth:
 * each document's last acknowledged (durable) fetch. A fetch killed between its start and its
 * acknowledgement may or may not have committed, so a last generation crawls those documents
 * again, and only those, to quiescence: everything else it indexes is what the killed generations
 * left behind. The index must then equal the batch recomputation of the live corpus (batch.ts):
 * whatever the crashes cut short — an acknowledged observer commit lost with its notification
 * clearing, a worker's lease, a cluster half re-exported — the pipeline must finish or redo, and
 * nothing a fetch replaced may linger in clusters, links or postings.
 *
 * Stores: `file:` (one per clustering-key mode: the child owns the store, so a kill is a crash of
 * it); `percolator serve` (a kill is a crash of one client; its two-phase commits leave locks);
 * a server itself killed and started again (twice) under a crawl that must ride it out; and a
 * network between client and server that resets every connection again and again (a proxy,
 * test/support/resetting-proxy.ts), so that replies of applied requests — commit points among
 * them — are lost.
 */
import { type ChildProcess, fork, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { type CorpusDoc, batchIndex, readIndexState } from '../src/apps/webindex/batch.js';
import type { CrawledDoc } from '../src/apps/webindex/loader.js';
import { readStats } from '../src/apps/webindex/stats.js';
import { expectSameIndex } from '../src/apps/webindex/webindex.fixture.js';
import type { KeyMode } from '../src/apps/webindex/parse.js';
import { crawlPlan } from '../src/check/webindex-crash-child.js';
import { type ResettingProxy, resettingProxy } from './support/resetting-proxy.js';
import { type PercolatorServer, startServer } from '../src/server/server.js';
import { Percolator } from '../src/txn/percolator.js';

const DOCS = 120;
/** Over gRPC a document costs ~30 ms of commits: fewer of them. */
const REMOTE_DOCS = 30;
const SEED = 5;
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const script = join(import.meta.dirname, '../dist/check/webindex-crash-child.js');

/** When a generation is killed: at its n-th acknowledged fetch, `ms` after its last one, or never (it must finish). */
type Kill = { atAck: number } | { afterLastAckMs: number } | null;

interface Crawl {
  /** Per document number: its last acknowledged fetch. */
  readonly acked: Map<number, CrawledDoc>;
  /** Documents whose last fetch started was not acknowledged: committed or not, nobody knows. */
  readonly unsure: Set<number>;
}

interface Run {
  readonly store: string;
  readonly docs: number;
  readonly keyMode: KeyMode;
}

/** Runs generation `g` (with `only`: the final one, crawling just those documents), recording its fetches in `crawl`. */
function generation(run: Run, g: number, kill: Kill, crawl: Crawl, only?: readonly number[]): Promise<string> {
  const args = [run.store, String(SEED), String(run.docs), run.keyMode, String(g), ...(only === undefined ? [] : [only.join(',')])];
  const plan = new Map(crawlPlan(SEED, run.docs, g).map((f) => [f.i, f.doc]));
  const child: ChildProcess = fork(script, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  let acks = 0;
  let quiet = false;
  let killed = false;
  const killNow = () => {
    if (killed) return;
    killed = true;
    child.kill('SIGKILL');
  };
  return new Promise((resolve, reject) => {
    child.on('message', (m: { t: string; i?: number }) => {
      if (killed) return; // what a killed child still sent is not known to have happened first
      if (m.t === 'start') crawl.unsure.add(m.i as number);
      if (m.t === 'ack') {
        crawl.unsure.delete(m.i as number);
        crawl.acked.set(m.i as number, plan.get(m.i as number) as CrawledDoc);
        acks++;
        if (kill !== null && 'atAck' in kill && acks === kill.atAck) killNow();
        if (kill !== null && 'afterLastAckMs' in kill && acks === plan.size) setTimeout(killNow, kill.afterLastAckMs);
      }
      if (m.t === 'quiet') {
        quiet = true;
        if (kill !== null) killNow();
      }
    });
    child.on('exit', (code, signal) => {
      const what = `g${g}: ${acks} acks${quiet ? ', quiet' : ''}${killed ? ', killed' : ''}`;
      if (killed ? signal === 'SIGKILL' : code === 0 && quiet) resolve(what);
      else reject(new Error(`generation ${g} exited: code ${code}, signal ${signal} (${what})`));
    });
  });
}

/**
 * Crashes `run.docs`-document crawls into `run.store` and checks the index the last generation
 * leaves: killed early and late in the crawl, after its last fetch while the pipeline catches up
 * (twice, at random delays), once quiet, and at a random fetch.
 */
async function crashAndCheck(run: Run): Promise<void> {
  const { docs } = run;
  const crawl: Crawl = { acked: new Map(), unsure: new Set() };
  const kills: Kill[] = [
    { atAck: Math.floor(docs * 0.1) },
    { atAck: Math.floor(docs * 0.6) },
    { afterLastAckMs: Math.floor(Math.random() * 300) },
    { atAck: docs + 1 }, // not reached: killed once quiet
    { atAck: 1 + Math.floor(Math.random() * docs) },
    { afterLastAckMs: Math.floor(Math.random() * 100) },
  ];
  const log: string[] = [];
  for (let g = 0; g < kills.length; g++) log.push(await generation(run, g, kills[g] as Kill, crawl));
  const unsure = [...crawl.unsure].sort((a, b) => a - b);
  log.push(`unsure ${unsure.join(',')}`);
  log.push(await generation(run, kills.length, null, crawl, unsure));
  const context = log.join('; ');
  expect(crawl.unsure.size, context).toBe(0);
  await expectIndexOf(run, crawl, context);
}

/** The index in `run.store` equals the batch recomputation of the crawl's acknowledged fetches; every live document's last fetch was exported. */
async function expectIndexOf(run: Run, crawl: Crawl, context: string): Promise<void> {
  const live = new Map<string, CorpusDoc>();
  for (const d of crawl.acked.values()) if (d.content !== null) live.set(d.url, { url: d.url, content: d.content, type: d.type });
  const db = await Percolator.open({ store: run.store });
  try {
    const snap = await db.snapshot();
    try {
      const got = await readIndexState(snap);
      try {
        expectSameIndex(got, batchIndex(live.values(), run.keyMode));
      } catch (e) {
        throw new Error(`${context}: ${e instanceof Error ? e.message : String(e)}`);
      }
      const stats = await readStats(snap);
      expect(stats.documents, context).toBe(live.size);
      expect(stats.indexedDocuments, context).toBe(live.size);
    } finally {
      snap.release();
    }
  } finally {
    await db.close();
  }
}

// The cases run one after another. Run at once (2026-12-02) they loaded the machine so that, on
// CI, an export run over the resetting network outlasted every connection it got: the crawl's
// quiescence wait timed out with one export pending (24 when it began), 120 s later.

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'percolator-webindex-crash-'));
  dirs.push(dir);
  return dir;
}

describe.each(['content', 'content+url+title'] as const)('clustering keys %s', (keyMode) => {
  it('after kill -9 of the indexing process, mid-crawl and mid-pipeline, the index equals the batch recomputation', async () => {
    await crashAndCheck({ store: `file:${tempDir()}`, docs: DOCS, keyMode });
  }, 240_000);
});

/** A `percolator serve` on consecutive free ports (gRPC, and the oracle two above it: where clients look for it). */
async function serveOnFreePorts(storeUrl: string): Promise<PercolatorServer> {
  for (let attempt = 0; ; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 40_000);
    try {
      return await startServer({ storeUrl, port, httpPort: null, log: () => undefined });
    } catch (e) {
      if (attempt >= 20) throw e;
    }
  }
}

describe('over percolator serve', () => {
  it('after kill -9 of the indexing client, its two-phase commits cut anywhere, the index equals the batch recomputation', async () => {
    const server = await serveOnFreePorts(`file:${tempDir()}`);
    try {
      await crashAndCheck({ store: `bigtable://127.0.0.1:${server.port}`, docs: REMOTE_DOCS, keyMode: 'content' });
    } finally {
      await server.close();
    }
  }, 240_000);
});

/** `percolator serve --data dir` in a process of its own, on `port`; resolves once it listens. */
function serveProcess(dir: string, port: number): Promise<ChildProcess> {
  const main = join(import.meta.dirname, '../dist/cli/main.js');
  const server = spawn(process.execPath, [main, 'serve', '--data', dir, '--port', String(port), '--http-port', 'off'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    createInterface({ input: server.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      if (line.includes('"listening"')) resolve(server);
    });
    server.on('exit', (code, signal) => reject(new Error(`percolator serve exited: code ${code}, signal ${signal}`)));
  });
}

describe('through a server killed and restarted', () => {
  // Until 2026-11-30 this failed in about half the runs: a commit point whose reply the kill cut
  // off rolled its secondaries back though the primary had committed (docs/transactions.md ›
  // "A failed commit point may have taken effect"). Two kills: twice the commits cut mid-flight.
  it('the indexing client rides out the outage (loader retries, worker loops restart) and the index equals the batch recomputation', async () => {
    const dir = tempDir();
    // A free port: a server in this process binds one, and closes it for the child to take.
    const probe = await serveOnFreePorts('memory:');
    const port = probe.port;
    await probe.close();
    let server = await serveProcess(dir, port);
    const run: Run = { store: `bigtable://127.0.0.1:${port}`, docs: REMOTE_DOCS, keyMode: 'content' };
    const crawl: Crawl = { acked: new Map(), unsure: new Set() };
    const everything = Array.from({ length: run.docs }, (_, i) => i);
    try {
      // One generation, never killed, crawling every document; the server dies under it twice.
      const finished = generation(run, 0, null, crawl, everything);
      // The second outage outlasts the oracle client's 5 s wait: until 2026-11-30 (ninth session)
      // the loader gave up on ORACLE_UNAVAILABLE, which a slow restart under CI load also hit.
      for (const [part, outageMs] of [
        [1 / 3, 500],
        [2 / 3, 6_000],
      ] as const) {
        const deadline = Date.now() + 60_000;
        while (crawl.acked.size < run.docs * part && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        server.kill('SIGKILL');
        await new Promise((r) => server.once('exit', r));
        await new Promise((r) => setTimeout(r, outageMs)); // out of reach for a while
        server = await serveProcess(dir, port);
      }
      const log = await finished;
      expect(crawl.acked.size, log).toBe(run.docs);
      await expectIndexOf(run, crawl, log);
    } finally {
      server.kill('SIGTERM');
      await new Promise((r) => (server.exitCode !== null || server.signalCode !== null ? r(null) : server.once('exit', r)));
    }
  }, 240_000);
});

/** Proxies to `server`'s gRPC and oracle ports on ports two apart (clients look for the oracle two above the store's port). */
async function proxiesTo(server: PercolatorServer): Promise<[ResettingProxy, ResettingProxy]> {
  for (let attempt = 0; ; attempt++) {
    const port = 20_000 + Math.floor(Math.random() * 40_000);
    if (attempt >= 20) throw new Error('no two free ports for the proxies');
    const grpc = await resettingProxy(port, server.port).catch(() => null);
    if (grpc === null) continue;
    const oracle = await resettingProxy(port + 2, server.oraclePort as number).catch(() => null);
    if (oracle !== null) return [grpc, oracle];
    await grpc.close();
  }
}

describe('through a network that resets connections', () => {
  // Every connection between client and server is reset every 0.2–1.2 s while the crawl and the
  // pipeline run: requests the server applied lose their replies, commit points included.
  it('the index equals the batch recomputation', async () => {
    const server = await serveOnFreePorts(`file:${tempDir()}`);
    const proxies = await proxiesTo(server);
    const run: Run = { store: `bigtable://127.0.0.1:${proxies[0].port}`, docs: REMOTE_DOCS, keyMode: 'content' };
    const crawl: Crawl = { acked: new Map(), unsure: new Set() };
    let cuts = 0;
    try {
      let done = false;
      const finished = generation(
        run,
        0,
        null,
        crawl,
        Array.from({ length: run.docs }, (_, i) => i),
      );
      const stop = () => {
        done = true;
      };
      finished.then(stop, stop);
      // From the first fetch on: opening the store and creating its tables are not this test's subject.
      while (!done && crawl.unsure.size + crawl.acked.size === 0) await new Promise((r) => setTimeout(r, 5));
      while (!done) {
        await new Promise((r) => setTimeout(r, 200 + Math.random() * 1_000));
        for (const p of proxies) cuts += p.cutAll();
      }
      const log = `${await finished}; ${cuts} connections cut`;
      expect(crawl.acked.size, log).toBe(run.docs);
      await expectIndexOf({ ...run, store: `bigtable://127.0.0.1:${server.port}` }, crawl, log);
    } finally {
      for (const p of proxies) await p.close();
      await server.close();
    }
  }, 240_000);
});
