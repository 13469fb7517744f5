/**
 * `percolator demo` — what `npm start` runs. Until the web-index application lands, it is a store
 * demo on real data: it loads the README/Markdown files found under node_modules into a durable
 * `file:` store, reads every one back and verifies it byte for byte, then shows a scan, a filtered
 * query, an atomic counter and the tablet layout.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Command } from 'commander';
import { isStoreError } from '../../store/errors.js';
import { DEFAULT_STORE_URL, openStore } from '../../store/open-store.js';
import type { Mutation } from '../../store/types.js';
import { parsePositiveNumber, printResult } from '../parent-command.js';

function findDocs(root: string, limit: number): string[] {
  const out: string[] = [];
  const walk = (dir: string, depth: number): void => {
    if (out.length >= limit || depth > 6) return;
    let names: string[];
    try {
      names = readdirSync(dir).sort();
    } catch {
      return;
    }
    for (const name of names) {
      if (out.length >= limit) return;
      const p = join(dir, name);
      let st: ReturnType<typeof statSync>;
      try {
        st = statSync(p);
      } catch {
        continue;
      }
      if (st.isDirectory()) walk(p, depth + 1);
      else if (/\.(md|markdown|html?)$/i.test(name) && st.size > 0 && st.size < 1_000_000) out.push(p);
    }
  };
  walk(root, 0);
  return out;
}

export function register(program: Command): void {
  program
    .command('demo')
    .description('load real documents into the embedded store, read them back and query them')
    .option('--data <dir>', 'data directory', DEFAULT_STORE_URL.slice('file:'.length))
    .option('--docs <n>', 'documents to load', parsePositiveNumber('docs'), 2000)
    .option('--json', 'print one JSON object')
    .action(async (opts: { data: string; docs: number; json?: boolean }) => {
      const root = join(process.cwd(), 'node_modules');
      const files = findDocs(root, opts.docs);
      const store = await openStore(`file:${opts.data}`);
      try {
        try {
          await store.createTable('docs', {
            families: { content: {}, meta: { gcRule: { maxNumVersions: 3 }, localityGroup: 'meta' } },
          });
        } catch (e) {
          if (!isStoreError(e, 'TABLE_EXISTS')) throw e;
        }
        const t0 = performance.now();
        const entries = files.map((f) => {
          const body = readFileSync(f);
          const title = /^#\s+(.+)$/m.exec(body.toString('utf8'))?.[1]?.trim() ?? '';
          const mutations: Mutation[] = [
            { setCell: { familyName: 'content', columnQualifier: Buffer.from('body'), timestampMicros: -1, value: body } },
            { setCell: { familyName: 'meta', columnQualifier: Buffer.from('title'), timestampMicros: -1, value: Buffer.from(title) } },
            { setCell: { familyName: 'meta', columnQualifier: Buffer.from('bytes'), timestampMicros: -1, value: Buffer.from(String(body.length)) } },
          ];
          return { key: Buffer.from(relative(root, f)), mutations };
        });
        let failed = 0;
        for (let i = 0; i < entries.length; i += 200) {
          for (const r of await store.mutateRows('docs', entries.slice(i, i + 200))) if (r.error) failed++;
        }
        const loadMs = performance.now() - t0;
        let verified = 0;
        let mismatched = 0;
        for (const e of entries) {
          const row = await store.readRow('docs', e.key, { familyNameRegexFilter: 'content' });
          const want = (e.mutations[0] as { setCell: { value: Uint8Array } }).setCell.value;
          if (row && Buffer.compare(row.cells[0]?.value ?? new Uint8Array(), want) === 0) verified++;
          else mismatched++;
        }
        let licenses = 0;
        for await (const _ of store.readRows('docs', { filter: { chain: [{ familyNameRegexFilter: 'content' }, { valueRegexFilter: '(?s).*Permission is hereby granted.*' }, { stripValueTransformer: true }] } })) {
          licenses++;
        }
        const titles: string[] = [];
        for await (const row of store.readRows('docs', { rows: { rowRanges: [{ startKeyClosed: Buffer.from('re2/') }] }, rowsLimit: 3, filter: { columnRangeFilter: { familyName: 'meta', startQualifierClosed: Buffer.from('title'), endQualifierClosed: Buffer.from('title') } } })) {
          titles.push(`${Buffer.from(row.key).toString()}: ${Buffer.from(row.cells[0]?.value ?? []).toString()}`);
        }
        const runs = await store.readModifyWriteRow('docs', Buffer.from('~demo-runs'), [{ familyName: 'meta', columnQualifier: Buffer.from('runs'), incrementAmount: 1n }]);
        const runCount = Buffer.from(runs.cells[0]?.value ?? Buffer.alloc(8)).readBigInt64BE(0);
        const result = {
          store: store.url,
          documents: files.length,
          failedWrites: failed,
          loadDocumentsPerSecond: Math.round(files.length / (loadMs / 1000)),
          verified,
          mismatched,
          documentsWithMitLicenseText: licenses,
          exampleTitles: titles,
          demoRuns: Number(runCount),
          tablets: (await store.sampleRowKeys('docs')).length,
        };
        printResult(result, opts.json === true);
        if (mismatched > 0 || failed > 0) process.exitCode = 1;
      } finally {
        await store.close();
      }
    });
}
