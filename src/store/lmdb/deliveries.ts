import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Deliveries, DeliveryWrite, UndeliveredBatch, UndeliveredKey } from '../backend.js';
import { ownerGone } from '../owners.js';
import {
  DELIVERY_DIR,
  DeliveryFile,
  claimDeliveryFile,
  deliveryFileName,
  listDeliveryFiles,
  readDeliveryFile,
} from './delivery-files.js';

/** This process's delivery files, by path: the ones its runs write (delivery-files.ts). */
export type DeliveryFiles = Map<string, DeliveryFile>;

/**
 * A directory store's undelivered batches: one file per run (delivery-files.ts, docs/format.md),
 * written by the add that records a batch inside its write transaction, before the journal frame
 * that makes the batch recorded; claimed by a later run by renaming the file of a run that is gone.
 */
export class LmdbDeliveries implements Deliveries {
  readonly #dir: string;
  readonly #scope: string;
  readonly #files: DeliveryFiles;

  constructor(storeDir: string, scope: string, files: DeliveryFiles) {
    this.#dir = storeDir;
    this.#scope = scope;
    this.#files = files;
  }

  async claim(owner: string, firstSeq: number): Promise<UndeliveredBatch[]> {
    const claimed: UndeliveredBatch[] = [];
    let seq = firstSeq;
    let n = 0;
    for (const file of listDeliveryFiles(this.#dir, this.#scope)) {
      if (!ownerGone(file.owner)) continue;
      // The rename is the claim: of two runs, one moves the file; the other finds it gone.
      let name: string;
      do name = deliveryFileName(this.#scope, owner, ++n);
      while (listDeliveryFiles(this.#dir, this.#scope).some((other) => other.name === name));
      if (!claimDeliveryFile(this.#dir, file.name, name)) continue;
      const path = join(this.#dir, DELIVERY_DIR, name);
      const batches = readDeliveryFile(path).batches.map((batch) => ({ owner, seq: seq++, lines: batch.lines }));
      // Copied into this run's own file before the claimed one goes: one of them holds them always.
      const own = openOwnFile(this.#files, this.#dir, this.#scope, owner);
      for (const batch of batches) own.append([], batch);
      rmSync(path, { force: true });
      claimed.push(...batches);
    }
    return claimed;
  }

  async keep(batch: UndeliveredBatch): Promise<void> {
    openOwnFile(this.#files, this.#dir, this.#scope, batch.owner).append([], batch);
  }

  async release(keys: readonly UndeliveredKey[]): Promise<boolean> {
    const byOwner = new Map<string, number[]>();
    for (const { owner, seq } of keys) byOwner.set(owner, [...(byOwner.get(owner) ?? []), seq]);
    for (const [owner, seqs] of byOwner) {
      const path = ownPath(this.#dir, this.#scope, owner);
      const file = this.#files.get(path);
      if (file === undefined) continue;
      file.append(seqs, undefined);
      if (file.closeIfEmpty()) this.#files.delete(path);
    }
    return true;
  }
}

/**
 * Inside an add's write transaction, once its answers are known: appends the batch's new URLs to
 * its run's file, and names the run's batches delivered since (epoch.ts).
 */
export function keepUndelivered(
  files: DeliveryFiles,
  storeDir: string,
  scope: string,
  deliver: DeliveryWrite,
  answers: readonly boolean[],
): void {
  const lines = deliver.lines(answers);
  openOwnFile(files, storeDir, scope, deliver.owner).append(deliver.delivered, { seq: deliver.seq, lines });
}

function ownPath(storeDir: string, scope: string, owner: string): string {
  return join(storeDir, DELIVERY_DIR, deliveryFileName(scope, owner, 0));
}

function openOwnFile(files: DeliveryFiles, storeDir: string, scope: string, owner: string): DeliveryFile {
  const path = ownPath(storeDir, scope, owner);
  let file = files.get(path);
  if (file === undefined) {
    file = new DeliveryFile(path);
    files.set(path, file);
  }
  return file;
}
