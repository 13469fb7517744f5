/**
 * What a checker's worker process (bank-worker.ts, notify-worker.ts) shares with its supervisor:
 * the IPC channel its messages go over, and the store it works on.
 *
 * Concurrency contract: `sendToSupervisor` resolves once the message is handed to the channel,
 * or at once when there is no channel any more (the supervisor gone, or a SIGKILL on the way):
 * a worker never waits on, or fails because of, a supervisor that stopped listening.
 */
import { openStore } from '../store/open-store.js';
import type { Store } from '../store/store.js';
import { IpcStore } from './ipc-store.js';

export function sendToSupervisor(m: object): Promise<void> {
  return new Promise((resolve) => {
    if (process.send === undefined || !process.connected) return resolve();
    try {
      process.send(m, undefined, {}, () => resolve());
    } catch {
      resolve();
    }
  });
}

/** Stores every process can open (a server) are opened directly; the others are the supervisor's, over IPC. */
export async function openWorkerStore(storeUrl: string): Promise<Store> {
  return storeUrl.startsWith('bigtable://') ? openStore(storeUrl) : new IpcStore(storeUrl);
}
