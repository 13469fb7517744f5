/**
 * `percolator wait`'s advice after a QUIESCENCE_TIMEOUT follows from the backlog's two counts: a
 * shrinking one says wait, one that did not shrink says start a worker first.
 */
import { expect, it } from 'vitest';
import { timeoutAdvice } from './wait.js';

it('a backlog that shrank: a worker is working through it, wait longer', () => {
  expect(timeoutAdvice({ pending: 6, pendingAtStart: 10 }, 60)).toBe(
    'The backlog shrank while the wait went on: a worker is working through it; wait again, or longer (--timeout S, 60 s now)',
  );
});

it('a backlog that did not shrink: start a worker if none runs, else wait longer', () => {
  for (const [pending, pendingAtStart] of [
    [3, 3],
    [9, 4],
  ]) {
    expect(timeoutAdvice({ pending, pendingAtStart }, 0.5)).toBe(
      `The backlog did not shrink while the wait went on: if no worker runs for these columns, start one (percolator worker --observers FILE --store URL); if one does, wait again, or longer (--timeout S, 0.5 s now)`,
    );
  }
});

it('without a count from the start (none was pending before the last poll): both ways, as before', () => {
  expect(timeoutAdvice({ pending: 2, pendingAtStart: null }, 5)).toBe(
    'A worker may still be working through them: wait again, or longer (--timeout S, 5 s now); if none runs for these columns, start one (percolator worker --observers FILE --store URL)',
  );
});
