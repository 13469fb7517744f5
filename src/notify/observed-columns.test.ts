/**
 * The registry's listing of a table's observed columns (`columnsOf`, what `percolator notify`
 * checks a column against): those registered for the table and for every table (`*`), not another
 * table's, read from the store — so another process's registrations count.
 */
import { expect, it } from 'vitest';
import { openStore } from '../store/open-store.js';
import { ObservedColumns } from './observed-columns.js';

it("lists the table's observed columns and every table's, sorted, as the store holds them", async () => {
  const store = await openStore('memory:');
  try {
    const mine = new ObservedColumns(store);
    await mine.open(0);
    expect(await mine.columnsOf('docs')).toEqual([]);
    await mine.register('docs', 'raw:b', 'one');
    await mine.register('docs', 'raw:b', 'two'); // two observers of a column: listed once
    await mine.register('*', 'raw:a', 'everywhere');
    await mine.register('other', 'raw:c', 'elsewhere');
    // Another instance over the store, which registered nothing itself.
    const theirs = new ObservedColumns(store);
    expect(await theirs.columnsOf('docs')).toEqual(['raw:a', 'raw:b']);
    expect(await theirs.columnsOf('other')).toEqual(['raw:a', 'raw:c']);
    expect(await theirs.columnsOf('none')).toEqual(['raw:a']);
    await mine.close();
  } finally {
    await store.close();
  }
});
